// Depthwise 2-D convolution (one input channel per output channel) with its epilogue fused.
//
// Why not the wide conv: it copies the whole image into a stride-phase-split workspace with a
// bounds-checked select per element (gathers after vectorisation), accumulates one channel per
// block with a scalar reduction order, and runs the epilogue as a second pass over a workspace.
// A depthwise conv does 2 * KH * KW flops per output, so all of that overhead dominates.
//
// Here one parallel task is (image, channel, block of R output rows). The task first copies the
// block's (R - 1) * SH + KH input rows into a row buffer on the stack, zero-padded and split by
// the horizontal stride phase: buffer row r, phase p, column j holds padded input column
// j * SW + p. Interior columns are a plain (stride 1) or interleaved (stride 2: even/odd
// deinterleave with shuffles) vector copy without bounds checks; the few border columns take a
// guarded scalar path; rows outside the image are zero-filled. Tap (ky, kx) of output column ox
// then reads buffer row r * SH + ky, phase kx % SW, column ox + kx / SW: contiguous along ox.
// Output rows are computed in vectors of `lanes` columns (the last vector overlaps the previous
// one instead of taking a scalar remainder); the KH * KW weights are hoisted into scalars per
// task and the epilogue (bias, Clip/Relu, residual Add, ...) is applied before the one store.
#include <algorithm>
#include <memory>
#include <unordered_map>

#include "conv_group.h"
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

constexpr int64_t kRowBufferBudget = 6144;  // floats per task buffer (24 KiB: stays in L1)
constexpr int64_t kMaxRowBuffer = 1 << 14;  // floats: wider rows go to the generic schedule
constexpr int64_t kMaxTaps = 64;            // hoisted weight scalars per task

// Rebuilds a lowered expression with variables replaced. With `hoist` set, loads of argument
// buffers whose index involves none of `varying` (e.g. the bias of the task's channel) become
// reads of fresh scalar locals, and the loads themselves go to *hoisted (run once per task):
// inside the vector loop no argument is then read except through the output row's own index,
// so LLVM needs no runtime alias checks against the store.
struct Rewriter {
  std::unordered_map<const te::ExprNode*, Expr> vars;
  std::vector<const te::ExprNode*> varying;
  bool hoist = false;
  lower::LoweredFunc* f = nullptr;
  std::vector<Stmt>* hoisted = nullptr;
  int num_hoisted = 0;

  bool Varies(const Expr& e) const {
    switch (e.kind()) {
      case te::ExprKind::kVar:
        return std::find(varying.begin(), varying.end(), e.get()) != varying.end();
      case te::ExprKind::kBinary:
        return Varies(e.as<te::BinaryNode>()->a) || Varies(e.as<te::BinaryNode>()->b);
      case te::ExprKind::kNot:
        return Varies(e.as<te::NotNode>()->a);
      case te::ExprKind::kSelect: {
        auto* s = e.as<te::SelectNode>();
        return Varies(s->cond) || Varies(s->true_value) || Varies(s->false_value);
      }
      case te::ExprKind::kCast:
        return Varies(e.as<te::CastNode>()->value);
      case te::ExprKind::kCall:
        for (const Expr& a : e.as<te::CallNode>()->args) {
          if (Varies(a)) return true;
        }
        return false;
      case te::ExprKind::kBufferLoad:
        return true;  // loads stay in place unless hoisted themselves
      case te::ExprKind::kIntImm:
      case te::ExprKind::kFloatImm:
        return false;
      default:
        return true;
    }
  }

  Expr Visit(const Expr& e) {
    switch (e.kind()) {
      case te::ExprKind::kVar: {
        auto it = vars.find(e.get());
        return it == vars.end() ? e : it->second;
      }
      case te::ExprKind::kBinary: {
        auto* b = e.as<te::BinaryNode>();
        return te::Binary(b->op, Visit(b->a), Visit(b->b));
      }
      case te::ExprKind::kNot:
        return te::Not(Visit(e.as<te::NotNode>()->a));
      case te::ExprKind::kSelect: {
        auto* s = e.as<te::SelectNode>();
        return te::Select(Visit(s->cond), Visit(s->true_value), Visit(s->false_value));
      }
      case te::ExprKind::kCast:
        return te::Cast(e.dtype(), Visit(e.as<te::CastNode>()->value));
      case te::ExprKind::kCall: {
        auto* c = e.as<te::CallNode>();
        std::vector<Expr> a;
        for (const Expr& x : c->args) a.push_back(Visit(x));
        return Expr(std::make_shared<te::CallNode>(c->dtype, c->fn, std::move(a)));
      }
      case te::ExprKind::kBufferLoad: {
        auto* l = e.as<lower::BufferLoadNode>();
        Expr idx = Visit(l->index);
        if (hoist && l->buffer->scope == BufferScope::kArg && !Varies(l->index)) {
          Buffer local = lower::NewBuffer("epi" + std::to_string(num_hoisted++), l->buffer->dtype,
                                          1, BufferScope::kLocal);
          f->locals.push_back(local);
          // The load may have sat in an unselected arm: keep it inside the buffer.
          idx = te::Min(te::Max(idx, Expr(0)), Expr(l->buffer->size - 1));
          hoisted->push_back(lower::Store(local, 0, BufferLoad(l->buffer, idx)));
          return BufferLoad(local, 0);
        }
        return BufferLoad(l->buffer, idx);
      }
      default:
        return e;
    }
  }
};

}  // namespace

bool TryDepthwiseConv2d(const FusedGroup& group, const lower::ScheduleOptions& opts,
                        const DepthwiseParams& p, lower::LoweredFunc* out) {
  ConvGroup m;
  if (!MatchConvGroup(group, &m)) return false;
  if (!IsNchw(m.s)) return TryDepthwiseConv2dNchwc(group, opts, p, out);
  if (!Undilated(m.s)) return false;  // the row buffers hold adjacent taps
  const ConvShape& s = m.s;
  if (s.group != s.c || s.oc != s.c || s.icg != 1 || s.ocg != 1) return false;
  const int64_t taps = s.kh * s.kw;
  if (taps > kMaxTaps || p.lanes < 1) return false;

  // Row buffer geometry: P phases of JW columns per row, BR rows per block of R output rows.
  const int64_t phases = std::min(s.s_w, s.kw);
  const int64_t jw = s.ow + (s.kw - 1) / s.s_w;
  const int64_t pitch = phases * jw;
  if (pitch * s.kh > kMaxRowBuffer) return false;
  const int64_t r_max = std::max<int64_t>(1, (kRowBufferBudget / pitch - s.kh) / s.s_h + 1);
  const int64_t blocks = (s.oh + r_max - 1) / r_max;
  const int64_t rows = (s.oh + blocks - 1) / blocks;  // output rows per block
  const int64_t buf_rows = (rows - 1) * s.s_h + s.kh;

  lower::LoweredFunc f;
  Buffer xb, wb;
  EpilogueAt at;
  if (!BuildConvEpilogueAt(group, m, &f, &xb, &wb, &at)) return false;
  const Buffer& ob = f.args.back().buffer;
  const Node* conv = m.conv;
  Buffer row_buf = NewFloatBuffer(conv->name + "_rows", buf_rows * pitch, BufferScope::kLocal);
  f.locals.push_back(row_buf);
  std::vector<Buffer> wloc;
  for (int64_t k = 0; k < taps; ++k) {
    wloc.push_back(NewFloatBuffer("w" + std::to_string(k), 1, BufferScope::kLocal));
    f.locals.push_back(wloc.back());
  }

  // ---- one task: (plane = n * C + c, block of output rows) ----
  Expr t = te::MakeVar("t");
  Expr plane = blocks > 1 ? te::FloorDiv(t, Expr(blocks)) : t;
  Expr oy0 = blocks > 1 ? te::FloorMod(t, Expr(blocks)) * rows : Expr(0);
  Expr n = s.n > 1 ? te::FloorDiv(plane, Expr(s.c)) : Expr(0);
  Expr c = s.n > 1 ? te::FloorMod(plane, Expr(s.c)) : plane;
  std::vector<Stmt> task;
  for (int64_t k = 0; k < taps; ++k) {
    task.push_back(lower::Store(wloc[k], 0, BufferLoad(wb, c * taps + k)));
  }

  // Copy: buffer row rr holds input row iy = oy0 * SH - PT + rr.
  const int64_t j_lo = std::min(jw, (s.pad_l + s.s_w - 1) / s.s_w);
  const int64_t last = s.w - phases + s.pad_l;  // interior: j * SW <= last
  const int64_t j_hi = last < 0 ? j_lo : std::clamp(last / s.s_w + 1, j_lo, jw);
  Stmt copy = Range("rr", 0, buf_rows, ForKind::kSerial, [&](const Expr& rr) {
    Expr iy = oy0 * s.s_h + rr - s.pad_t;
    Expr src_row = (plane * s.h + iy) * s.w;
    Expr dst_row = rr * pitch;
    auto columns = [&](int64_t begin, int64_t end, bool guarded) {
      auto body = [&](const Expr& j) {
        std::vector<Stmt> v;
        for (int64_t ph = 0; ph < phases; ++ph) {
          Expr x = j * s.s_w + (ph - s.pad_l);
          Expr val = BufferLoad(xb, src_row + x);
          if (guarded) val = te::Select((x >= 0) && (x < s.w), val, F32(0));
          v.push_back(lower::Store(row_buf, dst_row + ph * jw + j, val));
        }
        return SeqOf(v);
      };
      return guarded ? Range("jb", begin, end, ForKind::kSerial, body)
                     : VectorSteps("j", begin, end - begin, p.lanes, body);
    };
    Stmt fill =
        SeqOf({columns(0, j_lo, true), columns(j_lo, j_hi, false), columns(j_hi, jw, true)});
    Stmt zero = Range("z", 0, pitch, ForKind::kVectorized,
                      [&](const Expr& z) { return lower::Store(row_buf, dst_row + z, F32(0)); });
    return lower::If((iy >= 0) && (iy < s.h), fill, zero);
  });
  task.push_back(copy);

  // Compute: output row oy0 + r in exact-width vector steps (see VectorSteps).
  // The epilogue at symbolic (oy, ox) with loads invariant in the task hoisted to its start.
  Expr oy_s = te::MakeVar("oy"), ox_s = te::MakeVar("ox"),
       acc_s = te::MakeVar("acc", te::Float(32));
  Expr epilogue;
  {
    Rewriter h;
    h.varying = {oy_s.get(), ox_s.get(), acc_s.get()};
    h.hoist = true;
    h.f = &f;
    h.hoisted = &task;
    epilogue = h.Visit(at({n, c, oy_s, ox_s}, acc_s));
  }
  Stmt compute = Range("r", 0, rows, ForKind::kSerial, [&](const Expr& r) {
    Expr oy = oy0 + r;
    Stmt row = VectorSteps("ox", 0, s.ow, p.lanes, [&](const Expr& ox) {
      Expr acc;
      for (int64_t ky = 0; ky < s.kh; ++ky) {
        for (int64_t kx = 0; kx < s.kw; ++kx) {
          Expr idx = (r * s.s_h + ky) * pitch + ((kx % s.s_w) * jw + kx / s.s_w) + ox;
          Expr term = BufferLoad(wloc[ky * s.kw + kx], 0) * BufferLoad(row_buf, idx);
          acc = acc.defined() ? acc + term : term;
        }
      }
      Rewriter sub;
      sub.vars = {{oy_s.get(), oy}, {ox_s.get(), ox}, {acc_s.get(), acc}};
      return lower::Store(ob, (plane * s.oh + oy) * s.ow + ox, sub.Visit(epilogue));
    });
    return blocks * rows > s.oh ? lower::If(oy < s.oh, row) : row;
  });
  task.push_back(compute);

  const int64_t tasks = s.n * s.c * blocks;
  const int64_t work = s.n * s.c * s.oh * s.ow * taps;
  bool par = opts.parallel && work >= opts.parallel_min_work && tasks > 1;
  f.body = lower::For(t, tasks, par ? ForKind::kParallel : ForKind::kSerial, SeqOf(task));
  f.prefer_vector_bits = p.prefer_vector_bits;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
