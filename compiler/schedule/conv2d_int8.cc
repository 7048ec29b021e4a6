// Direct 2-D convolution of 8-bit integers into int32 sums, for the integer convs of quantized
// models (kDataZeroPointAttr): each step is one te::DotU8S8, on x86 AVX-512 VNNI one vpdpbusd
// (on aarch64 with i8mm one usdot), which multiplies four unsigned bytes of the data by four
// signed bytes of the weights and adds the four products to each int32 lane. Where the target
// multiplies only signed bytes (aarch64 dotprod: sdot) the entry asks for te::DotS8S8 over the
// data less 128 (Int8DataOffset), whose 128 * sum(w) PackConvWeights folds into the bias.
//
// Per image the data is copied once into a workspace of [ICp/4][PH][PW][4] bytes, the unsigned
// data (int8 data + 128) less the offset (so the flip to signed costs nothing per dot), padded
// with the zero point in that form, so that one int32 load is one pixel's four input channels,
// broadcast to every lane. The weights, packed at compile time by
// PackConvWeights as [OCp/16][ICp/4][KH][KW][16][4] int8, are one vector per 16 output channels
// and step. The register tile is ow_block output columns of one row times one or two vectors of
// 16 output channels; the packed bias, which also carries the zero point's compensation
// (-zu * sum(w)), is added in registers and the exact int32 sums land in a blocked workspace
// [OCp/16][OH][OW][16]. The group's epilogue (a QLinearConv's requantization: scale in float,
// round half to even, zero point, saturation) then writes the NCHW output one output channel per
// task. Where the layout pass made the output NCHW16c (the output channels fill the vectors) no
// workspace is needed: each finished vector of sums is requantized in registers and stored in
// place. The data may be NCHW or blocked (PackInt8Data reads either). Sums stay exact in int32:
// Conv2dInt8Applies bounds the taps.
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/weight_layout.h>
#include <ember/compiler/ir/window_attrs.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conv2d_int8_pixels.h"
#include "conv_group.h"
#include "epilogue.h"
#include "int8_conv_data.h"
#include "loop_builders.h"
#include "schedule.h"

namespace ember::compiler::schedule {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::ForKind;
using lower::Stmt;
using te::Expr;

constexpr int64_t kDotDepth = kInt8DotDepth;
// Plane positions the requantization pass takes per block of channels: 16 KB of int32 sums.
constexpr int64_t kEpilogueChunk = 256;

struct Tile {
  const Int8Conv& m;
  int64_t lanes, vectors, quads, ph, pw;
  const Conv2dInt8Params& p;    // the entry: which dot each step is (Int8ConvDot)
  Buffer xq32, w32, bias, acc;  // acc: [OCp/lanes][OH][OW][lanes] int32
  Buffer x32;                   // non-null: the data read in place (ReadsDataInPlace), not xq32
  Buffer zp, wsum;              // a run-time zero point and the weight sums, or null
  int64_t oh_total, ow_total;
  lower::LoweredFunc* f;
  // With a blocked output whose epilogue vectorizes: the epilogue, applied to each finished
  // vector of sums before its one store into the output (acc then unused), and the image.
  const EpilogueAt* at_in_registers;
  Expr n;
};

// `width` columns from ow0 of output row oh, output channels of vector block ob (vectors of
// lanes channels each).
Stmt MakeTile(const Tile& t, const std::string& tag, const Expr& ob, const Expr& oh,
              const Expr& ow0, int64_t width) {
  const Int8Conv& m = t.m;
  Expr c4 = te::MakeVar("c4"), kh = te::MakeVar("kh"), kw = te::MakeVar("kw");
  Expr khe = m.kh > 1 ? kh : Expr(0), kwe = m.kw > 1 ? kw : Expr(0);
  Expr y = oh * m.s_h + khe * m.d_h;
  std::vector<Stmt> init, update, store;
  for (int64_t r = 0; r < width; ++r) {
    Expr col = (ow0 + r) * m.s_w + kwe * m.d_w;
    Expr word = t.x32 ? BufferLoad(t.x32, InPlaceWord(m, t.n, c4, y, col))
                      : BufferLoad(t.xq32, (c4 * t.ph + y) * t.pw + col);
    Expr x = te::Broadcast(word, static_cast<int>(t.lanes));
    for (int64_t v = 0; v < t.vectors; ++v) {
      Buffer a = lower::NewBuffer("acc" + tag + std::to_string(r) + "_" + std::to_string(v),
                                  te::WithLanes(te::Int(32), static_cast<int>(t.lanes)), 1,
                                  lower::BufferScope::kLocal);
      t.f->locals.push_back(a);
      Expr block = ob * t.vectors + v;
      Expr w =
          lower::VectorLoad(t.w32, (((block * t.quads + c4) * m.kh + khe) * m.kw + kwe) * t.lanes,
                            static_cast<int>(t.lanes));
      // The sums start from the bias (int32: the order of the additions cannot change them),
      // one add fewer per vector in the epilogue.
      init.push_back(lower::Store(
          a, 0, KernelBias(m, t.bias, t.zp, t.wsum, block * t.lanes, static_cast<int>(t.lanes))));
      update.push_back(lower::Store(a, 0, Int8ConvDot(t.p, BufferLoad(a, 0), x, w)));
      Expr sum = BufferLoad(a, 0);
      Expr pixel = (block * t.oh_total + oh) * t.ow_total + ow0 + r;
      if (t.at_in_registers != nullptr) {
        const int64_t image = t.oh_total * t.ow_total * m.oc;  // elements of one image's output
        store.push_back(
            lower::Store(t.f->args.back().buffer, t.n * image + pixel * t.lanes,
                         EpilogueOnBlockVector(*t.at_in_registers, t.n, block, oh, ow0 + r, sum,
                                               static_cast<int>(t.lanes))));
      } else {
        store.push_back(lower::Store(t.acc, pixel * t.lanes, sum));
      }
    }
  }
  Stmt red = lower::Seq(update);
  red = lower::KeepScalarFor(kw, m.kw, red);
  red = lower::KeepScalarFor(kh, m.kh, red);
  red = lower::KeepScalarFor(c4, t.quads, red);
  std::vector<Stmt> tile = init;
  tile.push_back(red);
  tile.insert(tile.end(), store.begin(), store.end());
  return lower::Seq(tile);
}

// Whether `fits(a, b)` holds for every pair of weights whose products a dot step sums in int16
// first: input channels i and i + distance of one quad (i / distance even) at one output channel
// and tap, a weight past the channels being 0.
bool EveryWeightPair(const Value& weight, int64_t distance, bool (*fits)(int a, int b)) {
  if (weight.type.dtype != kInt8) return false;
  const std::vector<int64_t>& ws = weight.type.shape;
  const int64_t ic = ws[1], taps = ws[2] * ws[3];
  const int8_t* w = weight.constant->Data<int8_t>();
  for (int64_t o = 0; o < ws[0]; ++o) {
    for (int64_t i = 0; i < ic; ++i) {
      if ((i / distance) % 2 != 0) continue;
      for (int64_t t = 0; t < taps; ++t) {
        const int a = w[(o * ic + i) * taps + t];
        const int b = i + distance < ic ? w[(o * ic + i + distance) * taps + t] : 0;
        if (!fits(a, b)) return false;
      }
    }
  }
  return true;
}

// A saturating pair step (te::DotU8S8Pairs) sums input channels 2k and 2k + 1 times data bytes of
// 0..255: within int16 where the pair's positive weights add up to at most 128 (255 * 128 <=
// 32767) and its negative ones to at least -128.
bool PairsFitInt16(const Value& weight) {
  return EveryWeightPair(weight, 1, [](int a, int b) {
    return std::max(a, 0) + std::max(b, 0) <= 128 && std::min(a, 0) + std::min(b, 0) >= -128;
  });
}

// te::DotS8S8Halves sums input channels 4q + k and 4q + k + 2 (k < 2) times signed data bytes:
// only two weights of -128 (two products of 16384) leave int16.
bool HalvesPairsFitInt16(const Value& weight) {
  return EveryWeightPair(weight, 2, [](int a, int b) { return a != -128 || b != -128; });
}

// Pixels in the lanes write NCHW rows; channels in the lanes NCHW or their own block.
bool WritesLayout(const Int8Conv& m, const Conv2dInt8Params& p) {
  return m.out_block == 0 || (p.pixel_vectors == 0 && m.out_block == p.lanes);
}

// The epilogue, one output channel per task: its rows of the blocked sums `acc` in, NCHW out;
// over the flat plane when the epilogue allows, so that narrow rows (14, 7) still fill vectors.
Stmt NchwEpilogue(const Int8Conv& m, int64_t oh, int64_t ow, const Conv2dInt8Params& p,
                  const Buffer& acc, const EpilogueAt& at, const lower::LoweredFunc& f,
                  const Expr& n, const lower::ScheduleOptions& opts) {
  Expr c = te::MakeVar("c"), y = te::MakeVar("y"), x = te::MakeVar("x");
  auto sum_at = [&](const Expr& row, const Expr& col) {
    return BufferLoad(acc, ((te::FloorDiv(c, Expr(p.lanes)) * oh + row) * ow + col) * p.lanes +
                               te::FloorMod(c, Expr(p.lanes)));
  };
  Stmt ep;
  if (EpilogueReadsPlaneFlat(at, ow)) {
    Expr q = te::MakeVar("q");
    ep = lower::Store(f.args.back().buffer, (n * m.oc + c) * oh * ow + q,
                      at({n, c, Expr(0), q}, sum_at(Expr(0), q)));
    ep = lower::For(q, oh * ow, ForKind::kVectorized, ep);
  } else {
    ep = lower::Store(f.args.back().buffer, ((n * m.oc + c) * oh + y) * ow + x,
                      at({n, c, y, x}, sum_at(y, x)));
    ep = lower::For(x, ow, ForKind::kVectorized, ep);
    ep = lower::For(y, oh, ForKind::kSerial, ep);
  }
  const bool par = opts.parallel && m.oc > 1 && m.oc * oh * ow >= opts.parallel_min_work;
  if (EpilogueReadsPlaneFlat(at, ow) && m.oc % p.lanes == 0) {
    // A block's channels in turn over chunks of the plane, so that the chunk's sums (a cache line
    // holds 16 channels' sums) are read from L1 by each channel instead of once per channel from
    // L2.
    const int64_t plane = oh * ow, chunks = plane / kEpilogueChunk, rest = plane % kEpilogueChunk;
    Expr cb = te::MakeVar("cb"), l = te::MakeVar("l");
    Expr ch = cb * p.lanes + l;
    auto chunk = [&](const Expr& q0, int64_t width) {
      Expr q = te::MakeVar("q");
      Stmt st = lower::Store(
          f.args.back().buffer, (n * m.oc + ch) * plane + q0 + q,
          at({n, ch, Expr(0), q0 + q}, BufferLoad(acc, (cb * plane + q0 + q) * p.lanes + l)));
      st = lower::For(q, width, ForKind::kVectorized, st);
      return lower::For(l, p.lanes, ForKind::kSerial, st);
    };
    Stmt body =
        SeqOf({Range("qc", 0, chunks, ForKind::kSerial,
                     [&](const Expr& qc) { return chunk(qc * kEpilogueChunk, kEpilogueChunk); }),
               rest > 0 ? chunk(Expr(chunks * kEpilogueChunk), rest) : Stmt()});
    return lower::For(cb, m.oc / p.lanes, par ? ForKind::kParallel : ForKind::kSerial, body);
  }
  return lower::For(c, m.oc, par ? ForKind::kParallel : ForKind::kSerial, ep);
}

// The epilogue for a blocked output that does not vectorize by channel block (where it does, the
// tiles apply it in registers), one block of channels per task: the sums `acc` are in its layout
// already (ocp == oc, as the block divides the channels).
Stmt BlockedEpilogue(const Int8Conv& m, int64_t oh, int64_t ow, int64_t lanes, const Buffer& acc,
                     const EpilogueAt& at, const lower::LoweredFunc& f, const Expr& n,
                     const lower::ScheduleOptions& opts) {
  const int64_t blocks = m.oc / lanes;
  Expr cb = te::MakeVar("cb"), y = te::MakeVar("y"), x = te::MakeVar("x"), l = te::MakeVar("l");
  Expr pixel = (cb * oh + y) * ow + x;  // in image n's sums and output alike
  Stmt ep = lower::Store(f.args.back().buffer, (n * blocks * oh * ow + pixel) * lanes + l,
                         at({n, cb, y, x, l}, BufferLoad(acc, pixel * lanes + l)));
  ep = lower::For(l, lanes, ForKind::kVectorized, ep);
  ep = lower::For(x, ow, ForKind::kSerial, ep);
  ep = lower::For(y, oh, ForKind::kSerial, ep);
  const bool par = opts.parallel && blocks > 1 && m.oc * oh * ow >= opts.parallel_min_work;
  return lower::For(cb, blocks, par ? ForKind::kParallel : ForKind::kSerial, ep);
}

}  // namespace

bool Conv2dInt8Applies(const Graph& g, const Node& conv, const Conv2dInt8Params& p) {
  Int8Conv m;
  if (p.lanes <= 0 || !ReadInt8Conv(g, conv, false, &m) || !WritesLayout(m, p)) return false;
  if (p.saturating_pairs && !PairsFitInt16(g.value(conv.inputs[1]))) return false;
  if (Int8WeightHalves(p) && !HalvesPairsFitInt16(g.value(conv.inputs[1]))) return false;
  if (conv.HasInput(2)) {
    const Value& b = g.value(conv.inputs[2]);
    if (!b.is_constant() || b.type.dtype != kInt32 || b.type.NumElements() != m.oc) return false;
  }
  const int64_t ph = m.h + 2 * m.pad_t + (m.kh - 1) * m.d_h + 1;
  const int64_t pw = m.w + 2 * m.pad_l + (m.kw - 1) * m.d_w + 1;
  return RoundUp(m.c, kDotDepth) * ph * pw <= kMaxPaddedBytes;
}

bool Conv2dInt8Pays(const Graph& g, const Node& conv, const Conv2dInt8Params& p) {
  Int8Conv m;
  if (p.pixel_vectors <= 0 || !ReadInt8Conv(g, conv, false, &m)) return true;
  return Conv2dInt8PixelsPays(m, OutputRows(m), OutputCols(m), p);
}

bool TryConv2dInt8(const FusedGroup& group, const lower::ScheduleOptions& opts,
                   const Conv2dInt8Params& p, lower::LoweredFunc* out) {
  if (p.pixel_vectors > 0) return TryConv2dInt8Pixels(group, opts, p, out);
  Int8ConvGroup ig;
  if (!ReadInt8ConvGroup(group, p, &ig) || !WritesLayout(ig.m, p)) return false;
  const Int8Conv& m = ig.m;
  const int64_t oh = ig.oh, ow = ig.ow, ocp = ig.ocp, quads = ig.quads;
  lower::LoweredFunc& f = ig.f;
  const EpilogueAt& at = ig.at;
  const int64_t ph = PaddedRows(m, oh), pw = PaddedCols(m, ow);
  // A blocked, unpadded input (MobileNet's 1x1 convs) is read where it is: no copy, no launch.
  const bool in_place = ReadsDataInPlace(m, Int8DataOffset(p));
  const Int8ConvViews v = AddInt8ConvViews(&ig, in_place ? 0 : quads * ph * pw);
  const bool in_registers =
      m.out_block != 0 && EpilogueVectorizes(at, static_cast<int>(p.lanes), te::Int(32));
  Buffer acc;
  if (!in_registers) {
    acc = lower::NewBuffer(ig.conv->name + "_acc_ws", te::Int(32), ocp * oh * ow,
                           lower::BufferScope::kWorkspace);
    f.workspaces.push_back(acc);
  }

  const int64_t vectors = ocp % (p.lanes * p.oc_vectors) == 0 ? p.oc_vectors : 1;
  const int64_t owb = ChooseOwBlock(ow, p.ow_block * p.oc_vectors / vectors);
  const int64_t full = ow / owb, tail = ow % owb, blocks = ocp / (p.lanes * vectors);
  Expr n = te::MakeVar("n");
  Tile t{m,     p.lanes, vectors, quads,   ph,  pw,
         p,     v.xq32,  v.w32,   ig.bias, acc, in_place ? v.x32 : Buffer(),
         ig.zp, ig.wsum, oh,      ow,      &f,  in_registers ? &at : nullptr,
         n};

  std::vector<Stmt> image;
  if (!in_place) {
    image.push_back(PackInt8Data(m, ig.x, ZeroPointByte(m, ig.zp), Int8DataOffset(p), v, n,
                                 Int8DataLayout{ph, pw}, opts));
  }
  const int64_t work_per_tile = owb * p.lanes * vectors * quads * kDotDepth * m.kh * m.kw;
  auto grid = [&](const std::string& tag, int64_t per_row, int64_t width, int64_t ow0) {
    const int64_t tiles = blocks * oh * per_row;
    Expr ti = te::MakeVar("t");
    Expr ob = te::FloorDiv(ti, Expr(oh * per_row));
    Expr rest = te::FloorMod(ti, Expr(oh * per_row));
    Expr row = per_row > 1 ? te::FloorDiv(rest, Expr(per_row)) : rest;
    Expr col = per_row > 1 ? te::FloorMod(rest, Expr(per_row)) * width + ow0 : Expr(ow0);
    const bool par = opts.parallel && tiles > 1 && tiles * work_per_tile >= opts.parallel_min_work;
    return lower::For(ti, tiles, par ? ForKind::kParallel : ForKind::kSerial,
                      MakeTile(t, tag, ob, row, col, width));
  };
  image.push_back(grid("m", full, owb, 0));
  if (tail > 0) image.push_back(grid("t", 1, tail, full * owb));

  if (m.out_block == 0) {
    image.push_back(NchwEpilogue(m, oh, ow, p, acc, at, f, n, opts));
  } else if (!in_registers) {
    image.push_back(BlockedEpilogue(m, oh, ow, p.lanes, acc, at, f, n, opts));
  }
  f.body = lower::For(n, m.n, ForKind::kSerial, lower::Seq(image));
  f.prefer_vector_bits = static_cast<int>(p.lanes * 32);
  *out = std::move(ig.f);
  return true;
}

}  // namespace ember::compiler::schedule
