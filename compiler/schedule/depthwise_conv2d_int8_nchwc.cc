// Depthwise 2-D convolution of 8-bit integers in NCHW[x]c, for the depthwise convs of quantized
// models between int8 kernels that write and read the blocked layout (AlterConvLayout): the x
// channels of a pixel are one vector, as in the float kernel (depthwise_conv2d_nchwc.cc), so a
// small plane (7 x 7, 14 x 14) fills the lanes as well as a large one.
//
// One task per (image, channel block, band of output rows). A band first copies the padded
// input rows it reads into a float32 plane on the stack ([rows][padded width][x], the data less
// its zero point, zero in the padding: small enough to stay in L1), one conversion per input
// pixel rather than per tap; then each output row runs in tiles of up to `columns` pixels whose
// accumulators stay in registers, every tap a contiguous vector load times the tap's weight
// vector (weights packed [C/x][KH][KW][x] at compile time, converted once per task). The sums are
// exact: every partial sum is an integer below 2^24 (DepthwiseConv2dInt8NchwcApplies bounds the
// taps), started from the bias where that keeps them so; the epilogue (the requantization) is
// applied to each pixel's int32 vector before its one store.
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/weight_layout.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conv_group.h"
#include "epilogue.h"
#include "int8_conv_operands.h"
#include "loop_builders.h"
#include "schedule.h"
#include "tuning.h"

namespace ember::compiler::schedule {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::ForKind;
using lower::Stmt;
using te::Expr;

// Bytes of the float plane a band copies: half a 48 KB L1.
constexpr int64_t kBandBytes = 24 << 10;
// Largest plane per task on the stack (a band of one output row of a very wide image).
constexpr int64_t kMaxPlaneBytes = 96 << 10;
// Vector registers beyond the taps' weights: the accumulators need one, plus a load and a
// temporary.
constexpr int64_t kWorkingRegisters = 3;

struct DwInt8Blocked {
  int64_t n, c, h, w, kh, kw, s_h, s_w, pad_t, pad_l, oh, ow, zp;
  int64_t pw = 0;         // padded columns the output columns read
  int64_t band = 0;       // output rows per band
  int64_t band_rows = 0;  // padded rows a band reads
};

// The conv's geometry in blocks of `lanes` channels (the node NCHW or already blocked so).
bool ReadDwInt8Blocked(const Graph& g, const Node& conv, int64_t lanes, DwInt8Blocked* m) {
  Int8ConvOperands ops;
  if (lanes < kMinLayoutBlock || !ReadInt8ConvOperands(g, conv, 4, &ops) ||
      ops.zero_point_input >= 0 || !ops.window.Undilated() ||
      (ops.in_block != 0 && ops.in_block != lanes) || ops.in_block != ops.out_block) {
    return false;
  }
  const std::vector<int64_t>& x = ops.data.shape;
  const std::vector<int64_t>& ws = ops.weight->type.shape;
  const WindowAttrs& win = ops.window;
  if (ws[0] != x[1] || ws[1] != 1 || win.group != x[1] || x[1] % lanes != 0) return false;
  if (conv.HasInput(2)) {
    const Value& b = g.value(conv.inputs[2]);
    if (!b.is_constant() || b.type.dtype != kInt32 || b.type.NumElements() != ws[0]) return false;
  }
  const int64_t kh = ws[2], kw = ws[3], s_h = win.strides[0], s_w = win.strides[1];
  const int64_t oh = (x[2] + win.pads[0] + win.pads[2] - kh) / s_h + 1;
  const int64_t ow = (x[3] + win.pads[1] + win.pads[3] - kw) / s_w + 1;
  *m = DwInt8Blocked{x[0],        x[1], x[2], x[3],          kh, kw, s_h, s_w, win.pads[0],
                     win.pads[1], oh,   ow,   ops.zero_point};
  if (m->oh <= 0 || m->ow <= 0 || m->kh * m->kw * kMaxInt8Product >= kExactFloat) return false;
  m->pw = (m->ow - 1) * m->s_w + m->kw;
  const int64_t row_bytes = m->pw * lanes * 4;
  const int64_t fit = std::max<int64_t>(1, (kBandBytes / row_bytes - m->kh) / m->s_h + 1);
  const int64_t bands = (m->oh + fit - 1) / fit;
  m->band = (m->oh + bands - 1) / bands;  // as even as they come
  m->band_rows = (m->band - 1) * m->s_h + m->kh;
  return m->band_rows * row_bytes <= kMaxPlaneBytes;
}

}  // namespace

bool DepthwiseConv2dInt8NchwcApplies(const Graph& g, const Node& conv,
                                     const DepthwiseInt8Params& p) {
  DwInt8Blocked m;
  return ReadDwInt8Blocked(g, conv, p.lanes, &m);
}

bool TryDepthwiseConv2dInt8Nchwc(const FusedGroup& group, const lower::ScheduleOptions& opts,
                                 const DepthwiseInt8Params& p, lower::LoweredFunc* out) {
  const Graph& g = *group.graph;
  const Node* conv = SingleConvOf(group);
  const int64_t lanes = p.lanes;
  DwInt8Blocked m;
  if (opts.target == nullptr || conv == nullptr || group.outputs.size() != 1 ||
      conv->GetString(kOutLayoutAttr, "NCHW") != LayoutName(lanes) ||
      conv->GetInt(kPackedWeightBlockAttr, 0) != lanes || !ReadDwInt8Blocked(g, *conv, lanes, &m)) {
    return false;
  }
  const TensorType& o = g.value(conv->outputs[0]).type;
  if (o.dtype != kInt32 || g.value(group.outputs[0]).type.shape != o.shape) return false;
  for (int v : conv->inputs) {
    if (v != kAbsentValue && !IsGroupInput(group, v)) return false;
  }
  // Output pixels per tile: the registers the taps' weights leave (more taps than registers,
  // a 7x7 conv: their weights come from the stack, one pixel at a time).
  const int64_t taps = m.kh * m.kw;
  const int64_t registers = VectorRegisters(ClassifyTarget(*opts.target));
  const int64_t columns = std::clamp<int64_t>(registers - taps - kWorkingRegisters, 1, 8);

  lower::LoweredFunc f;
  Buffer xb, wb;
  EpilogueAt at;
  AnchorOperands operands{conv->inputs[0], conv->inputs[1], -1, nullptr, te::Int(32)};
  if (!BuildEpilogueAt(group, *conv, operands, &f, &xb, &wb, &at)) return false;
  const int vl = static_cast<int>(lanes);
  const te::DataType fvec = te::WithLanes(te::Float(32), vl);
  const te::DataType ivec = te::WithLanes(te::Int(32), vl);
  if (!EpilogueVectorizes(at, vl, te::Int(32))) return false;
  Buffer bias;
  if (conv->HasInput(2)) {
    bias = GroupInputBuffer(group, f, conv->inputs[2]);
    if (!bias) return false;
  }
  // The sums start from the bias in float where every partial sum stays an exact integer.
  const bool bias_in_float =
      bias &&
      LargestMagnitude(*g.value(conv->inputs[2]).constant) + taps * kMaxInt8Product < kExactFloat;

  const int64_t blocks = m.c / lanes;
  const int64_t bands = (m.oh + m.band - 1) / m.band;
  Expr t = te::MakeVar("t");
  Expr band = te::FloorMod(t, Expr(bands));
  Expr cb = te::FloorMod(te::FloorDiv(t, Expr(bands)), Expr(blocks));
  Expr n = te::FloorDiv(t, Expr(bands * blocks));
  // The last band ends at the last row, overlapping the one before when the bands do not divide
  // the rows (a few rows computed twice, rather than a test in every row).
  Expr band_oy = bands == 1              ? Expr(0)
                 : bands * m.band > m.oh ? te::Min(band * m.band, Expr(m.oh - m.band))
                                         : band * m.band;

  Buffer plane = lower::NewBuffer(conv->name + "_blocked_plane", te::Float(32),
                                  m.band_rows * m.pw * lanes, lower::BufferScope::kLocal);
  f.locals.push_back(plane);
  std::vector<Stmt> task;

  // The band's padded rows into the plane: image pixels converted less the zero point, zeros
  // elsewhere, one vector of the block's channels per pixel.
  const Expr zero = te::Broadcast(F32(0), vl);
  auto pixel_in = [&](const Expr& y, const Expr& col) {
    Expr v = lower::VectorLoad(xb, (((n * blocks + cb) * m.h + y) * m.w + col) * lanes, vl);
    return te::Cast(fvec, te::Cast(ivec, v) - te::Broadcast(te::Const(te::Int(32), m.zp), vl));
  };
  auto store_plane = [&](const Expr& r, const Expr& j, const Expr& v) {
    return lower::Store(plane, (r * m.pw + j) * lanes, v);
  };
  const int64_t left = std::min(m.pad_l, m.pw), right = std::clamp(m.pad_l + m.w, left, m.pw);
  task.push_back(Range("r", 0, m.band_rows, ForKind::kSerial, [&](const Expr& r) {
    Expr y = band_oy * m.s_h + r - m.pad_t;
    auto zeros = [&](const std::string& name, int64_t begin, int64_t end) {
      return Range(name, begin, end, ForKind::kSerial,
                   [&](const Expr& j) { return store_plane(r, j, zero); });
    };
    Stmt image_row =
        SeqOf({zeros("jl", 0, left),
               Range("j", left, right, ForKind::kSerial,
                     [&](const Expr& j) { return store_plane(r, j, pixel_in(y, j - m.pad_l)); }),
               zeros("jr", right, m.pw)});
    return lower::If((y >= 0) && (y < m.h), image_row, zeros("jz", 0, m.pw));
  }));

  // The taps' weights, one vector each, and the bias, once per task.
  std::vector<Buffer> weights;
  for (int64_t k = 0; k < taps; ++k) {
    weights.push_back(NewVectorAccumulator("wvec" + std::to_string(k), lanes));
    f.locals.push_back(weights.back());
    Expr wv = lower::VectorLoad(wb, (cb * taps + k) * lanes, vl);
    task.push_back(lower::Store(weights.back(), 0, te::Cast(fvec, te::Cast(ivec, wv))));
  }
  Expr bias_vec;
  if (bias) bias_vec = lower::VectorLoad(bias, cb * lanes, vl);

  // `count` output pixels from column ox0 of output row oy (row oyb of the band).
  const Buffer& ob = f.args.back().buffer;
  auto pixels = [&](const std::string& tag, const Expr& oyb, const Expr& ox0, int64_t count) {
    std::vector<Buffer> acc;
    std::vector<Stmt> body;
    for (int64_t i = 0; i < count; ++i) {
      acc.push_back(NewVectorAccumulator("acc" + tag + std::to_string(i), lanes));
      f.locals.push_back(acc.back());
      body.push_back(lower::Store(acc.back(), 0, bias_in_float ? te::Cast(fvec, bias_vec) : zero));
    }
    for (int64_t ky = 0; ky < m.kh; ++ky) {
      for (int64_t kx = 0; kx < m.kw; ++kx) {
        for (int64_t i = 0; i < count; ++i) {
          Expr j = (ox0 + i) * m.s_w + kx;
          Expr in = lower::VectorLoad(plane, ((oyb * m.s_h + ky) * m.pw + j) * lanes, vl);
          Expr w = BufferLoad(weights[ky * m.kw + kx], 0);
          body.push_back(lower::Store(acc[i], 0, te::MulAddExact(in, w, BufferLoad(acc[i], 0))));
        }
      }
    }
    Expr oy = band_oy + oyb;
    for (int64_t i = 0; i < count; ++i) {
      Expr ox = ox0 + i;
      Expr sum = te::Cast(ivec, BufferLoad(acc[i], 0));
      if (bias && !bias_in_float) sum = sum + bias_vec;
      Expr value = EpilogueOnBlockVector(at, n, cb, oy, ox, sum, vl);
      body.push_back(
          lower::Store(ob, (((n * blocks + cb) * m.oh + oy) * m.ow + ox) * lanes, value));
    }
    return lower::Seq(body);
  };
  const int64_t tiles = m.ow / columns, rest = m.ow % columns;
  task.push_back(Range("oyb", 0, m.band, ForKind::kSerial, [&](const Expr& oyb) {
    std::vector<Stmt> row;
    if (tiles > 0) {
      Expr tile = te::MakeVar("tile");
      row.push_back(lower::KeepScalarFor(tile, tiles, pixels("t", oyb, tile * columns, columns)));
    }
    if (rest > 0) row.push_back(pixels("r", oyb, Expr(tiles * columns), rest));
    return SeqOf(row);
  }));

  const int64_t tasks = m.n * blocks * bands;
  const bool par =
      opts.parallel && tasks > 1 && m.n * m.c * m.oh * m.ow * taps >= opts.parallel_min_work;
  f.body = lower::For(t, tasks, par ? ForKind::kParallel : ForKind::kSerial, SeqOf(task));
  f.prefer_vector_bits = static_cast<int>(lanes * 32);
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
