#include "op_common.h"

#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/tensor_type.h>

namespace ember::compiler::ops {

namespace {
thread_local const Graph* g_current_graph = nullptr;
}  // namespace

GraphScope::GraphScope(const Graph* g) : prev_(g_current_graph) { g_current_graph = g; }
GraphScope::~GraphScope() { g_current_graph = prev_; }
const Graph* GraphScope::Current() { return g_current_graph; }

HostTensorPtr ConstInput(const Node& node, size_t i) {
  if (!node.HasInput(i) || g_current_graph == nullptr) return nullptr;
  return g_current_graph->value(node.inputs[i]).constant;
}

const TensorType& InputType(const Node& node, size_t i) {
  if (!node.HasInput(i) || g_current_graph == nullptr) {
    Fail(node, "input " + std::to_string(i) + " is absent");
  }
  return g_current_graph->value(node.inputs[i]).type;
}

te::DataType ExprType(DLDataType t) { return te::IsBool(t) ? te::Bool() : t; }

Tensor ConstTensor(const HostTensor& data, const std::string& name) {
  constexpr int64_t kMaxInlineConstant = 256;
  int64_t n = data.NumElements();
  if (n > kMaxInlineConstant) {
    throw UnsupportedError("constant " + name + " with " + std::to_string(n) +
                           " elements cannot be embedded in a kernel (limit " +
                           std::to_string(kMaxInlineConstant) + "); it must be a parameter");
  }
  te::DataType dt = ExprType(data.type.dtype);
  auto value = [&](int64_t i) {
    return te::IsFloat(dt) ? te::Const(dt, data.GetAsDouble(i)) : te::IntImm(dt, data.GetAsInt(i));
  };
  std::vector<int64_t> shape = data.type.shape;
  return te::Compute(
      shape,
      [&](const std::vector<Expr>& idx) {
        if (n == 1) return value(0);
        Expr flat = 0;
        for (size_t d = 0; d < idx.size(); ++d) flat = flat * shape[d] + idx[d];
        Expr result = value(n - 1);
        for (int64_t i = n - 2; i >= 0; --i) result = te::Select(flat == i, value(i), result);
        return result;
      },
      name);
}

int64_t NormAxis(const Node& node, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1)) {
    Fail(node,
         "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return a;
}

void Unsupported(const Node& node, const std::string& what) {
  throw UnsupportedError(node.Describe() + ": " + what);
}

void RequireFloat(const Node& node, const Expr& x) {
  if (!te::IsFloat(x.dtype())) {
    Unsupported(node,
                "only floating-point inputs are supported, got " + te::DataTypeName(x.dtype()));
  }
}

void RequireInteger(const Node& node, const Expr& x) {
  if (te::IsFloat(x.dtype())) {
    Unsupported(node, "only integer inputs are supported, got " + te::DataTypeName(x.dtype()));
  }
}

void Fail(const Node& node, const std::string& what) {
  throw CompileError(node.Describe() + ": " + what);
}

Expr BroadcastLoad(const Tensor& t, const std::vector<Expr>& out_idx) {
  int rank = t.ndim();
  int out_rank = static_cast<int>(out_idx.size());
  std::vector<Expr> idx;
  for (int d = 0; d < rank; ++d) {
    int od = out_rank - rank + d;
    idx.push_back(t.shape()[d] == 1 ? Expr(0) : out_idx[od]);
  }
  return t(idx);
}

const Tensor& In(const Node& node, const std::vector<Tensor>& inputs, size_t i) {
  if (i >= inputs.size() || !inputs[i].defined()) {
    Fail(node, "input " + std::to_string(i) + " is required");
  }
  return inputs[i];
}

Tensor UnblockedView(const Tensor& t, int64_t block, const std::string& name) {
  if (block == 0) return t;
  return te::Compute(
      UnblockedShape(t.shape()),
      [&](const std::vector<Expr>& i) {
        return t(
            {i[0], te::FloorDiv(i[1], Expr(block)), i[2], i[3], te::FloorMod(i[1], Expr(block))});
      },
      name);
}

Tensor BlockedView(const Tensor& t, int64_t block, const std::string& name) {
  return te::Compute(
      BlockedShape(t.shape(), block),
      [&](const std::vector<Expr>& i) {
        return t({i[0], i[1] * block + i[4], i[2], i[3]});
      },
      name);
}

Expr IndexFromEnd(const Expr& k, int64_t extent) {
  Expr i = te::Cast(te::Index(), k);
  return te::Select(i < 0, i + extent, i);
}

Expr ClampedIndex(const Expr& k, int64_t extent) {
  return te::Min(te::Max(IndexFromEnd(k, extent), Expr(0)), Expr(extent - 1));
}

std::string RunTimeIndexMessage(const Node& node, const RunTimeIndexRange& range,
                                const std::string& value) {
  return node.Describe() + ": " + range.input + " '" + value + "' hold " + range.what + ": ";
}

RunTimeIndexRange IndicesIntoAxis(const std::vector<int64_t>& data, int64_t axis, int64_t first,
                                  int64_t step) {
  const int64_t dim = data.at(static_cast<size_t>(axis));
  RunTimeIndexRange r;
  r.extent = dim;
  r.first = first;
  r.step = step;
  r.input = "indices";
  r.what = "an index outside " + std::to_string(-dim) + ".." + std::to_string(dim - 1) + " (axis " +
           std::to_string(axis) + " has size " + std::to_string(dim) + ")";
  return r;
}

}  // namespace ember::compiler::ops
