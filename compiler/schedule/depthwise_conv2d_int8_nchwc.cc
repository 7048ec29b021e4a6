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
//
// Where the target has an int8 dot product as wide as the block (entries with `dot_quads`:
// vpdpbusd, Arm usdot / sdot) the plane keeps the bytes instead (the zero point in the padding,
// int8 data flipped to the dot's signedness) and each row of taps is one dot product per four
// taps: the four input pixels a row of taps reads from an output pixel's column on are one
// contiguous load of 4 x `lanes` bytes, transposed (te::TransposeByteRows) so that each channel's
// lane holds its four bytes, times the taps' weights transposed alike (zero past the kernel's
// width). The int32 sums start from the bias less the zero point times the weights' sum.
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/weight_layout.h>

#include <algorithm>
#include <functional>
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

// Taps per dot product: a lane's four bytes.
constexpr int64_t kTapsPerDot = 4;

struct DwInt8Blocked {
  int64_t n, c, h, w, kh, kw, s_h, s_w, pad_t, pad_l, oh, ow, zp;
  bool dot = false;        // sums in dot products of four taps (DepthwiseInt8Params::dot_quads)
  int64_t quads = 0;       // dot products per row of taps
  int64_t zd = 0;          // dot form: the zero point as the dot reads the data's bytes
  int64_t shift = 0;       // dot form: what the copy adds to each byte (modulo 256)
  int64_t pw = 0;          // padded columns in the plane (the output columns read, and with dot
                           // products up to the last quad's fourth pixel)
  int64_t band = 0;        // output rows per band
  int64_t band_rows = 0;   // padded rows a band reads
  int64_t elem_bytes = 4;  // of the plane: float32, or the bytes themselves
};

// The conv's geometry in blocks of `p.lanes` channels (the node NCHW or already blocked so).
bool ReadDwInt8Blocked(const Graph& g, const Node& conv, const DepthwiseInt8Params& p,
                       DwInt8Blocked* m) {
  const int64_t lanes = p.lanes;
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
  int64_t bias_magnitude = 0;
  if (conv.HasInput(2)) {
    const Value& b = g.value(conv.inputs[2]);
    if (!b.is_constant() || b.type.dtype != kInt32 || b.type.NumElements() != ws[0]) return false;
    bias_magnitude = LargestMagnitude(*b.constant);
  }
  const int64_t kh = ws[2], kw = ws[3], s_h = win.strides[0], s_w = win.strides[1];
  const int64_t oh = (x[2] + win.pads[0] + win.pads[2] - kh) / s_h + 1;
  const int64_t ow = (x[3] + win.pads[1] + win.pads[3] - kw) / s_w + 1;
  *m = DwInt8Blocked{x[0],        x[1], x[2], x[3],          kh, kw, s_h, s_w, win.pads[0],
                     win.pads[1], oh,   ow,   ops.zero_point};
  if (m->oh <= 0 || m->ow <= 0) return false;
  m->pw = (m->ow - 1) * m->s_w + m->kw;
  if (p.dot_quads) {
    // The dot's operand b is signed: int8 weights only; the int32 sums must not overflow.
    if (ops.weight->type.dtype != kInt8 ||
        bias_magnitude + m->kh * m->kw * kMaxInt8Product >= (int64_t{1} << 31)) {
      return false;
    }
    const bool signed_data = ops.data.dtype == kInt8;
    m->dot = true;
    m->quads = (m->kw + kTapsPerDot - 1) / kTapsPerDot;
    m->shift = (signed_data ? 128 : 0) - (p.signed_dot ? 128 : 0);
    m->zd = m->zp + m->shift;
    m->pw = (m->ow - 1) * m->s_w + m->quads * kTapsPerDot;
    m->elem_bytes = 1;
  } else if (m->kh * m->kw * kMaxInt8Product >= kExactFloat) {
    return false;
  }
  const int64_t row_bytes = m->pw * lanes * m->elem_bytes;
  const int64_t fit = std::max<int64_t>(1, (kBandBytes / row_bytes - m->kh) / m->s_h + 1);
  const int64_t bands = (m->oh + fit - 1) / fit;
  m->band = (m->oh + bands - 1) / bands;  // as even as they come
  m->band_rows = (m->band - 1) * m->s_h + m->kh;
  return m->band_rows * row_bytes <= kMaxPlaneBytes;
}

// The band's padded rows into the plane: each image pixel's vector `pixel_in(y, column)`, the
// padding `pad`.
Stmt FillBandPlane(const DwInt8Blocked& m, int64_t lanes, const Buffer& plane, const Expr& band_oy,
                   const Expr& pad, const std::function<Expr(const Expr&, const Expr&)>& pixel_in) {
  auto store = [&](const Expr& r, const Expr& j, const Expr& v) {
    return lower::Store(plane, (r * m.pw + j) * lanes, v);
  };
  const int64_t left = std::min(m.pad_l, m.pw), right = std::clamp(m.pad_l + m.w, left, m.pw);
  return Range("r", 0, m.band_rows, ForKind::kSerial, [&](const Expr& r) {
    Expr y = band_oy * m.s_h + r - m.pad_t;
    auto pads = [&](const std::string& name, int64_t begin, int64_t end) {
      return Range(name, begin, end, ForKind::kSerial,
                   [&](const Expr& j) { return store(r, j, pad); });
    };
    Stmt image_row =
        SeqOf({pads("jl", 0, left),
               Range("j", left, right, ForKind::kSerial,
                     [&](const Expr& j) { return store(r, j, pixel_in(y, j - m.pad_l)); }),
               pads("jr", right, m.pw)});
    return lower::If((y >= 0) && (y < m.h), image_row, pads("jz", 0, m.pw));
  });
}

// Dot form, per task: the weights of each dot product of a row of taps into a register (the
// row's taps copied to a zeroed stack row of a multiple of four taps, then transposed like the
// data), and what the sums start from, returned: the bias less the zero point times the sum of
// the block's weights (a dot product of ones), so that a padded pixel (the zero point) adds
// nothing.
Expr DotSumsStart(const DwInt8Blocked& m, const DepthwiseInt8Params& p, int64_t lanes,
                  const Buffer& wb, const Expr& cb, const Expr& bias_vec, lower::LoweredFunc* f,
                  const std::function<Buffer(const std::string&, te::DataType)>& weight_register,
                  std::vector<Stmt>* setup) {
  const int vl = static_cast<int>(lanes);
  const te::DataType ivec = te::WithLanes(te::Int(32), vl);
  const int64_t row_taps = m.quads * kTapsPerDot;
  Buffer rows = lower::NewBuffer(wb->name + "_tap_rows", te::Int(8), m.kh * row_taps * lanes,
                                 lower::BufferScope::kLocal);
  Buffer row_words = lower::NewBuffer(rows->name + "_x32", te::Int(32), rows->size / kTapsPerDot,
                                      lower::BufferScope::kLocal);
  f->locals.push_back(rows);
  f->aliases.emplace_back(row_words, rows);
  const Expr zero_taps = te::Broadcast(te::Const(te::Int(8), 0), vl);
  for (int64_t ky = 0; ky < m.kh; ++ky) {
    for (int64_t kx = 0; kx < row_taps; ++kx) {
      Expr tap = kx < m.kw ? lower::VectorLoad(wb, (cb * m.kh * m.kw + ky * m.kw + kx) * lanes, vl)
                           : zero_taps;
      setup->push_back(lower::Store(rows, (ky * row_taps + kx) * lanes, tap));
    }
  }
  const Expr ones = te::Broadcast(te::Const(te::Int(32), 0x01010101), vl);
  Expr weight_sum = te::Broadcast(te::Const(te::Int(32), 0), vl);
  for (int64_t ky = 0; ky < m.kh; ++ky) {
    for (int64_t q = 0; q < m.quads; ++q) {
      Buffer w = weight_register("wquad" + std::to_string(ky * m.quads + q), ivec);
      Expr words = lower::VectorLoad(row_words, (ky * row_taps + q * kTapsPerDot) * lanes / 4, vl);
      setup->push_back(lower::Store(w, 0, te::TransposeByteRows(words)));
      Expr wq = lower::BufferLoad(w, 0);
      weight_sum =
          p.signed_dot ? te::DotS8S8(weight_sum, ones, wq) : te::DotU8S8(weight_sum, ones, wq);
    }
  }
  Expr start = bias_vec.defined() ? bias_vec : te::Broadcast(te::Const(te::Int(32), 0), vl);
  if (m.zd != 0) start = start - weight_sum * te::Broadcast(te::Const(te::Int(32), m.zd), vl);
  Buffer start_reg = weight_register("sums_start", ivec);
  setup->push_back(lower::Store(start_reg, 0, start));
  return lower::BufferLoad(start_reg, 0);
}

}  // namespace

bool DepthwiseConv2dInt8NchwcApplies(const Graph& g, const Node& conv,
                                     const DepthwiseInt8Params& p) {
  DwInt8Blocked m;
  return ReadDwInt8Blocked(g, conv, p, &m);
}

bool TryDepthwiseConv2dInt8Nchwc(const FusedGroup& group, const lower::ScheduleOptions& opts,
                                 const DepthwiseInt8Params& p, lower::LoweredFunc* out) {
  const Graph& g = *group.graph;
  const Node* conv = SingleConvOf(group);
  const int64_t lanes = p.lanes;
  DwInt8Blocked m;
  if (opts.target == nullptr || conv == nullptr || group.outputs.size() != 1 ||
      conv->GetString(kOutLayoutAttr, "NCHW") != LayoutName(lanes) ||
      conv->GetInt(kPackedWeightBlockAttr, 0) != lanes || !ReadDwInt8Blocked(g, *conv, p, &m)) {
    return false;
  }
  const TensorType& o = g.value(conv->outputs[0]).type;
  if (o.dtype != kInt32 || g.value(group.outputs[0]).type.shape != o.shape) return false;
  for (int v : conv->inputs) {
    if (v != kAbsentValue && !IsGroupInput(group, v)) return false;
  }
  // Output pixels per tile: the registers the taps' weights (one vector per tap, or per dot
  // product of a row) and the sums' start leave (more taps than registers, a 7x7 conv in floats:
  // their weights come from the stack, one pixel at a time).
  const int64_t taps = m.kh * m.kw;
  const int64_t weight_vectors = m.dot ? m.kh * m.quads + 1 : taps;
  const int64_t registers = VectorRegisters(ClassifyTarget(*opts.target));
  const int64_t columns = std::clamp<int64_t>(registers - weight_vectors - kWorkingRegisters, 1, 8);

  lower::LoweredFunc f;
  Buffer xb, wb;
  EpilogueAt at;
  AnchorOperands operands{conv->inputs[0], conv->inputs[1], -1, nullptr, te::Int(32)};
  if (!BuildEpilogueAt(group, *conv, operands, &f, &xb, &wb, &at)) return false;
  const int vl = static_cast<int>(lanes);
  const te::DataType fvec = te::WithLanes(te::Float(32), vl);
  const te::DataType ivec = te::WithLanes(te::Int(32), vl);
  const te::DataType bvec = te::WithLanes(te::UInt(8), vl);
  if (!EpilogueVectorizes(at, vl, te::Int(32))) return false;
  Buffer bias;
  if (conv->HasInput(2)) {
    bias = GroupInputBuffer(group, f, conv->inputs[2]);
    if (!bias) return false;
  }
  // Float sums start from the bias where every partial sum stays an exact integer.
  const bool bias_in_float =
      !m.dot && bias &&
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

  // The plane: floats less the zero point (zero in the padding), or the bytes as the dot reads
  // them (the zero point in the padding), one vector of the block's channels per pixel.
  Buffer plane = lower::NewBuffer(conv->name + (m.dot ? "_quad_plane" : "_blocked_plane"),
                                  m.dot ? te::UInt(8) : te::Float(32), m.band_rows * m.pw * lanes,
                                  lower::BufferScope::kLocal);
  f.locals.push_back(plane);
  Expr pad_value =
      m.dot ? te::Broadcast(te::Const(te::UInt(8), m.zd & 0xff), vl) : te::Broadcast(F32(0), vl);
  auto pixel_in = [&](const Expr& y, const Expr& col) {
    Expr v = lower::VectorLoad(xb, (((n * blocks + cb) * m.h + y) * m.w + col) * lanes, vl);
    if (!m.dot) {
      return te::Cast(fvec, te::Cast(ivec, v) - te::Broadcast(te::Const(te::Int(32), m.zp), vl));
    }
    if (m.shift == 0) return te::Cast(bvec, v);
    return te::Cast(bvec, te::Cast(ivec, v) + te::Broadcast(te::Const(te::Int(32), m.shift), vl));
  };
  std::vector<Stmt> task;
  task.push_back(FillBandPlane(m, lanes, plane, band_oy, pad_value, pixel_in));

  // Per task: the weights (a vector per tap, or per dot product of a row) and the sums' start.
  std::vector<Buffer> weights;
  auto weight_register = [&](const std::string& name, te::DataType type) {
    weights.push_back(lower::NewBuffer(name, type, 1, lower::BufferScope::kLocal));
    f.locals.push_back(weights.back());
    return weights.back();
  };
  Expr bias_vec;
  if (bias) bias_vec = lower::VectorLoad(bias, cb * lanes, vl);
  Expr start = bias_in_float ? te::Cast(fvec, bias_vec) : te::Broadcast(F32(0), vl);
  if (m.dot) {
    std::vector<Stmt> setup;
    start = DotSumsStart(m, p, lanes, wb, cb, bias_vec, &f, weight_register, &setup);
    task.insert(task.end(), setup.begin(), setup.end());
  } else {
    for (int64_t k = 0; k < taps; ++k) {
      Buffer w = weight_register("wvec" + std::to_string(k), fvec);
      Expr wv = lower::VectorLoad(wb, (cb * taps + k) * lanes, vl);
      task.push_back(lower::Store(w, 0, te::Cast(fvec, te::Cast(ivec, wv))));
    }
  }

  // `count` output pixels from column ox0 of output row oy (row oyb of the band).
  Buffer plane_words;
  if (m.dot) {
    plane_words = lower::NewBuffer(plane->name + "_x32", te::Int(32), plane->size / kTapsPerDot,
                                   lower::BufferScope::kLocal);
    f.aliases.emplace_back(plane_words, plane);
  }
  const Buffer& ob = f.args.back().buffer;
  auto pixels = [&](const std::string& tag, const Expr& oyb, const Expr& ox0, int64_t count) {
    std::vector<Buffer> acc;
    std::vector<Stmt> body;
    for (int64_t i = 0; i < count; ++i) {
      acc.push_back(lower::NewBuffer("acc" + tag + std::to_string(i), m.dot ? ivec : fvec, 1,
                                     lower::BufferScope::kLocal));
      f.locals.push_back(acc.back());
      body.push_back(lower::Store(acc.back(), 0, start));
    }
    for (int64_t ky = 0; ky < m.kh; ++ky) {
      const int64_t steps = m.dot ? m.quads : m.kw;
      for (int64_t k = 0; k < steps; ++k) {
        for (int64_t i = 0; i < count; ++i) {
          Expr row = oyb * m.s_h + ky;
          Expr a = BufferLoad(acc[i], 0);
          Stmt step;
          if (m.dot) {
            // Four pixels from the quad's first column: their bytes, one lane per channel.
            Expr j = (ox0 + i) * m.s_w + k * kTapsPerDot;
            Expr in = te::TransposeByteRows(
                lower::VectorLoad(plane_words, (row * m.pw + j) * (lanes / kTapsPerDot), vl));
            Expr w = BufferLoad(weights[ky * m.quads + k], 0);
            step = lower::Store(acc[i], 0,
                                p.signed_dot ? te::DotS8S8(a, in, w) : te::DotU8S8(a, in, w));
          } else {
            Expr j = (ox0 + i) * m.s_w + k;
            Expr in = lower::VectorLoad(plane, (row * m.pw + j) * lanes, vl);
            Expr w = BufferLoad(weights[ky * m.kw + k], 0);
            step = lower::Store(acc[i], 0, te::MulAddExact(in, w, a));
          }
          body.push_back(step);
        }
      }
    }
    Expr oy = band_oy + oyb;
    for (int64_t i = 0; i < count; ++i) {
      Expr ox = ox0 + i;
      Expr sum = BufferLoad(acc[i], 0);
      if (!m.dot) sum = te::Cast(ivec, sum);
      if (bias && !m.dot && !bias_in_float) sum = sum + bias_vec;
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
