// Depthwise 2-D convolution of 8-bit integers into int32 sums, for the depthwise convs of
// quantized models (kDataZeroPointAttr) between int8 convs: without it they run exactly on the
// float kernels, cast to float and blocked before, cast back and unblocked after. This is its NCHW
// form, for data written in NCHW; between int8 convs that write NCHW[x]c the layout pass makes it
// blocked too, and TryDepthwiseConv2dInt8 hands it to depthwise_conv2d_int8_nchwc.cc.
//
// One task per (image, channel) plane, in bands of output rows: a band first copies the input
// rows it reads, shifted by the zero point, into a padded int32 buffer on the stack (zero outside
// the image: the padding after the shift; small enough to stay in L1) whose rows are split by the
// horizontal stride's phase (phase p of a row holds padded columns j * S + p), then each of its
// output rows sums the taps, the int8 weights broadcast, in int32 lanes along the output width,
// every tap a contiguous read (no gathers, no bounds checks), adds the int32 bias and applies the
// group's epilogue (the requantization) in registers before its one store. The sums are exact:
// at most 255 * 128 per tap, and DepthwiseConv2dInt8Applies bounds the taps. While the taps' sum
// stays below 2^24 (3x3, 5x5) the plane and the taps are float32, every partial sum an exact
// integer: a float multiply and add issue on two ports where vpmulld takes one for two uops; the
// sums then start from the bias where it leaves them below 2^24 too, else it is added in int32.
// Rows too wide for the plane (a band of one output row over kMaxPlane) run in strips of output
// columns, each copying the padded columns it reads: the strips inside the image in a loop with
// plain loads, those at the borders one by one, the last one ending at the last column.
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/weight_layout.h>
#include <ember/compiler/ir/window_attrs.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conv_group.h"
#include "epilogue.h"
#include "int8_conv_operands.h"
#include "loop_builders.h"
#include "schedule.h"

namespace ember::compiler::schedule {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::ForKind;
using lower::Stmt;
using te::Expr;

// |x - zero point| * |w| <= 255 * 128 per tap; this many taps keep int32 sums with a bias exact.
constexpr int64_t kMaxTaps = 4096;
// Elements of the padded rows on the stack, per task, at most.
constexpr int64_t kMaxPlane = int64_t{1} << 15;
// Bytes of padded rows a band copies: a third of a 48 KB L1, so the rows a band stores are still
// there when its output rows read them.
constexpr int64_t kBandBytes = 16 << 10;

struct DwInt8 {
  int64_t n, c, h, w, kh, kw, s_h, s_w, pad_t, pad_l, oh, ow, ow_pad;
  int64_t pw;          // columns per stride phase of a padded row
  int64_t strip;       // output columns a copy of the padded rows serves: ow_pad, or a strip's
  int64_t pws;         // columns per stride phase of the plane: strip + (kw - 1) / s_w
  int64_t j_lo, j_hi;  // columns whose phases all lie inside the image
  int64_t j_out;       // columns from here on lie right of the image in every phase
  int64_t band;        // output rows computed from one copy of the rows they read
  int64_t band_rows;   // padded rows they read
  int64_t zp;
};

// The conv's geometry; `weight_int8` also asks for the int8 weight the kernel reads (the
// strategy sees the model's 8-bit one, before canonicalization shifts it by its zero point).
bool ReadDwInt8(const Graph& g, const Node& conv, bool weight_int8, int64_t lanes, DwInt8* m) {
  Int8ConvOperands ops;
  // A run-time zero point is the dense kernels' only (dynamically quantized models have no
  // depthwise convs to speak of).
  if (conv.HasAttr(kPackedInt8WeightAttr) || !ReadInt8ConvOperands(g, conv, 4, &ops) ||
      ops.zero_point_input >= 0 || !ops.window.Undilated() || ops.in_block != 0 ||
      ops.out_block != 0) {
    return false;
  }
  const TensorType& x = ops.data;
  const std::vector<int64_t>& ws = ops.weight->type.shape;
  const WindowAttrs& win = ops.window;
  if ((weight_int8 && ops.weight->type.dtype != kInt8) || ws[0] != x.shape[1] || ws[1] != 1 ||
      win.group != x.shape[1]) {
    return false;
  }
  if (conv.HasInput(2)) {
    const Value& b = g.value(conv.inputs[2]);
    if (!b.is_constant() || b.type.dtype != kInt32 || b.type.NumElements() != ws[0]) return false;
  }
  m->n = x.shape[0];
  m->c = x.shape[1];
  m->h = x.shape[2];
  m->w = x.shape[3];
  m->kh = ws[2];
  m->kw = ws[3];
  m->s_h = win.strides[0];
  m->s_w = win.strides[1];
  m->pad_t = win.pads[0];
  m->pad_l = win.pads[1];
  m->zp = ops.zero_point;
  m->oh = (m->h + m->pad_t + win.pads[2] - m->kh) / m->s_h + 1;
  m->ow = (m->w + m->pad_l + win.pads[3] - m->kw) / m->s_w + 1;
  if (m->oh <= 0 || m->ow <= 0) return false;
  // Output rows are computed in whole vectors (ow_pad columns), so each phase is wide enough for
  // the columns past ow too: tap kx of column ox reads phase kx % S at ox + kx / S.
  m->ow_pad = (m->ow + lanes - 1) / lanes * lanes;
  m->pw = m->ow_pad + (m->kw - 1) / m->s_w;
  const int64_t sw = m->s_w;
  m->j_lo = std::min(m->pw, (m->pad_l + sw - 1) / sw);
  const int64_t last = m->pad_l + m->w - sw;  // j * S <= last
  m->j_hi = last < 0 ? m->j_lo : std::max(m->j_lo, std::min(m->pw, last / sw + 1));
  m->j_out = std::clamp((m->w + m->pad_l + sw - 1) / sw, m->j_hi, m->pw);
  const int64_t halo = (m->kw - 1) / sw;
  m->strip = m->ow_pad;
  if (m->kh * sw * m->pw > kMaxPlane) {  // strips whose kh rows fill the band budget
    m->strip = std::max(lanes, (kBandBytes / 4 / (m->kh * sw) - halo) / lanes * lanes);
    if (m->strip >= m->ow) return false;
  }
  m->pws = m->strip + halo;
  const int64_t fit = kBandBytes / (sw * m->pws * 4);  // padded rows in the budget
  const int64_t most = std::clamp<int64_t>((fit - m->kh) / m->s_h + 1, 1, m->oh);
  const int64_t bands = (m->oh + most - 1) / most;
  m->band = (m->oh + bands - 1) / bands;  // as even as they come
  m->band_rows = (m->band - 1) * m->s_h + m->kh;
  return m->kh * m->kw <= kMaxTaps && m->band_rows * sw * m->pws <= kMaxPlane;
}

}  // namespace

bool DepthwiseConv2dInt8Applies(const Graph& g, const Node& conv, const DepthwiseInt8Params& p) {
  if (conv.GetString(kOutLayoutAttr, "NCHW") != "NCHW") {
    return DepthwiseConv2dInt8NchwcApplies(g, conv, p);
  }
  DwInt8 m;
  const bool nchw = p.lanes > 0 && ReadDwInt8(g, conv, false, p.lanes, &m);
  // An entry whose blocked form sums in dot products takes only the convs that form takes too
  // (8-bit weights that are not int8 go to the next entry).
  return nchw && (!p.dot_quads || DepthwiseConv2dInt8NchwcApplies(g, conv, p));
}

bool TryDepthwiseConv2dInt8(const FusedGroup& group, const lower::ScheduleOptions& opts,
                            const DepthwiseInt8Params& p, lower::LoweredFunc* out) {
  const Graph& g = *group.graph;
  const Node* conv = SingleConvOf(group);
  if (conv != nullptr && conv->GetString(kOutLayoutAttr, "NCHW") != "NCHW") {
    return TryDepthwiseConv2dInt8Nchwc(group, opts, p, out);
  }
  DwInt8 m;
  if (conv == nullptr || group.outputs.size() != 1 || conv->outputs.size() != 1 ||
      !ReadDwInt8(g, *conv, true, p.lanes, &m)) {
    return false;
  }
  const TensorType& o = g.value(conv->outputs[0]).type;
  if (o.dtype != kInt32 || o.shape != std::vector<int64_t>{m.n, m.c, m.oh, m.ow} ||
      g.value(group.outputs[0]).type.shape != o.shape) {
    return false;
  }
  for (int v : conv->inputs) {
    if (v != kAbsentValue && !IsGroupInput(group, v)) return false;
  }
  lower::LoweredFunc f;
  Buffer xb, wb;
  EpilogueAt at;
  AnchorOperands operands{conv->inputs[0], conv->inputs[1], -1, nullptr, te::Int(32)};
  if (!BuildEpilogueAt(group, *conv, operands, &f, &xb, &wb, &at)) return false;
  Buffer bias;
  if (conv->HasInput(2)) {
    bias = GroupInputBuffer(group, f, conv->inputs[2]);
    if (!bias) return false;
  }
  const te::DataType tap_type =
      m.kh * m.kw * kMaxInt8Product < kExactFloat ? te::Float(32) : te::Int(32);
  // A band of output rows first copies the padded rows it reads (band_rows; kh - S_h of them
  // again for the next band) into the plane on the stack, which stays in L1: for a strip of its
  // output columns where the rows are too wide for it.
  const int64_t sw = m.s_w;
  Buffer plane = lower::NewBuffer(conv->name + "_plane", tap_type, m.band_rows * sw * m.pws,
                                  lower::BufferScope::kLocal);
  f.locals.push_back(plane);
  auto plane_at = [&](const Expr& slot, int64_t phase, const Expr& j) {
    return (slot * sw + phase) * m.pws + j;
  };
  // Output columns [x0, x0 + strip), reading padded columns [x0, x0 + pws); `at` is x0 when known
  // at compile time, -1 for a strip of the loop over those inside the image.
  struct Strip {
    Expr x0;
    int64_t at;
    // Column j of the strip in the whole row (the first strip's as they were without strips).
    Expr Column(const Expr& j) const { return at == 0 ? j : x0 + j; }
  };

  Expr task = te::MakeVar("nc");
  Expr n = te::FloorDiv(task, Expr(m.c)), c = te::FloorMod(task, Expr(m.c));
  // Padded row y into row `slot` of the plane, shifted, split by stride phase: padded column
  // j * S + p at plane_at(slot, p, j). Columns j whose phases all lie inside the image copy with
  // plain loads (an interleave group of factor S); the few border ones test each phase. Rows in the
  // padding are zeros.
  const Expr zero = te::Const(tap_type, 0);
  auto shifted = [&](const Expr& y, const Expr& col) {
    Expr v = BufferLoad(xb, (task * m.h + y - m.pad_t) * m.w + col);
    // int8 data sign-extends
    return te::Cast(tap_type, te::Cast(te::Int(32), v) - te::Const(te::Int(32), m.zp));
  };
  // Interior columns in exact-width vector steps (a row of 56 would otherwise be fully unrolled
  // into scalar conversions), the border ones one by one; j counts from the strip's first.
  auto columns = [&](const Strip& s, const Expr& y, const Expr& slot, int64_t begin, int64_t end,
                     bool guarded) {
    auto body = [&](const Expr& j) {
      std::vector<Stmt> phases;
      for (int64_t ph = 0; ph < sw; ++ph) {
        Expr col = s.Column(j) * sw + (ph - m.pad_l);
        Expr v = shifted(y, col);
        if (guarded) v = te::Select((col >= 0) && (col < m.w), v, zero);
        phases.push_back(lower::Store(plane, plane_at(slot, ph, j), v));
      }
      return lower::Seq(phases);
    };
    return guarded ? Range("jb", begin, end, ForKind::kSerial, body)
                   : VectorSteps("j", begin, end - begin, p.lanes, body);
  };
  // Columns right of the image in every phase (the vector tail past ow, most of a small
  // plane's row) are zeros in vector steps, not tested one by one.
  auto zero_columns = [&](const Expr& slot, int64_t begin, int64_t end) {
    std::vector<Stmt> phases;
    for (int64_t ph = 0; ph < sw; ++ph) {
      phases.push_back(VectorSteps("jz", begin, end - begin, p.lanes, [&](const Expr& j) {
        return lower::Store(plane, plane_at(slot, ph, j), zero);
      }));
    }
    return SeqOf(phases);
  };
  auto image_row = [&](const Strip& s, const Expr& y, const Expr& slot) {
    if (s.at < 0) return columns(s, y, slot, 0, m.pws, false);
    // The row's column classes, in the strip's columns.
    auto in_strip = [&](int64_t j) { return std::clamp<int64_t>(j - s.at, 0, m.pws); };
    const int64_t lo = in_strip(m.j_lo), hi = in_strip(m.j_hi), out = in_strip(m.j_out);
    return SeqOf({columns(s, y, slot, 0, lo, true), columns(s, y, slot, lo, hi, false),
                  columns(s, y, slot, hi, out, true), zero_columns(slot, out, m.pws)});
  };
  auto zero_rows = [&](const std::string& name, const Expr& slot, int64_t rows) {
    return VectorSteps(name, 0, rows * sw * m.pws, p.lanes, [&](const Expr& i) {
      return lower::Store(plane, i + slot * sw * m.pws, zero);
    });
  };
  // The last band ends at the last row, overlapping the one before when the bands do not divide
  // the rows (a few rows computed twice, rather than a test in every row).
  const int64_t bands = (m.oh + m.band - 1) / m.band;
  Expr band = te::MakeVar("band");
  Expr band_oy = 0;  // the band's first output row
  if (bands > 1) {
    band_oy = bands * m.band > m.oh ? te::Min(band * m.band, Expr(m.oh - m.band)) : band * m.band;
  }
  Expr first_row = band_oy * m.s_h;  // the band's padded row 0
  auto copy = [&](const Strip& s) {
    if (bands == 1) {  // the padding rows known: no test per row
      const int64_t image_end = std::min(m.pad_t + m.h, m.band_rows);
      return SeqOf({zero_rows("zt", Expr(0), std::min(m.pad_t, m.band_rows)),
                    Range("y", m.pad_t, image_end, ForKind::kSerial,
                          [&](const Expr& y) { return image_row(s, y, y); }),
                    zero_rows("zb", Expr(image_end), m.band_rows - image_end)});
    }
    return Range("r", 0, m.band_rows, ForKind::kSerial, [&](const Expr& r) {
      Expr y = first_row + r;
      return lower::If((y >= m.pad_t) && (y < m.pad_t + m.h), image_row(s, y, r),
                       zero_rows("z", r, 1));
    });
  };

  // Output rows: the taps in int32 lanes along the width, bias and epilogue in registers, over
  // whole vectors of columns (a row of 14 or 7 would otherwise run scalar); the columns past ow
  // land in a row buffer (the epilogue reads at most column ow - 1) and are dropped.
  Expr oyb = te::MakeVar("oyb"), ox = te::MakeVar("ox");  // oyb: the row in its band
  Expr oy = bands > 1 ? band_oy + oyb : oyb;
  // In float, the sums start from the bias where every partial sum stays an integer below 2^24:
  // the int32 sum the epilogue converts back to float is then the float sum itself (te::Cast of a
  // MulAddExact chain), with no conversion and integer add per vector.
  const bool bias_in_float =
      bias && tap_type == te::Float(32) &&
      LargestMagnitude(*g.value(conv->inputs[2]).constant) + m.kh * m.kw * kMaxInt8Product <
          kExactFloat;
  Expr taps;
  if (bias_in_float) taps = te::Cast(tap_type, BufferLoad(bias, c));
  for (int64_t ky = 0; ky < m.kh; ++ky) {
    for (int64_t kx = 0; kx < m.kw; ++kx) {
      // The tap's column offset added last: as ox + k, LLVM's load PRE carries each load to the
      // next column as a shuffle of two (a permute per tap instead of a load).
      Expr xv = BufferLoad(plane, plane_at(oyb * m.s_h + ky, kx % sw, ox) + kx / sw);
      Expr wv = te::Cast(tap_type, BufferLoad(wb, (c * m.kh + ky) * m.kw + kx));
      // Integers below 2^24 in float: one FMA per tap changes nothing (exact either way).
      if (!taps.defined()) {
        taps = xv * wv;
      } else {
        taps = tap_type == te::Int(32) ? taps + xv * wv : te::MulAddExact(xv, wv, taps);
      }
    }
  }
  Expr sum = tap_type == te::Int(32) ? taps : te::Cast(te::Int(32), taps);
  if (bias && !bias_in_float) sum = sum + BufferLoad(bias, c);
  const Buffer& ob = f.args.back().buffer;
  Buffer out_row;
  if (m.strip == m.ow_pad && m.ow_pad != m.ow) {  // one strip, past ow
    out_row =
        lower::NewBuffer(conv->name + "_row", ob->dtype, m.ow_pad, lower::BufferScope::kLocal);
    f.locals.push_back(out_row);
  }
  auto rows = [&](const Strip& s) {
    Stmt row;
    if (!out_row) {
      const Expr col = s.Column(ox);
      row = lower::Store(ob, (task * m.oh + oy) * m.ow + col, at({n, c, oy, col}, sum));
      row = lower::For(ox, m.strip, ForKind::kVectorized, row);
    } else {
      Stmt wide = lower::Store(out_row, ox, at({n, c, oy, te::Min(ox, Expr(m.ow - 1))}, sum));
      Stmt copy_out = VectorSteps("cx", 0, m.ow, p.lanes, [&](const Expr& cx) {
        return lower::Store(ob, (task * m.oh + oy) * m.ow + cx, BufferLoad(out_row, cx));
      });
      row = lower::Seq({lower::For(ox, m.ow_pad, ForKind::kVectorized, wide), copy_out});
    }
    return lower::Seq({copy(s), lower::For(oyb, m.band, ForKind::kSerial, row)});
  };
  // The strips: those whose padded columns lie inside the image in a loop, the others (and the
  // last, which ends at column ow) each with its own code.
  auto strip_at = [&](int64_t x0) { return rows(Strip{Expr(x0), x0}); };
  std::vector<Stmt> strips;
  if (m.strip == m.ow_pad) {
    strips.push_back(strip_at(0));
  } else {
    const int64_t count = (m.ow + m.strip - 1) / m.strip;  // the last one ends at column ow
    auto inside = [&](int64_t k) { return k * m.strip >= m.j_lo && k * m.strip + m.pws <= m.j_hi; };
    int64_t k = 0;
    for (; k < count - 1 && !inside(k); ++k) strips.push_back(strip_at(k * m.strip));
    const int64_t first_inside = k;
    while (k < count - 1 && inside(k)) ++k;
    if (k > first_inside) {
      Expr s = te::MakeVar("strip");
      strips.push_back(lower::For(s, k - first_inside, ForKind::kSerial,
                                  rows(Strip{(s + first_inside) * m.strip, -1})));
    }
    for (; k < count - 1; ++k) strips.push_back(strip_at(k * m.strip));
    strips.push_back(strip_at(m.ow - m.strip));
  }
  Stmt band_body = SeqOf(strips);
  Stmt planes = bands > 1 ? lower::For(band, bands, ForKind::kSerial, band_body) : band_body;

  const int64_t tasks = m.n * m.c;
  const bool par =
      opts.parallel && tasks > 1 && tasks * m.oh * m.ow * m.kh * m.kw >= opts.parallel_min_work;
  f.body = lower::For(task, tasks, par ? ForKind::kParallel : ForKind::kSerial, planes);
  f.prefer_vector_bits = static_cast<int>(p.lanes * 32);
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
