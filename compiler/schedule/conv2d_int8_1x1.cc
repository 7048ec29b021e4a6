// The 1x1 (stride 1, unpadded) integer conv with output pixels in the vector lanes: MobileNet's
// pointwise convs, most of a quantized MobileNet's work.
//
// With output channels in the lanes (conv2d_int8.cc) the int32 sums come out channel-interleaved
// and need a pass through a blocked workspace to become NCHW rows; with pixels in the lanes a
// register holds consecutive positions of one output channel's plane, which is what the NCHW
// output wants. Per image the data is copied once into [ICp/4][H*W][4] bytes (int8 data + 128:
// PackInt8Data without padding), so that one vector load is `lanes` consecutive pixels' four
// input channels. The weights, packed at compile time one channel at a time ([OC][ICp/4][4] int8,
// PackConvWeights with block 1), are one broadcast int32 per channel and step. A tile is
// `pixel_vectors` vectors of pixels times `rows` output channels of accumulators, started at the
// packed bias (which carries the zero point's compensation); each step is one te::DotU8S8 (or
// te::DotU8S8Pairs, or te::DotS8S8 over the data less 128: Int8ConvDot) per accumulator. The tile's
// sums go to a small buffer on the stack, from which the group's epilogue (the requantization)
// writes each channel's row of pixels with contiguous loads and stores. The plane's last partial
// tile computes whole vectors (its loads run into one spare vector at the end of the workspace) and
// stores only its pixels.
#include "conv2d_int8_1x1.h"

#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/weight_layout.h>

#include <string>
#include <vector>

#include "conv_group.h"
#include "epilogue.h"
#include "loop_builders.h"

namespace ember::compiler::schedule {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::ForKind;
using lower::Stmt;
using te::Expr;

constexpr int64_t kDotDepth = kInt8DotDepth;

// The largest divisor of oc not above most (the output channels of one tile).
int64_t ChannelRows(int64_t oc, int64_t most) {
  for (int64_t r = std::min(oc, most); r > 1; --r) {
    if (oc % r == 0) return r;
  }
  return 1;
}

struct PixelTile {
  const Int8Conv& m;
  const Conv2dInt8Params& p;
  int64_t quads, plane, rows;
  Buffer xq32, w32, bias, out;
  Buffer zp, wsum;  // a run-time zero point and the weight sums, or null
  const EpilogueAt& at;
  bool flat;  // the epilogue reads the plane flat (EpilogueReadsPlaneFlat)
  lower::LoweredFunc* f;
};

// Output channels cb * rows ... + rows - 1 at plane positions q0 .. q0 + width - 1 of image n,
// computed as `vectors` whole vectors of pixels.
Stmt MakePixelTile(const PixelTile& t, const std::string& tag, const Expr& n, const Expr& cb,
                   const Expr& q0, int64_t vectors, int64_t width) {
  const int lanes = static_cast<int>(t.p.lanes);
  const te::DataType acc_type = te::WithLanes(te::Int(32), lanes);
  Buffer sums = lower::NewBuffer(t.f->name + "_tile" + tag, te::Int(32), t.rows * vectors * lanes,
                                 lower::BufferScope::kLocal);
  t.f->locals.push_back(sums);
  Expr c4 = te::MakeVar("c4");
  std::vector<Stmt> init, update, spill, epilogue;
  for (int64_t r = 0; r < t.rows; ++r) {
    Expr oc = cb * t.rows + r;
    Expr w = te::Broadcast(BufferLoad(t.w32, oc * t.quads + c4), lanes);
    for (int64_t v = 0; v < vectors; ++v) {
      Buffer a = lower::NewBuffer("acc" + tag + std::to_string(r) + "_" + std::to_string(v),
                                  acc_type, 1, lower::BufferScope::kLocal);
      t.f->locals.push_back(a);
      init.push_back(
          lower::Store(a, 0, te::Broadcast(KernelBias(t.m, t.bias, t.zp, t.wsum, oc, 1), lanes)));
      Expr x = lower::VectorLoad(t.xq32, c4 * t.plane + q0 + v * lanes, lanes);
      update.push_back(lower::Store(a, 0, Int8ConvDot(t.p, BufferLoad(a, 0), x, w)));
      spill.push_back(lower::Store(sums, (r * vectors + v) * lanes, BufferLoad(a, 0)));
    }
    // The channel's row: contiguous sums in, contiguous outputs out, vectors of exactly `lanes`
    // (a partial tile's in overlapping steps).
    auto row = [&](const Expr& q) {
      Expr pos = q0 + q;
      std::vector<Expr> index = {n, oc, Expr(0), pos};
      if (!t.flat) {
        index = {n, oc, te::FloorDiv(pos, Expr(t.m.w)), te::FloorMod(pos, Expr(t.m.w))};
      }
      return lower::Store(t.out, (n * t.m.oc + oc) * t.plane + pos,
                          t.at(index, BufferLoad(sums, r * vectors * lanes + q)));
    };
    epilogue.push_back(width % lanes == 0 ? VectorizedFor("q", width, lanes, row)
                                          : VectorSteps("q", 0, width, lanes, row));
  }
  std::vector<Stmt> tile = init;
  tile.push_back(lower::KeepScalarFor(c4, t.quads, lower::Seq(update)));
  tile.insert(tile.end(), spill.begin(), spill.end());
  tile.insert(tile.end(), epilogue.begin(), epilogue.end());
  return lower::Seq(tile);
}

}  // namespace

bool Conv2dInt8PixelsTakes(const Int8Conv& m) {
  return m.kh == 1 && m.kw == 1 && m.s_h == 1 && m.s_w == 1 && m.pad_t == 0 && m.pad_l == 0 &&
         m.pad_b == 0 && m.pad_r == 0;
}

bool TryConv2dInt8Pixels(const FusedGroup& group, const lower::ScheduleOptions& opts,
                         const Conv2dInt8Params& p, lower::LoweredFunc* out) {
  Int8ConvGroup ig;
  if (p.pixel_vectors <= 0 || p.channel_rows <= 0 || !ReadInt8ConvGroup(group, p, &ig) ||
      !Conv2dInt8PixelsTakes(ig.m) || ig.oh != ig.m.h || ig.ow != ig.m.w) {
    return false;
  }
  const Int8Conv& m = ig.m;
  const int64_t quads = ig.quads, plane = m.h * m.w;
  const int64_t lanes = p.lanes, per_tile = p.pixel_vectors * lanes;
  // One spare vector of pixels past the last quad: the partial tile's loads.
  const Int8ConvViews v = AddInt8ConvViews(&ig, quads * plane + lanes);
  lower::LoweredFunc& f = ig.f;

  const int64_t rows = ChannelRows(m.oc, p.channel_rows), blocks = m.oc / rows;
  const int64_t full = plane / per_tile, rest = plane % per_tile;
  PixelTile t{m,
              p,
              quads,
              plane,
              rows,
              v.xq32,
              v.w32,
              ig.bias,
              f.args.back().buffer,
              ig.zp,
              ig.wsum,
              ig.at,
              EpilogueReadsPlaneFlat(ig.at, m.w),
              &f};

  Expr n = te::MakeVar("n");
  std::vector<Stmt> image{
      PackInt8Data(m, ig.x, ZeroPointByte(m, ig.zp), Int8DataOffset(p), v.xq, n, m.h, m.w, opts)};
  const int64_t work_per_tile = per_tile * rows * quads * kDotDepth;
  if (full > 0) {
    Expr ti = te::MakeVar("t");
    const int64_t tiles = blocks * full;
    const bool par = opts.parallel && tiles > 1 && tiles * work_per_tile >= opts.parallel_min_work;
    Stmt body = MakePixelTile(t, "m", n, te::FloorDiv(ti, Expr(full)),
                              te::FloorMod(ti, Expr(full)) * per_tile, p.pixel_vectors, per_tile);
    image.push_back(lower::For(ti, tiles, par ? ForKind::kParallel : ForKind::kSerial, body));
  }
  if (rest > 0) {
    Expr cb = te::MakeVar("cb");
    const bool par =
        opts.parallel && blocks > 1 && blocks * work_per_tile >= opts.parallel_min_work;
    Stmt body =
        MakePixelTile(t, "t", n, cb, Expr(full * per_tile), (rest + lanes - 1) / lanes, rest);
    image.push_back(lower::For(cb, blocks, par ? ForKind::kParallel : ForKind::kSerial, body));
  }
  f.body = lower::For(n, m.n, ForKind::kSerial, lower::Seq(image));
  f.prefer_vector_bits = static_cast<int>(lanes * 32);
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
