// MaxPool in NCHW[x]c: one pixel's x channels are one vector, so the window's maximum is a
// vector max over its taps (taps in the padding skipped), one store per output pixel with the
// group's elementwise epilogue (a float16 model's casts, an activation, a quantized model's
// requantization) applied in registers. Float32 or 8-bit data (a quantized model pools its bytes:
// fuse_qdq.cc). One parallel task is (image, channel block, output row). A global pool in
// NCHW[x]c (GlobalAveragePool / GlobalMaxPool) likewise sums or maxes a block's pixels as vectors,
// one task per (image, channel block).
#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/window_attrs.h>

#include <limits>

#include "epilogue.h"
#include "loop_builders.h"
#include "schedule.h"

namespace ember::compiler::schedule {
namespace {

// The group's first node when it is a one-output pool reading a blocked value (its block in
// *block), else null.
const Node* BlockedPoolOf(const FusedGroup& group, int64_t* block) {
  if (group.nodes.empty() || group.outputs.size() != 1) return nullptr;
  const Node& pool = *group.nodes[0];
  *block = LayoutBlock(pool.GetString(kDataLayoutAttr, "NCHW"));
  return *block >= 1 && pool.outputs.size() == 1 ? &pool : nullptr;
}

// The lowered function with the group's epilogue after the pool, on vectors of `lanes` values
// of `scalar` type; false when the epilogue does not vectorize so.
bool PoolEpilogue(const FusedGroup& group, const Node& pool, int lanes, te::DataType scalar,
                  lower::LoweredFunc* f, lower::Buffer* x, EpilogueAt* at) {
  // The pool has no weight: its data stands in for one.
  const AnchorOperands operands{pool.inputs[0], pool.inputs[0], -1, nullptr};
  lower::Buffer unused;
  return BuildEpilogueAt(group, pool, operands, f, x, &unused, at) &&
         EpilogueVectorizes(*at, lanes, scalar);
}

}  // namespace

bool TryMaxPool2dNchwc(const FusedGroup& group, const lower::ScheduleOptions& opts,
                       lower::LoweredFunc* out) {
  int64_t block = 0;
  const Node* found = BlockedPoolOf(group, &block);
  if (found == nullptr || found->op != "MaxPool") return false;
  const Node& pool = *found;
  const Graph& g = *group.graph;
  const TensorType& xt = g.value(pool.inputs[0]).type;
  const TensorType& ot = g.value(pool.outputs[0]).type;
  if (xt.shape.size() != 5 || ot.shape.size() != 5 ||
      (xt.dtype != kFloat32 && xt.dtype != kUInt8 && xt.dtype != kInt8)) {
    return false;
  }
  WindowAttrs win;
  std::string why;
  if (!WindowAttrs::Read(pool, 2, {}, &win, &why) || !win.Undilated()) return false;
  const std::vector<int64_t>&k = win.kernel, &st = win.strides, &pads = win.pads;
  const int64_t planes = xt.shape[0] * xt.shape[1], h = xt.shape[2], w = xt.shape[3];
  const int64_t oh = ot.shape[2], ow = ot.shape[3];
  const int lanes = static_cast<int>(block);

  lower::LoweredFunc f;
  lower::Buffer x;
  EpilogueAt at;
  const te::DataType vector = te::WithLanes(xt.dtype, lanes);
  if (!PoolEpilogue(group, pool, lanes, te::WithLanes(xt.dtype, 1), &f, &x, &at)) return false;
  const lower::Buffer y = f.args.back().buffer;
  lower::Buffer acc = lower::NewBuffer("acc", vector, 1, lower::BufferScope::kLocal);
  f.locals.push_back(acc);

  te::Expr t = te::MakeVar("t"), ox = te::MakeVar("ox");
  te::Expr plane = te::FloorDiv(t, te::Expr(oh)), oy = te::FloorMod(t, te::Expr(oh));
  std::vector<lower::Stmt> pixel{lower::Store(
      acc, 0,
      xt.dtype == kFloat32 ? te::Const(vector, -std::numeric_limits<float>::infinity())
                           : te::Broadcast(te::MinValue(te::WithLanes(xt.dtype, 1)), lanes))};
  for (int64_t kh = 0; kh < k[0]; ++kh) {
    for (int64_t kw = 0; kw < k[1]; ++kw) {
      te::Expr iy = oy * st[0] + (kh - pads[0]), ix = ox * st[1] + (kw - pads[1]);
      te::Expr in = lower::VectorLoad(x, ((plane * h + iy) * w + ix) * block, lanes);
      pixel.push_back(lower::If((iy >= 0) && (iy < h) && (ix >= 0) && (ix < w),
                                lower::Store(acc, 0, te::Max(lower::BufferLoad(acc, 0), in))));
    }
  }
  const int64_t blocks = xt.shape[1];
  te::Expr n = te::FloorDiv(plane, te::Expr(blocks)), cb = te::FloorMod(plane, te::Expr(blocks));
  pixel.push_back(
      lower::Store(y, ((plane * oh + oy) * ow + ox) * block,
                   EpilogueOnBlockVector(at, n, cb, oy, ox, lower::BufferLoad(acc, 0), lanes)));
  lower::Stmt row = lower::KeepScalarFor(ox, ow, lower::Seq(pixel));
  const int64_t tasks = planes * oh;
  const bool par = opts.parallel && tasks > 1 &&
                   planes * oh * ow * block * k[0] * k[1] >= opts.parallel_min_work;
  f.body = lower::For(t, tasks, par ? lower::ForKind::kParallel : lower::ForKind::kSerial, row);
  *out = std::move(f);
  return true;
}

bool TryGlobalPoolNchwc(const FusedGroup& group, const lower::ScheduleOptions& opts,
                        lower::LoweredFunc* out) {
  int64_t block = 0;
  const Node* found = BlockedPoolOf(group, &block);
  const bool is_max = found != nullptr && found->op == "GlobalMaxPool";
  if (found == nullptr || (!is_max && found->op != "GlobalAveragePool")) return false;
  const Node& pool = *found;
  const TensorType& xt = group.graph->value(pool.inputs[0]).type;
  if (xt.shape.size() != 5 || xt.dtype != kFloat32) return false;
  const int64_t planes = xt.shape[0] * xt.shape[1], pixels = xt.shape[2] * xt.shape[3];
  const int lanes = static_cast<int>(block);
  lower::LoweredFunc f;
  lower::Buffer x;
  EpilogueAt at;
  if (pixels < 1 || !PoolEpilogue(group, pool, lanes, te::Float(32), &f, &x, &at)) return false;
  // One task per (image, channel block): the block's pixels summed (or maxed) as vectors.
  lower::Buffer acc = NewVectorAccumulator("acc", block);
  f.locals.push_back(acc);
  te::Expr t = te::MakeVar("t");
  const te::Expr init = te::Const(acc->dtype, is_max ? -std::numeric_limits<float>::infinity() : 0);
  lower::Stmt sum = Range("p", 0, pixels, lower::ForKind::kSerial, [&](const te::Expr& p) {
    te::Expr in = lower::VectorLoad(x, (t * pixels + p) * block, lanes);
    te::Expr a = lower::BufferLoad(acc, 0);
    return lower::Store(acc, 0, is_max ? te::Max(a, in) : a + in);
  });
  te::Expr value = lower::BufferLoad(acc, 0);
  if (!is_max) value = value * F32(1.0 / static_cast<double>(pixels));
  const int64_t blocks = xt.shape[1];
  te::Expr n = te::FloorDiv(t, te::Expr(blocks)), cb = te::FloorMod(t, te::Expr(blocks));
  lower::Stmt store = lower::Store(f.args.back().buffer, t * block,
                                   EpilogueOnBlockVector(at, n, cb, 0, 0, value, lanes));
  const bool par = opts.parallel && planes > 1 && planes * pixels * block >= opts.parallel_min_work;
  f.body = lower::For(t, planes, par ? lower::ForKind::kParallel : lower::ForKind::kSerial,
                      lower::Seq({lower::Store(acc, 0, init), sum, store}));
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
