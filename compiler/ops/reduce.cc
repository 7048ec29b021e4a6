// Compute rules of reductions, ArgMax/ArgMin, Softmax family and normalisations.
#include <algorithm>
#include <cmath>

#include "op_common.h"

namespace ember::compiler::ops {
namespace {

using te::IterVar;
using Shape = std::vector<int64_t>;

// Axes to reduce: "axes" attr (canonical), else constant input 1, else all; sorted.
std::vector<int64_t> ReduceAxes(const Node& n, int rank) {
  std::vector<int64_t> axes;
  if (n.HasAttr("axes")) {
    axes = n.GetInts("axes");
  } else if (HostTensorPtr c = ConstInput(n, 1)) {
    axes = c->ToIntVector();
  }
  if (axes.empty()) {
    if (n.GetInt("noop_with_empty_axes", 0) != 0) return {};
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (auto& a : axes) a = NormAxis(n, a, rank);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

// How a reduction over `dims` (sorted, unique) reads x: one reduce axis per reduced dim, and x's
// index for an output index. A reduced dim takes its reduce axis, any other the output's next
// index; a keepdims output (same rank as x) has a unit dim at each reduced position, skipped.
struct ReducedIndex {
  ReducedIndex(const Tensor& x, const std::vector<int64_t>& dims, size_t out_rank)
      : axis_of(x.ndim(), -1), keep(out_rank == static_cast<size_t>(x.ndim())) {
    for (size_t k = 0; k < dims.size(); ++k) {
      axes.push_back(te::ReduceAxis(x.shape()[dims[k]], "r" + std::to_string(dims[k])));
      axis_of[dims[k]] = static_cast<int>(k);
    }
  }

  std::vector<Expr> SourceIndex(const std::vector<Expr>& i) const {
    std::vector<Expr> xi;
    size_t o = 0;
    for (size_t d = 0; d < axis_of.size(); ++d) {
      if (axis_of[d] >= 0) {
        xi.push_back(axes[axis_of[d]].var);
        if (keep) ++o;
      } else {
        xi.push_back(i[o++]);
      }
    }
    return xi;
  }

  std::vector<IterVar> axes;
  std::vector<int> axis_of;  // per dim of x: its reduce axis's position in `axes`, or -1
  bool keep;
};

// Reduction of f(x) over axes with keepdims handling; `out_shape` from the graph.
Tensor ReduceOver(const Node& n, const Tensor& x, const std::vector<int64_t>& axes,
                  const Shape& out_shape, te::ReduceOp op, const std::function<Expr(Expr)>& pre,
                  const std::string& suffix) {
  ReducedIndex ri(x, axes, out_shape.size());
  return te::Compute(
      out_shape,
      [&](const std::vector<Expr>& i) {
        Expr v = x(ri.SourceIndex(i));
        return te::Reduce(op, pre ? pre(v) : v, ri.axes);
      },
      n.name + suffix);
}

std::vector<Tensor> ReduceOp(const Node& n, const std::vector<Tensor>& in,
                             const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  const Shape& oshape = out.at(0).shape;
  std::vector<int64_t> axes = ReduceAxes(n, x.ndim());
  if (axes.empty()) {
    return {te::Compute(
        oshape, [&](const std::vector<Expr>& i) { return x(i); }, n.name + "_out")};
  }
  int64_t count = 1;
  for (int64_t a : axes) count *= x.shape()[a];
  te::DataType t = x.dtype();
  const std::string& op = n.op;
  auto post = [&](Tensor red, const std::function<Expr(Expr)>& f) {
    return te::Compute(
        oshape, [&](const std::vector<Expr>& i) { return f(red(i)); }, n.name + "_out");
  };
  if (op == "ReduceSum")
    return {ReduceOver(n, x, axes, oshape, te::ReduceOp::kSum, nullptr, "_out")};
  if (op == "ReduceMax")
    return {ReduceOver(n, x, axes, oshape, te::ReduceOp::kMax, nullptr, "_out")};
  if (op == "ReduceMin")
    return {ReduceOver(n, x, axes, oshape, te::ReduceOp::kMin, nullptr, "_out")};
  if (op == "ReduceProd") {
    return {ReduceOver(n, x, axes, oshape, te::ReduceOp::kProd, nullptr, "_out")};
  }
  if (op == "ReduceMean") {
    Tensor s = ReduceOver(n, x, axes, oshape, te::ReduceOp::kSum, nullptr, "_sum");
    return {post(s, [&](Expr v) { return v / te::Const(t, static_cast<double>(count)); })};
  }
  if (op == "ReduceSumSquare") {
    return {ReduceOver(
        n, x, axes, oshape, te::ReduceOp::kSum, [](Expr v) { return v * v; }, "_out")};
  }
  if (op == "ReduceL1") {
    return {ReduceOver(
        n, x, axes, oshape, te::ReduceOp::kSum, [](Expr v) { return te::Abs(v); }, "_out")};
  }
  if (op == "ReduceL2") {
    Tensor s = ReduceOver(
        n, x, axes, oshape, te::ReduceOp::kSum, [](Expr v) { return v * v; }, "_sum");
    if (te::IsFloat(t)) return {post(s, [](Expr v) { return te::Sqrt(v); })};
    return {post(s, [&](Expr v) { return te::Cast(t, te::Sqrt(te::Cast(te::Float(64), v))); })};
  }
  if (op == "ReduceLogSum") {
    Tensor s = ReduceOver(n, x, axes, oshape, te::ReduceOp::kSum, nullptr, "_sum");
    return {post(s, [](Expr v) { return te::Log(v); })};
  }
  if (op == "ReduceLogSumExp") {
    Tensor m = ReduceOver(n, x, axes, oshape, te::ReduceOp::kMax, nullptr, "_max");
    // sum(exp(x - max)) needs the max at the reduced position: index m with keepdims layout.
    ReducedIndex ri(x, axes, oshape.size());
    Tensor s = te::Compute(
        oshape,
        [&](const std::vector<Expr>& i) {
          return te::Sum(te::Exp(x(ri.SourceIndex(i)) - m(i)), ri.axes);
        },
        n.name + "_sumexp");
    return {te::Compute(
        oshape, [&](const std::vector<Expr>& i) { return te::Log(s(i)) + m(i); }, n.name + "_out")};
  }
  Unsupported(n, "reduction " + op);
}

std::vector<Tensor> ArgOp(const Node& n, const std::vector<Tensor>& in,
                          const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  int64_t axis = NormAxis(n, n.GetInt("axis", 0), x.ndim());
  bool last = n.GetInt("select_last_index", 0) != 0;
  bool keep = static_cast<int>(out.at(0).shape.size()) == x.ndim();
  IterVar rk = te::ReduceAxis(x.shape()[axis], "r");
  te::ReduceOp op = n.op == "ArgMax" ? te::ReduceOp::kArgMax : te::ReduceOp::kArgMin;
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> xi;
        size_t o = 0;
        for (int d = 0; d < x.ndim(); ++d) {
          if (d == axis) {
            xi.push_back(rk.var);
            if (keep) ++o;
          } else {
            xi.push_back(i[o++]);
          }
        }
        return te::Reduce(op, x(xi), {rk}, Expr(), last);
      },
      n.name + "_out")};
}

// Softmax family over the dims [axis, rank) flattened (opset < 13 when "__coerce_2d" or legacy
// semantics are requested) or over a single axis (opset 13).
std::vector<Tensor> SoftmaxOp(const Node& n, const std::vector<Tensor>& in,
                              const std::vector<TensorType>&) {
  const Tensor& x = In(n, in, 0);
  int r = x.ndim();
  int64_t axis = NormAxis(n, n.GetInt("axis", -1), r);
  std::vector<int64_t> axes = {axis};
  if (n.GetInt("__coerce_2d", 0) != 0) {
    axes.clear();
    for (int d = static_cast<int>(axis); d < r; ++d) axes.push_back(d);
  }
  Shape keep_shape = x.shape();
  for (int64_t a : axes) keep_shape[a] = 1;
  te::DataType t = x.dtype();
  auto reduced_index = [&](const std::vector<Expr>& i) {
    std::vector<Expr> k = i;
    for (int64_t a : axes) k[a] = 0;
    return k;
  };
  // op over the axes of f(src element, kept index), src shaped as x.
  auto reduce_with = [&](const Tensor& src, te::ReduceOp op,
                         const std::function<Expr(Expr, const std::vector<Expr>&)>& f,
                         const std::string& suffix) {
    std::vector<IterVar> rk;
    for (int64_t a : axes) rk.push_back(te::ReduceAxis(x.shape()[a], "r"));
    return te::Compute(
        keep_shape,
        [&](const std::vector<Expr>& i) {
          std::vector<Expr> xi = i;
          for (size_t k = 0; k < axes.size(); ++k) xi[axes[k]] = rk[k].var;
          return te::Reduce(op, f(src(xi), i), rk);
        },
        n.name + suffix);
  };
  auto as_is = [](Expr v, const std::vector<Expr>&) { return v; };
  Tensor mx = reduce_with(x, te::ReduceOp::kMax, as_is, "_max");
  if (n.op == "Hardmax") {
    // first index of the max along the axes
    std::vector<IterVar> rk;
    for (int64_t a : axes) rk.push_back(te::ReduceAxis(x.shape()[a], "r"));
    if (axes.size() != 1) Unsupported(n, "Hardmax over several axes");
    Tensor am = te::Compute(
        keep_shape,
        [&](const std::vector<Expr>& i) {
          std::vector<Expr> xi = i;
          xi[axes[0]] = rk[0].var;
          return te::Reduce(te::ReduceOp::kArgMax, x(xi), rk);
        },
        n.name + "_argmax");
    return {te::Compute(
        x.shape(),
        [&](const std::vector<Expr>& i) {
          return te::Select(am(reduced_index(i)) == i[axes[0]], te::Const(t, 1), te::Const(t, 0));
        },
        n.name + "_out")};
  }
  // Softmax keeps its exponentials in a workspace as large as x (below); past 16 MB of them
  // (a long sequence's attention scores) it recomputes them instead, as LogSoftmax does.
  constexpr int64_t kMaxKeptExponentials = int64_t{1} << 22;
  if (n.op == "LogSoftmax" || x.NumElements() > kMaxKeptExponentials) {
    const bool log = n.op == "LogSoftmax";
    Tensor sum = reduce_with(
        x, te::ReduceOp::kSum,
        [&](Expr v, const std::vector<Expr>& i) { return te::Exp(v - mx(i)); }, "_sum");
    return {te::Compute(
        x.shape(),
        [&](const std::vector<Expr>& i) {
          std::vector<Expr> k = reduced_index(i);
          Expr shifted = x(i) - mx(k);
          return log ? shifted - te::Log(sum(k)) : te::Exp(shifted) / sum(k);
        },
        n.name + "_out")};
  }
  // Softmax: each exponential once, kept for the output, which then multiplies by the reciprocal
  // of its sum. Inlined, the sum and the output each computed it, and the output divided: a
  // 40 x 6625 softmax (PP-OCRv4 recognition's head) took 0.77 ms against ONNX Runtime's 0.28.
  Tensor e = te::ComputeMaterialized(
      x.shape(), [&](const std::vector<Expr>& i) { return te::Exp(x(i) - mx(reduced_index(i))); },
      n.name + "_exp");
  Tensor sum = reduce_with(e, te::ReduceOp::kSum, as_is, "_sum");
  Tensor inverse = te::ComputeMaterialized(
      keep_shape, [&](const std::vector<Expr>& i) { return te::Const(t, 1) / sum(i); },
      n.name + "_inverse");
  return {te::Compute(
      x.shape(), [&](const std::vector<Expr>& i) { return e(i) * inverse(reduced_index(i)); },
      n.name + "_out")};
}

// Mean and variance over `axes` (keep-dims shape), then (x - mean) / sqrt(var + eps).
struct Moments {
  Tensor mean, var;
  Shape keep_shape;
};

Moments ComputeMoments(const Node& n, const Tensor& x, const std::vector<int64_t>& axes) {
  Shape keep = x.shape();
  int64_t count = 1;
  for (int64_t a : axes) {
    count *= keep[a];
    keep[a] = 1;
  }
  te::DataType t = x.dtype();
  auto sum_of = [&](const std::function<Expr(Expr, const std::vector<Expr>&)>& f,
                    const std::string& suffix) {
    std::vector<IterVar> rk;
    for (int64_t a : axes) rk.push_back(te::ReduceAxis(x.shape()[a], "r"));
    return te::Compute(
        keep,
        [&](const std::vector<Expr>& i) {
          std::vector<Expr> xi = i;
          for (size_t k = 0; k < axes.size(); ++k) xi[axes[k]] = rk[k].var;
          return te::Sum(f(x(xi), i), rk);
        },
        n.name + suffix);
  };
  Expr inv = te::Const(t, 1.0 / static_cast<double>(count));
  Tensor s = sum_of([](Expr v, const std::vector<Expr>&) { return v; }, "_sum");
  Tensor mean = te::Compute(
      keep, [&](const std::vector<Expr>& i) { return s(i) * inv; }, n.name + "_mean");
  Tensor ss = sum_of(
      [&](Expr v, const std::vector<Expr>& i) {
        Expr dv = v - mean(i);
        return dv * dv;
      },
      "_sqsum");
  Tensor var = te::Compute(
      keep, [&](const std::vector<Expr>& i) { return ss(i) * inv; }, n.name + "_var");
  return {mean, var, keep};
}

std::vector<Expr> KeepIndex(const std::vector<Expr>& i, const std::vector<int64_t>& axes) {
  std::vector<Expr> k = i;
  for (int64_t a : axes) k[a] = 0;
  return k;
}

std::vector<Tensor> InstanceNorm(const Node& n, const std::vector<Tensor>& in,
                                 const std::vector<TensorType>&) {
  const Tensor& x = In(n, in, 0);
  const Tensor& scale = In(n, in, 1);
  const Tensor& bias = In(n, in, 2);
  double eps = n.GetFloat("epsilon", 1e-5);
  std::vector<int64_t> axes;
  for (int d = 2; d < x.ndim(); ++d) axes.push_back(d);
  Moments m = ComputeMoments(n, x, axes);
  te::DataType t = x.dtype();
  return {te::Compute(
      x.shape(),
      [&](const std::vector<Expr>& i) {
        auto k = KeepIndex(i, axes);
        return (x(i) - m.mean(k)) / te::Sqrt(m.var(k) + te::Const(t, eps)) * scale({i[1]}) +
               bias({i[1]});
      },
      n.name + "_out")};
}

std::vector<Tensor> LayerNorm(const Node& n, const std::vector<Tensor>& in,
                              const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  const Tensor& scale = In(n, in, 1);
  Tensor bias = in.size() > 2 ? in[2] : Tensor();
  double eps = n.GetFloat("epsilon", 1e-5);
  int64_t axis = NormAxis(n, n.GetInt("axis", -1), x.ndim());
  std::vector<int64_t> axes;
  for (int d = static_cast<int>(axis); d < x.ndim(); ++d) axes.push_back(d);
  Moments m = ComputeMoments(n, x, axes);
  te::DataType t = x.dtype();
  Tensor inv_std = te::Compute(
      m.keep_shape,
      [&](const std::vector<Expr>& i) {
        return te::Const(t, 1.0) / te::Sqrt(m.var(i) + te::Const(t, eps));
      },
      n.name + "_invstd");
  std::vector<Tensor> res = {te::Compute(
      x.shape(),
      [&](const std::vector<Expr>& i) {
        auto k = KeepIndex(i, axes);
        std::vector<Expr> tail(i.begin() + axis, i.end());
        Expr v = (x(i) - m.mean(k)) * inv_std(k);
        v = v * BroadcastLoad(scale, tail);
        if (bias.defined()) v = v + BroadcastLoad(bias, tail);
        return v;
      },
      n.name + "_out")};
  // Optional Mean and InvStdDev outputs have the keep-dims shape.
  if (out.size() > 1) res.push_back(m.mean);
  if (out.size() > 2) res.push_back(inv_std);
  return res;
}

std::vector<Tensor> BatchNorm(const Node& n, const std::vector<Tensor>& in,
                              const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  const Tensor& scale = In(n, in, 1);
  const Tensor& b = In(n, in, 2);
  const Tensor& mean = In(n, in, 3);
  const Tensor& var = In(n, in, 4);
  if (out.size() > 1) Unsupported(n, "training-mode BatchNormalization outputs");
  double eps = n.GetFloat("epsilon", 1e-5);
  te::DataType t = x.dtype();
  return {te::Compute(
      x.shape(),
      [&](const std::vector<Expr>& i) {
        Expr c = x.ndim() > 1 ? i[1] : Expr(0);
        return (x(i) - mean({c})) / te::Sqrt(var({c}) + te::Const(t, eps)) * scale({c}) + b({c});
      },
      n.name + "_out")};
}

std::vector<Tensor> Lrn(const Node& n, const std::vector<Tensor>& in,
                        const std::vector<TensorType>&) {
  const Tensor& x = In(n, in, 0);
  int64_t size = n.GetInt("size");
  double alpha = n.GetFloat("alpha", 1e-4), beta = n.GetFloat("beta", 0.75),
         bias = n.GetFloat("bias", 1.0);
  int64_t c = x.shape()[1];
  int64_t before = (size - 1) / 2;
  te::DataType t = x.dtype();
  IterVar rk = te::ReduceAxis(size, "r");
  Tensor sq = te::Compute(
      x.shape(),
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> xi = i;
        Expr ch = i[1] - before + rk.var;
        xi[1] = ch;
        Expr v = x(xi);
        return te::Sum(v * v, {rk}, (ch >= 0) && (ch < c));
      },
      n.name + "_sq");
  return {te::Compute(
      x.shape(),
      [&](const std::vector<Expr>& i) {
        Expr base = te::Const(t, bias) + te::Const(t, alpha / static_cast<double>(size)) * sq(i);
        return x(i) / te::Pow(base, te::Const(t, beta));
      },
      n.name + "_out")};
}

const bool kRegistered = [] {
  auto reg = [](const char* op, FCompute fn) { OpRegistry::Global()->Mutable(op).set_compute(fn); };
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    reg(op, ReduceOp);
  }
  reg("ArgMax", ArgOp);
  reg("ArgMin", ArgOp);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) reg(op, SoftmaxOp);
  reg("InstanceNormalization", InstanceNorm);
  reg("LayerNormalization", LayerNorm);
  reg("BatchNormalization", BatchNorm);
  reg("LRN", Lrn);
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
