// Canonical forms of the ops along axes: the reductions (sorted, unique `axes` whatever the
// opset, `keepdims`), ArgMax/ArgMin (a normalized axis) and the softmax family (one axis; before
// opset 13 they flatten to 2-D, written out as Reshapes).
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>
#include <numeric>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

// kAxesInputSince: the opset from which `axes` is an input rather than an attribute.
template <int64_t kAxesInputSince>
void ReduceOp(Node n, CanonicalizeContext* ctx) {
  int64_t r = ctx->Rank(n, 0);
  std::vector<int64_t> axes;
  if (ctx->opset() >= kAxesInputSince) {
    if (auto c = ctx->ConstInput(n, 1, "axes")) axes = c->ToIntVector();
  } else {
    axes = n.GetInts("axes", {});
  }
  ctx->DropInputsFrom(n, 1);
  if (axes.empty()) {
    if (n.GetInt("noop_with_empty_axes", 0)) {
      n.op = "Identity";
      n.attrs.clear();
      ctx->EmitInto(std::move(n));
      return;
    }
    axes.resize(static_cast<size_t>(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (auto& a : axes) a = NormalizeAxis(n, a, r, "axes entry");
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  n.attrs.erase("noop_with_empty_axes");
  n.attrs["axes"] = axes;
  n.attrs["keepdims"] = n.GetInt("keepdims", 1);
  ctx->EmitInto(std::move(n));
}

void ArgOp(Node n, CanonicalizeContext* ctx) {
  n.attrs["axis"] = NormalizeAxis(n, n.GetInt("axis", 0), ctx->Rank(n, 0));
  ctx->EmitInto(std::move(n));
}

// Before opset 13 Softmax/LogSoftmax/Hardmax flatten to 2-D at `axis` (default 1).
void SoftmaxOp(Node n, CanonicalizeContext* ctx) {
  const int64_t opset = ctx->opset();
  int64_t r = ctx->Rank(n, 0);
  int64_t axis = NormalizeAxis(n, n.GetInt("axis", opset >= 13 ? -1 : 1), r);
  if (opset >= 13 || axis == r - 1 || r == 0) {
    n.attrs["axis"] = r == 0 ? 0 : (opset >= 13 ? axis : r - 1);
    ctx->EmitInto(std::move(n));
    return;
  }
  const std::vector<int64_t> shape = ctx->TypeOf(n.inputs[0]).shape;  // copy: Emit adds values
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= shape[i];
  int64_t flat = ctx->Emit("Reshape", n.name + "_flatten", {n.inputs[0]},
                           {{"__out_shape", std::vector<int64_t>{outer, inner}}});
  int64_t sm = ctx->Emit(n.op, n.name, {static_cast<int>(flat)}, {{"axis", int64_t{1}}});
  ctx->EmitInto(Node{"Reshape",
                     n.name + "_unflatten",
                     {{"__out_shape", shape}},
                     {static_cast<int>(sm)},
                     n.outputs});
}

const bool kRegistered = [] {
  auto reg = [](const char* op, FCanonicalize fn) {
    OpRegistry::Global()->Mutable(op).set_canonicalize(fn);
  };
  reg("ReduceSum", ReduceOp<13>);
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                         "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    reg(op, ReduceOp<18>);
  }
  for (const char* op : {"ArgMax", "ArgMin"}) reg(op, ArgOp);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) reg(op, SoftmaxOp);
  return true;
}();

}  // namespace
}  // namespace compiler
}  // namespace ember
