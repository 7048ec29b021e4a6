// Compute rules of the indexing ops that read their data at computed positions or compare
// positions: GatherElements, GatherND, OneHot, Trilu, EyeLike. Indices that arrive at run time
// are clamped here so no load leaves its tensor; lowering checks them first (IndexCheck), so the
// clamp never hides a bad one.
#include "op_common.h"

namespace ember::compiler::ops {
namespace {

// out[i] = data[i with axis replaced by indices[i]].
std::vector<Tensor> GatherElements(const Node& n, const std::vector<Tensor>& in,
                                   const std::vector<TensorType>& out) {
  const Tensor& data = In(n, in, 0);
  const Tensor& indices = In(n, in, 1);
  const int64_t axis = n.GetInt("axis");
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> di = i;
        di[axis] = ClampedIndex(indices(i), data.shape()[axis]);
        return data(di);
      },
      n.name + "_out")};
}

// out[b..., q..., rest...] = data[b..., indices[b..., q..., 0..k-1], rest...].
std::vector<Tensor> GatherND(const Node& n, const std::vector<Tensor>& in,
                             const std::vector<TensorType>& out) {
  const Tensor& data = In(n, in, 0);
  const Tensor& indices = In(n, in, 1);
  const int64_t b = n.GetInt("batch_dims");
  const int64_t q = indices.ndim() - 1;  // index axes, batch axes included
  const int64_t k = indices.shape().back();
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> tuple(i.begin(), i.begin() + q);
        tuple.push_back(Expr(0));
        std::vector<Expr> di(i.begin(), i.begin() + b);
        for (int64_t j = 0; j < k; ++j) {
          tuple.back() = Expr(j);
          di.push_back(ClampedIndex(indices(tuple), data.shape()[b + j]));
        }
        di.insert(di.end(), i.begin() + q, i.end());
        return data(di);
      },
      n.name + "_out")};
}

// out[..., c at axis, ...] = c == indices[...] (negative: + depth) ? on : off.
std::vector<Tensor> OneHot(const Node& n, const std::vector<Tensor>& in,
                           const std::vector<TensorType>& out) {
  const Tensor& indices = In(n, in, 0);
  const Tensor& values = In(n, in, 1);
  const int64_t axis = n.GetInt("axis"), depth = n.GetInt("depth");
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> ii = i;
        ii.erase(ii.begin() + axis);
        Expr k = te::Cast(te::Index(), indices(ii));  // float indices truncate, as ORT's
        k = te::Select(k < 0, k + depth, k);
        return te::Select(k == i[axis], values({Expr(1)}), values({Expr(0)}));
      },
      n.name + "_out")};
}

// Trilu: the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes, else 0.
std::vector<Tensor> Trilu(const Node& n, const std::vector<Tensor>& in,
                          const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  const int64_t k = n.GetInt("k");
  const bool upper = n.GetInt("upper") != 0;
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        const size_t r = i.size();
        Expr diagonal = i[r - 1] - i[r - 2];
        Expr keep = upper ? diagonal >= k : diagonal <= k;
        Expr v = x(i);
        return te::Select(keep, v, te::Const(v.dtype(), 0));
      },
      n.name + "_out")};
}

// EyeLike: ones on diagonal k (column - row == k), zeros elsewhere; the input gives the shape.
std::vector<Tensor> EyeLike(const Node& n, const std::vector<Tensor>&,
                            const std::vector<TensorType>& out) {
  const int64_t k = n.GetInt("k");
  const te::DataType t = ExprType(out.at(0).dtype);
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        return te::Select(i[1] - i[0] == k, te::Const(t, 1), te::Const(t, 0));
      },
      n.name + "_out")};
}

// ReverseSequence: the first len[b] steps of each batch entry reversed along the time axis.
std::vector<Tensor> ReverseSequence(const Node& n, const std::vector<Tensor>& in,
                                    const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  const Tensor& lens = In(n, in, 1);
  const int64_t time = n.GetInt("time_axis"), batch = n.GetInt("batch_axis");
  const int64_t steps = x.shape()[time];
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        Expr len = te::Cast(te::Index(), lens({i[batch]}));
        len = te::Min(te::Max(len, Expr(0)), Expr(steps));
        std::vector<Expr> xi = i;
        xi[time] = te::Select(i[time] < len, len - 1 - i[time], i[time]);
        return x(xi);
      },
      n.name + "_out")};
}

// The run-time positions each op reads from input 1 (lowering checks them before the kernel).
std::vector<RunTimeIndexRange> GatherElementsIndices(const Node& n,
                                                     const std::vector<TensorType>& in) {
  return {IndicesIntoAxis(in.at(0).shape, n.GetInt("axis"))};
}

std::vector<RunTimeIndexRange> GatherNDIndices(const Node& n, const std::vector<TensorType>& in) {
  const int64_t k = in.at(1).shape.back();
  std::vector<RunTimeIndexRange> tuple;
  for (int64_t j = 0; j < k; ++j) {
    tuple.push_back(IndicesIntoAxis(in.at(0).shape, n.GetInt("batch_dims") + j, j, k));
  }
  return tuple;
}

std::vector<RunTimeIndexRange> ReverseSequenceLengths(const Node& n,
                                                      const std::vector<TensorType>& in) {
  const int64_t axis = n.GetInt("time_axis"), steps = in.at(0).shape.at(static_cast<size_t>(axis));
  RunTimeIndexRange r;
  r.extent = steps + 1;
  r.non_negative = true;
  r.input = "sequence_lens";
  r.what =
      "a length outside 0.." + std::to_string(steps) + " (time axis " + std::to_string(axis) + ")";
  return {r};
}

const bool kRegistered = [] {
  auto reg = [](const char* op, FCompute fn) { OpRegistry::Global()->Mutable(op).set_compute(fn); };
  reg("GatherElements", GatherElements);
  reg("GatherND", GatherND);
  OpRegistry::Global()->Mutable("GatherElements").set_runtime_indices(GatherElementsIndices);
  OpRegistry::Global()->Mutable("GatherND").set_runtime_indices(GatherNDIndices);
  OpRegistry::Global()->Mutable("ReverseSequence").set_runtime_indices(ReverseSequenceLengths);
  reg("OneHot", OneHot);
  reg("Trilu", Trilu);
  reg("EyeLike", EyeLike);
  reg("ReverseSequence", ReverseSequence);
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
