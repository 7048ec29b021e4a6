// ReadInt8Conv and PackInt8Data: see int8_conv_data.h.
#include "int8_conv_data.h"

#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/weight_layout.h>

#include <string>
#include <vector>

#include "conv_group.h"
#include "epilogue.h"
#include "int8_conv_operands.h"
#include "loop_builders.h"

namespace ember::compiler::schedule {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::ForKind;
using lower::Stmt;
using te::Expr;

// Products of at most 255 x 128 over this many taps, plus a bias, stay within int32.
constexpr int64_t kMaxTaps = 32768;
constexpr int64_t kDotDepth = kInt8DotDepth;

}  // namespace

bool ReadInt8Conv(const Graph& g, const Node& conv, bool packed, Int8Conv* m) {
  Int8ConvOperands ops;
  if (!ReadInt8ConvOperands(g, conv, packed ? 6 : 4, &ops) || ops.window.group != 1) return false;
  const TensorType& x = ops.data;
  const std::vector<int64_t>& ws = ops.weight->type.shape;
  const WindowAttrs& win = ops.window;
  const bool signed_data = x.dtype == kInt8;
  const int64_t zp = ops.zero_point;
  if (zp < (signed_data ? -128 : 0) || zp > (signed_data ? 127 : 255)) return false;
  *m = Int8Conv{x.shape[0],
                x.shape[1],
                x.shape[2],
                x.shape[3],
                ws[0],
                ws[2],
                ws[3],
                win.strides[0],
                win.strides[1],
                win.pads[0],
                win.pads[1],
                zp + (signed_data ? 128 : 0),
                win.pads[2],
                win.pads[3],
                win.dilations[0],
                win.dilations[1],
                signed_data,
                ops.zero_point_input,
                ops.in_block,
                ops.out_block};
  if (!packed && ws[1] != m->c) return false;
  return RoundUp(m->c, kDotDepth) * m->kh * m->kw <= kMaxTaps;
}

// Whole channel quads copy their interior with plain loads (LLVM interleaves the four planes into
// one store stream) and fill the border apart; a last partial quad keeps the per-byte test.
Expr ZeroPointByte(const Int8Conv& m, const Buffer& zp) {
  if (m.zero_point_input < 0) return te::Const(te::UInt(8), m.zu);
  Expr v = BufferLoad(zp, 0);
  return m.signed_data ? te::Cast(te::UInt(8), te::Cast(te::Int(32), v) + 128) : v;
}

bool RunTimeZeroPointBuffers(const FusedGroup& group, const Node& conv, const Int8Conv& m,
                             const lower::LoweredFunc& f, Buffer* zp, Buffer* wsum) {
  *zp = *wsum = nullptr;
  if (m.zero_point_input < 0) return true;
  if (!conv.HasInput(kWeightSumInput)) return false;
  *zp = GroupInputBuffer(group, f, conv.inputs[kDataZeroPointInput]);
  *wsum = GroupInputBuffer(group, f, conv.inputs[kWeightSumInput]);
  return *zp && *wsum;
}

bool ReadInt8ConvGroup(const FusedGroup& group, const Conv2dInt8Params& p, Int8ConvGroup* out) {
  const Graph& g = *group.graph;
  Int8ConvGroup& c = *out;
  c.conv = SingleConvOf(group);
  const Node* conv = c.conv;
  const int64_t block = p.WeightBlock();
  if (conv == nullptr || group.outputs.size() != 1 || conv->outputs.size() != 1 ||
      conv->GetInt(kPackedInt8WeightAttr, 0) != block ||
      conv->GetInt(kPackedInt8DataOffsetAttr, 0) != Int8DataOffset(p) ||
      (conv->GetInt(kPackedInt8HalvesAttr, 0) != 0) != Int8WeightHalves(p) || !conv->HasInput(2) ||
      !ReadInt8Conv(g, *conv, true, &c.m)) {
    return false;
  }
  for (int v : conv->inputs) {
    if (!IsGroupInput(group, v)) return false;
  }
  const TensorType& o = g.value(conv->outputs[0]).type;
  const std::vector<int64_t> dims = NchwShapeOf(o.shape, c.m.out_block);
  if (dims.size() != 4 || o.dtype != kInt32 || dims[0] != c.m.n ||
      g.value(group.outputs[0]).type.shape != o.shape) {
    return false;
  }
  c.oh = dims[2];
  c.ow = dims[3];
  c.m.oc = dims[1];  // the packed weight's first axis counts blocks
  c.ocp = RoundUp(c.m.oc, block);
  c.quads = RoundUp(c.m.c, kDotDepth) / kDotDepth;
  const std::vector<int64_t>& ws = g.value(conv->inputs[1]).type.shape;
  if (ws[0] * block != c.ocp || ws[1] != c.quads || ws[4] != block || ws[5] != kDotDepth ||
      g.value(conv->inputs[2]).type.NumElements() != c.ocp) {
    return false;
  }
  // The epilogue reads the exact int32 sums (bias included: it is the packed, compensated one).
  AnchorOperands operands{conv->inputs[0], conv->inputs[1], -1, nullptr, te::Int(32)};
  if (!BuildEpilogueAt(group, *conv, operands, &c.f, &c.x, &c.w, &c.at)) return false;
  c.bias = GroupInputBuffer(group, c.f, conv->inputs[2]);
  return c.bias && RunTimeZeroPointBuffers(group, *conv, c.m, c.f, &c.zp, &c.wsum);
}

Int8ConvViews AddInt8ConvViews(Int8ConvGroup* c, int64_t words) {
  const std::string& name = c->conv->name;
  Int8ConvViews v;
  // Four bytes read as one int32: the data's channel quads and the weights' per-channel quads.
  if (words > 0) {
    v.xq = lower::NewBuffer(name + "_u8_ws", te::UInt(8), words * kDotDepth,
                            lower::BufferScope::kWorkspace);
    v.xq32 = lower::NewBuffer(name + "_u8x4", te::Int(32), words, lower::BufferScope::kWorkspace);
    c->f.workspaces.push_back(v.xq);
    c->f.aliases.emplace_back(v.xq32, v.xq);
  }
  v.w32 = lower::NewBuffer(name + "_s8x4", te::Int(32), c->w->size / kDotDepth,
                           lower::BufferScope::kArg);
  c->f.aliases.emplace_back(v.w32, c->w);
  if (c->m.in_block % kDotDepth == 0 && c->m.in_block > 0) {
    // A blocked pixel's channel quads are whole words too.
    v.x32 = lower::NewBuffer(name + "_x32", te::Int(32), c->x->size / kDotDepth,
                             lower::BufferScope::kArg);
    c->f.aliases.emplace_back(v.x32, c->x);
  }
  return v;
}

bool ReadsDataInPlace(const Int8Conv& m, int64_t offset) {
  const bool whole_quads = m.in_block > 0 && m.in_block % kDotDepth == 0 && m.c % m.in_block == 0;
  const bool unpadded = m.pad_t == 0 && m.pad_l == 0 && m.pad_b == 0 && m.pad_r == 0;
  return whole_quads && unpadded && (m.signed_data ? 128 : 0) == offset;
}

Expr KernelBias(const Int8Conv& m, const Buffer& bias, const Buffer& zp, const Buffer& wsum,
                const Expr& oc, int lanes) {
  auto load = [&](const Buffer& b) {
    return lanes > 1 ? lower::VectorLoad(b, oc, lanes) : BufferLoad(b, oc);
  };
  if (m.zero_point_input < 0) return load(bias);
  Expr z = te::Cast(te::Int(32), BufferLoad(zp, 0));  // int8 zero points sign-extend
  return load(bias) - (lanes > 1 ? te::Broadcast(z, lanes) : z) * load(wsum);
}

Stmt PackInt8Data(const Int8Conv& m, const Buffer& x, const Expr& zero_point_byte, int64_t offset,
                  const Int8ConvViews& views, const Expr& n, const Int8DataLayout& layout,
                  const lower::ScheduleOptions& opts) {
  const Buffer& xq = views.xq;
  const int64_t quads = RoundUp(m.c, kDotDepth) / kDotDepth, full = m.c / kDotDepth;
  const int64_t s_h = layout.s_h, s_w = layout.s_w, cols = layout.cols;
  const bool signed_data = m.signed_data;
  const Expr zu = offset == 0
                      ? zero_point_byte
                      : te::Cast(te::UInt(8), te::Cast(te::Int(32), zero_point_byte) - offset);
  // The byte the kernel multiplies, modulo 256: int8 data + 128 - offset (a flip of the top bit,
  // or none).
  const int64_t shift = (signed_data ? 128 : 0) - offset;
  auto byte = [&](const Expr& c, const Expr& sy, const Expr& sx) {
    Expr v = BufferLoad(x, NchwOrBlockedIndex(m.in_block, m.c, m.h, m.w, n, c, sy, sx));
    if (shift == 0) return signed_data ? te::Cast(te::UInt(8), v) : v;
    return te::Cast(te::UInt(8), te::Cast(te::Int(32), v) + te::Const(te::Int(32), shift));
  };
  // Byte j of column xs of column phase rx in padded row y of quad c4 (y is row y / s_h of row
  // phase y % s_h).
  auto word_at = [&](const Expr& c4, const Expr& y, int64_t rx, const Expr& xs) {
    Expr ry = te::FloorMod(y, Expr(s_h)), ys = te::FloorDiv(y, Expr(s_h));
    return (((c4 * s_h + ry) * s_w + rx) * layout.rows + ys) * cols + xs;
  };
  auto at = [&](const Expr& c4, const Expr& y, int64_t rx, const Expr& xs, int64_t j) {
    return word_at(c4, y, rx, xs) * kDotDepth + j;
  };
  // Columns [begin, end) of column phase rx in row y of quad c4 set to zu.
  auto fill = [&](const Expr& c4, const Expr& y, int64_t rx, int64_t begin, int64_t end) {
    return Range("f", begin * kDotDepth, end * kDotDepth, ForKind::kVectorized,
                 [&](const Expr& i) { return lower::Store(xq, at(c4, y, rx, 0, 0) + i, zu); });
  };
  auto fill_row = [&](const Expr& c4, const Expr& y) {
    std::vector<Stmt> phases;
    for (int64_t rx = 0; rx < s_w; ++rx) phases.push_back(fill(c4, y, rx, 0, cols));
    return SeqOf(phases);
  };
  // Tasks over the quads where there are several, else over the image's rows (a 3-channel stem
  // is one quad).
  const int64_t bytes = quads * layout.QuadWords() * kDotDepth;
  const bool par_quads = opts.parallel && full > 1 && bytes >= opts.parallel_min_work;
  const ForKind rows_kind =
      opts.parallel && !par_quads && quads == 1 && m.h > 1 && bytes >= opts.parallel_min_work
          ? ForKind::kParallel
          : ForKind::kSerial;
  // Quad c4 holding `channels` of the data's channels (4, or the rest in the last quad: the
  // bytes past them are zu, which the zero weights there ignore): padding rows and columns
  // filled, the image's columns of each column phase copied in vector steps.
  auto quad = [&](const Expr& c4, int64_t channels) {
    auto fill_rows = [&](const std::string& name, int64_t begin, int64_t end) {
      return Range(name, begin, end, ForKind::kSerial,
                   [&](const Expr& y) { return fill_row(c4, y); });
    };
    Stmt inside = Range("y", m.pad_t, m.pad_t + m.h, rows_kind, [&](const Expr& y) {
      std::vector<Stmt> phases;
      for (int64_t rx = 0; rx < s_w; ++rx) {
        // Columns xs of this phase whose padded column xs * s_w + rx is in the image.
        const int64_t lo = std::max<int64_t>(0, (m.pad_l - rx + s_w - 1) / s_w);
        const int64_t hi = std::min(cols, (m.pad_l + m.w - rx + s_w - 1) / s_w);
        Stmt copy = Range("x", lo, hi, ForKind::kVectorized, [&](const Expr& xs) {
          if (views.x32 && channels == kDotDepth && shift == 0) {
            // Blocked data as it is: read as words, NCHW[x]c bytes are the channel quads in
            // NCHW[x/4]c, so a quad is one word.
            Expr word = NchwOrBlockedIndex(m.in_block / kDotDepth, m.c / kDotDepth, m.h, m.w, n, c4,
                                           y - m.pad_t, xs * s_w + (rx - m.pad_l));
            return lower::Store(views.xq32, word_at(c4, y, rx, xs), BufferLoad(views.x32, word));
          }
          std::vector<Stmt> bytes;
          for (int64_t j = 0; j < kDotDepth; ++j) {
            Expr v = j < channels ? byte(c4 * kDotDepth + j, y - m.pad_t, xs * s_w + (rx - m.pad_l))
                                  : zu;
            bytes.push_back(lower::Store(xq, at(c4, y, rx, xs, j), v));
          }
          return lower::Seq(bytes);
        });
        phases.push_back(SeqOf({fill(c4, y, rx, 0, lo), copy, fill(c4, y, rx, hi, cols)}));
      }
      return SeqOf(phases);
    });
    return SeqOf(
        {fill_rows("yt", 0, m.pad_t), inside, fill_rows("yb", m.pad_t + m.h, layout.rows * s_h)});
  };
  return SeqOf({Range("c4", 0, full, par_quads ? ForKind::kParallel : ForKind::kSerial,
                      [&](const Expr& c4) { return quad(c4, kDotDepth); }),
                Range("c4t", full, quads, ForKind::kSerial,
                      [&](const Expr& c4) { return quad(c4, m.c - full * kDotDepth); })});
}

Expr Int8ConvDot(const Conv2dInt8Params& p, const Expr& acc, const Expr& data,
                 const Expr& weights) {
  if (Int8WeightHalves(p)) return te::DotS8S8Halves(acc, data, weights);
  if (p.signed_dot) return te::DotS8S8(acc, data, weights);
  return p.saturating_pairs ? te::DotU8S8Pairs(acc, data, weights)
                            : te::DotU8S8(acc, data, weights);
}

}  // namespace ember::compiler::schedule
