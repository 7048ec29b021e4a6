// Pooling over NCHW planes: MaxPool (without Indices), AveragePool (2-D, and 1-D as one row),
// GlobalMaxPool and GlobalAveragePool, float32, optionally followed by elementwise/broadcast
// epilogue nodes.
//
// Why the default schedule is slow: it lowers a windowed pool as a reduction whose update is
// `select(in_bounds, max(acc, x[...]), acc)`; codegen clamps every load inside a select arm, so
// the index is no longer affine and LLVM vectorises the output loop with gathers (or not at all),
// re-evaluating the bounds test per tap and element. Global pools reduce into one scalar, which
// LLVM may not vectorise without reassociating the float sum.
//
// Windowed pools here: parallel over planes (n, c); per output row, a row buffer split by the
// horizontal stride phase (R[p][j] holds padded column j*S + p) receives the vertical reduction of
// the window's input rows: in one pass for interior output rows (all kernel rows exist), else
// starting from the padding value (-inf for max, 0 for average) and folding in the rows that
// exist. Interior columns read the input rows contiguously (an interleave group of factor S, no
// gathers, no bounds checks); the few border columns take a guarded scalar path. The output row
// then reduces the kernel columns as contiguous reads R[kw % S][ow + kw / S], vectorised along the
// output width with no bounds checks. Global pools accumulate `kLanes` independent partial
// results per plane (a vector of accumulators) and combine them at the end.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/ir/window_attrs.h>

#include <algorithm>
#include <functional>
#include <map>

#include "epilogue.h"
#include "loop_builders.h"
#include "schedule.h"

namespace ember::compiler::schedule {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::BufferScope;
using lower::ForKind;
using lower::Stmt;
using te::Expr;
using te::Tensor;

constexpr int64_t kLanes = 16;           // partial results of a global pool
constexpr int64_t kMaxRowBuf = 1 << 14;  // floats of the per-row buffer (on the stack)

bool IsF32(DLDataType t) { return t.code == kDLFloat && t.bits == 32 && t.lanes == 1; }

// Number of taps k in [0, K) with lo <= start + k < hi.
Expr TapCount(const Expr& start, int64_t K, int64_t lo, int64_t hi) {
  Expr kmin = te::Max(Expr(0), Expr(lo) - start);
  Expr kmax = te::Min(Expr(K - 1), Expr(hi - 1) - start);
  return te::Max(Expr(0), kmax - kmin + 1);
}

enum class PoolKind { kMax, kAvg, kGlobalMax, kGlobalAvg };

struct PoolShape {
  PoolKind kind;
  int64_t planes = 0;  // N * C
  int64_t h = 1, w = 1, oh = 1, ow = 1;
  int64_t kh = 1, kw = 1, s_h = 1, s_w = 1;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  bool include_pad = false;
  int64_t spatial = 1;  // global pools: elements per plane
};

// Reads the pool node; false when it is not one this schedule computes exactly.
bool ReadPool(const Graph& g, const Node& n, PoolShape* s) {
  if (n.op == "MaxPool") {
    s->kind = PoolKind::kMax;
    if (n.outputs.size() != 1) return false;  // Indices: default schedule
  } else if (n.op == "AveragePool") {
    s->kind = PoolKind::kAvg;
  } else if (n.op == "GlobalMaxPool") {
    s->kind = PoolKind::kGlobalMax;
  } else if (n.op == "GlobalAveragePool") {
    s->kind = PoolKind::kGlobalAvg;
  } else {
    return false;
  }
  if (!n.HasInput(0) || n.outputs.size() != 1) return false;
  const TensorType& xt = g.value(n.inputs[0]).type;
  const TensorType& ot = g.value(n.outputs[0]).type;
  if (!IsF32(xt.dtype) || !IsF32(ot.dtype)) return false;
  for (int64_t d : xt.shape) {
    if (d <= 0) return false;
  }
  if (s->kind == PoolKind::kGlobalMax || s->kind == PoolKind::kGlobalAvg) {
    if (xt.shape.size() < 3 || ot.shape.size() != xt.shape.size()) return false;
    if (ot.shape[0] != xt.shape[0] || ot.shape[1] != xt.shape[1]) return false;
    s->planes = xt.shape[0] * xt.shape[1];
    s->spatial = 1;
    for (size_t d = 2; d < xt.shape.size(); ++d) {
      if (ot.shape[d] != 1) return false;
      s->spatial *= xt.shape[d];
    }
    return true;
  }
  // 2-D pools, and 1-D ones as a single row.
  const size_t rank = xt.shape.size();
  if ((rank != 3 && rank != 4) || ot.shape.size() != rank) return false;
  if (ot.shape[0] != xt.shape[0] || ot.shape[1] != xt.shape[1]) return false;
  const size_t sp = rank - 2;
  WindowAttrs win;
  std::string why;
  if (!WindowAttrs::Read(n, sp, {}, &win, &why) || !win.Undilated()) return false;
  const std::vector<int64_t>&k = win.kernel, &st = win.strides, &pads = win.pads;
  for (int64_t v : pads) {
    if (v < 0) return false;
  }
  s->planes = xt.shape[0] * xt.shape[1];
  if (sp == 2) {
    s->h = xt.shape[2];
    s->oh = ot.shape[2];
    s->kh = k[0];
    s->s_h = st[0];
    s->pad_t = pads[0];
    s->pad_b = pads[2];
  }
  s->w = xt.shape[rank - 1];
  s->ow = ot.shape[rank - 1];
  s->kw = k[sp - 1];
  s->s_w = st[sp - 1];
  s->pad_l = pads[sp - 1];
  s->pad_r = pads[2 * sp - 1];
  s->include_pad = win.count_include_pad;
  if (s->kh <= 0 || s->kw <= 0 || s->s_h <= 0 || s->s_w <= 0 || s->s_w > 8) return false;
  if (s->oh <= 0 || s->ow <= 0) return false;
  const int64_t jw = s->ow + (s->kw - 1) / s->s_w;
  if (jw * s->s_w > kMaxRowBuf) return false;
  return true;
}

// The loop nest of a windowed pool from xb (the input) into ob (shape [planes, oh, ow]).
Stmt WindowPool(const PoolShape& s, const Buffer& xb, const Buffer& ob, const Buffer& row,
                bool parallel) {
  const bool is_max = s.kind == PoolKind::kMax;
  const int64_t sw = s.s_w;
  const int64_t jw = s.ow + (s.kw - 1) / sw;  // phase columns per phase
  auto combine = [&](const Expr& a, const Expr& b) { return is_max ? te::Max(a, b) : a + b; };
  Expr pad_value = is_max ? te::MinValue(te::Float(32)) : F32(0);
  Expr plane = te::MakeVar("plane");

  // Interior phase columns: every phase p of column j reads an input column inside [0, w).
  const int64_t j_lo = std::min(jw, (s.pad_l + sw - 1) / sw);
  const int64_t last = s.w - sw + s.pad_l;  // j * sw <= last
  const int64_t j_hi = last < 0 ? j_lo : std::max(j_lo, std::min(jw, last / sw + 1));
  // Interior output rows: every kernel row reads an input row inside [0, h).
  const int64_t oy_lo = std::min(s.oh, (s.pad_t + s.s_h - 1) / s.s_h);
  const int64_t last_y = s.h - s.kh + s.pad_t;  // oy * s_h <= last_y
  const int64_t oy_hi = last_y < 0 ? oy_lo : std::max(oy_lo, std::min(s.oh, last_y / s.s_h + 1));

  // Fills the phase-split row buffer for output row oy. `value(x)` is the vertical reduction at
  // input column x (valid for x in [0, w)); guarded columns use the padding value outside.
  auto fill_row = [&](const std::function<Stmt(const Expr& idx, const Expr& x, bool guarded)>& f) {
    auto columns = [&](int64_t begin, int64_t end, bool guarded) {
      return Range(guarded ? "jb" : "j", begin, end,
                   guarded ? ForKind::kSerial : ForKind::kVectorized, [&](const Expr& j) {
                     std::vector<Stmt> v;
                     for (int64_t p = 0; p < sw; ++p) {
                       v.push_back(f(Expr(p * jw) + j, j * sw + (p - s.pad_l), guarded));
                     }
                     return SeqOf(v);
                   });
    };
    return SeqOf({columns(0, j_lo, true), columns(j_lo, j_hi, false), columns(j_hi, jw, true)});
  };
  auto in_range = [&](const Expr& x) { return (x >= 0) && (x < s.w); };
  // Interior rows: all kernel rows are inside, one pass reduces them in registers.
  auto rows_fused = [&](const Expr& oy) {
    return fill_row([&](const Expr& idx, const Expr& x, bool guarded) {
      Expr acc;
      for (int64_t k = 0; k < s.kh; ++k) {
        Expr v = BufferLoad(xb, (plane * s.h + oy * s.s_h + (k - s.pad_t)) * s.w + x);
        acc = acc.defined() ? combine(acc, v) : v;
      }
      if (guarded) acc = te::Select(in_range(x), acc, pad_value);
      return lower::Store(row, idx, acc);
    });
  };
  // Border rows: start from the padding value and fold in the kernel rows that exist.
  auto rows_guarded = [&](const Expr& oy) {
    Stmt fill = Range("f", 0, sw * jw, ForKind::kVectorized,
                      [&](const Expr& i) { return lower::Store(row, i, pad_value); });
    Expr ky = te::MakeVar("ky");
    Expr iy = oy * s.s_h + ky - s.pad_t;
    Stmt acc = fill_row([&](const Expr& idx, const Expr& x, bool guarded) {
      Expr upd = combine(BufferLoad(row, idx), BufferLoad(xb, (plane * s.h + iy) * s.w + x));
      if (guarded) upd = te::Select(in_range(x), upd, BufferLoad(row, idx));
      return lower::Store(row, idx, upd);
    });
    Stmt rows = lower::For(ky, s.kh, ForKind::kSerial, lower::If((iy >= 0) && (iy < s.h), acc));
    return SeqOf({fill, rows});
  };
  // Output row: kernel columns read R[kw % S][ox + kw / S].
  auto out_row = [&](const Expr& oy) {
    return Range("ox", 0, s.ow, ForKind::kVectorized, [&](const Expr& ox) {
      Expr acc;
      for (int64_t k = 0; k < s.kw; ++k) {
        Expr v = BufferLoad(row, Expr((k % sw) * jw + k / sw) + ox);
        acc = acc.defined() ? combine(acc, v) : v;
      }
      if (!is_max) {
        int64_t lo_h = s.include_pad ? -s.pad_t : 0, hi_h = s.include_pad ? s.h + s.pad_b : s.h;
        int64_t lo_w = s.include_pad ? -s.pad_l : 0, hi_w = s.include_pad ? s.w + s.pad_r : s.w;
        Expr count = TapCount(oy * s.s_h - s.pad_t, s.kh, lo_h, hi_h) *
                     TapCount(ox * s.s_w - s.pad_l, s.kw, lo_w, hi_w);
        acc = acc / te::Cast(te::Float(32), te::Max(count, Expr(1)));
      }
      return lower::Store(ob, (plane * s.oh + oy) * s.ow + ox, acc);
    });
  };
  auto guarded_rows = [&](const Expr& oy) { return SeqOf({rows_guarded(oy), out_row(oy)}); };
  auto fused_rows = [&](const Expr& oy) { return SeqOf({rows_fused(oy), out_row(oy)}); };
  Stmt per_plane = SeqOf({Range("oyt", 0, oy_lo, ForKind::kSerial, guarded_rows),
                          Range("oy", oy_lo, oy_hi, ForKind::kSerial, fused_rows),
                          Range("oyb", oy_hi, s.oh, ForKind::kSerial, guarded_rows)});
  return lower::For(plane, s.planes, parallel ? ForKind::kParallel : ForKind::kSerial, per_plane);
}

// Global pool: kLanes partial results per plane, then their combination.
Stmt GlobalPool(const PoolShape& s, const Buffer& xb, const Buffer& ob, const Buffer& part,
                bool parallel) {
  const bool is_max = s.kind == PoolKind::kGlobalMax;
  auto combine = [&](const Expr& a, const Expr& b) { return is_max ? te::Max(a, b) : a + b; };
  Expr init = is_max ? te::MinValue(te::Float(32)) : F32(0);
  Expr plane = te::MakeVar("plane");
  Expr base = plane * s.spatial;
  const int64_t chunks = s.spatial / kLanes;
  const int64_t tail = s.spatial % kLanes;
  Stmt fill = Range("v", 0, kLanes, ForKind::kVectorized,
                    [&](const Expr& v) { return lower::Store(part, v, init); });
  Stmt body = Range("i", 0, chunks, ForKind::kSerial, [&](const Expr& i) {
    return Range("v", 0, kLanes, ForKind::kVectorized, [&](const Expr& v) {
      return lower::Store(part, v,
                          combine(BufferLoad(part, v), BufferLoad(xb, base + i * kLanes + v)));
    });
  });
  Stmt rest = Range("t", 0, tail, ForKind::kSerial, [&](const Expr& t) {
    return lower::Store(part, t,
                        combine(BufferLoad(part, t), BufferLoad(xb, base + chunks * kLanes + t)));
  });
  // Pairwise combination of the partial results (a fixed tree, independent of the target).
  std::vector<Stmt> tree;
  for (int64_t half = kLanes / 2; half >= 1; half /= 2) {
    tree.push_back(Range("h", 0, half, ForKind::kSerial, [&](const Expr& h) {
      return lower::Store(part, h, combine(BufferLoad(part, h), BufferLoad(part, h + half)));
    }));
  }
  Expr result = BufferLoad(part, 0);
  if (!is_max) result = result * F32(1.0 / static_cast<double>(s.spatial));
  Stmt store = lower::Store(ob, plane, result);
  std::vector<Stmt> seq = {fill, body, rest};
  seq.insert(seq.end(), tree.begin(), tree.end());
  seq.push_back(store);
  return lower::For(plane, s.planes, parallel ? ForKind::kParallel : ForKind::kSerial, SeqOf(seq));
}

}  // namespace

bool TryPool2d(const FusedGroup& group, const lower::ScheduleOptions& opts,
               lower::LoweredFunc* out) {
  const Graph& g = *group.graph;
  if (TryMaxPool2dNchwc(group, opts, out) || TryGlobalPoolNchwc(group, opts, out)) return true;
  // ---- does the group fit? one pool, then elementwise/broadcast nodes, one output ----
  const Node* pool = nullptr;
  for (const Node* n : group.nodes) {
    if (n->op == "MaxPool" || n->op == "AveragePool" || n->op == "GlobalMaxPool" ||
        n->op == "GlobalAveragePool") {
      if (pool != nullptr) return false;
      pool = n;
      continue;
    }
    const OpDef* def = OpRegistry::Global()->Find(n->op);
    if (def == nullptr || !def->has_compute()) return false;
    if (static_cast<int>(def->Pattern(*n)) > static_cast<int>(OpPattern::kBroadcast)) return false;
  }
  if (pool == nullptr || group.nodes.front() != pool || group.outputs.size() != 1) return false;
  PoolShape s;
  if (!ReadPool(g, *pool, &s)) return false;
  const int x_id = pool->inputs[0];
  if (!IsGroupInput(group, x_id)) return false;
  const Value& pv = g.value(pool->outputs[0]);
  const Value& gout = g.value(group.outputs[0]);
  // The pool computes in float32 (ReadPool); its epilogue may end in another type, e.g. a
  // QuantizeLinear's uint8 after a MaxPool between quantized convs.
  const bool direct = group.nodes.size() == 1;
  if (direct && gout.id != pv.id) return false;

  lower::LoweredFunc f;
  Buffer pool_out;
  if (direct) {
    // The pool writes the group output argument.
    f = GroupFunction(group);
    pool_out = f.args.back().buffer;
  } else {
    // The epilogue reads the pool's result from a workspace.
    const lower::ArgInfo raw{pool->name + "_pool", pv.type.shape, pv.type.dtype, nullptr};
    auto output = [](const Tensor& res, const std::map<int, Tensor>&) { return res; };
    if (!LowerEpilogue(group, *pool, raw, output, opts, &f, &pool_out)) return false;
  }
  Buffer xb = GroupInputBuffer(group, f, x_id);
  if (!xb) return false;

  Stmt pool_stmt;
  const bool global = s.kind == PoolKind::kGlobalMax || s.kind == PoolKind::kGlobalAvg;
  if (global) {
    Buffer part = NewFloatBuffer(pool->name + "_part", kLanes, BufferScope::kLocal);
    f.locals.push_back(part);
    int64_t work = s.planes * s.spatial;
    bool par = opts.parallel && work >= opts.parallel_min_work && s.planes > 1;
    pool_stmt = GlobalPool(s, xb, pool_out, part, par);
  } else {
    const int64_t jw = s.ow + (s.kw - 1) / s.s_w;
    Buffer row = NewFloatBuffer(pool->name + "_row", s.s_w * jw, BufferScope::kLocal);
    f.locals.push_back(row);
    int64_t work = s.planes * s.oh * s.ow * s.kh * s.kw;
    bool par = opts.parallel && work >= opts.parallel_min_work && s.planes > 1;
    pool_stmt = WindowPool(s, xb, pool_out, row, par);
  }
  f.body = direct ? pool_stmt : lower::Seq({pool_stmt, f.body});
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
