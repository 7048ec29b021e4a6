// Host evaluation of the ops exported models use for shape math (and cheap weight preprocessing).
#include <ember/compiler/transform.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/shape_util.h"

namespace ember {
namespace compiler {
namespace {

std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

// Flat index into `in` (broadcast to `out_shape`) of output element `flat`.
int64_t BroadcastIndex(int64_t flat, const std::vector<int64_t>& out_shape,
                       const std::vector<int64_t>& in_shape) {
  int64_t idx = 0, stride = 1;
  size_t off = out_shape.size() - in_shape.size();
  for (int64_t d = static_cast<int64_t>(out_shape.size()) - 1; d >= 0; --d) {
    int64_t c = flat % out_shape[d];
    flat /= out_shape[d];
    if (static_cast<size_t>(d) >= off) {
      int64_t n = in_shape[d - off];
      if (n != 1) idx += c * stride;
      stride *= n;
    }
  }
  return idx;
}

bool IsFloat(DLDataType d) { return d.code == kDLFloat; }

double UnaryF(const std::string& op, double x, bool& ok) {
  if (op == "Neg") return -x;
  if (op == "Abs") return std::fabs(x);
  if (op == "Sqrt") return std::sqrt(x);
  if (op == "Exp") return std::exp(x);
  if (op == "Log") return std::log(x);
  if (op == "Reciprocal") return 1.0 / x;
  if (op == "Relu") return x > 0 ? x : 0;
  if (op == "Floor") return std::floor(x);
  if (op == "Ceil") return std::ceil(x);
  if (op == "Round") return std::nearbyint(x);
  if (op == "Sign") return x > 0 ? 1 : (x < 0 ? -1 : 0);
  if (op == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (op == "Tanh") return std::tanh(x);
  if (op == "Erf") return std::erf(x);
  if (op == "Not") return x == 0 ? 1 : 0;
  if (op == "Identity" || op == "Cast" || op == "Dropout") return x;
  ok = false;
  return 0;
}

int64_t FloorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// The binary ops whose float and integer forms read alike (no division, no zero check): sets *r
// and returns true, or returns false for any other op.
template <typename T>
bool SameFormBinary(const std::string& op, T x, T y, T* r) {
  if (op == "Add")
    *r = x + y;
  else if (op == "Sub")
    *r = x - y;
  else if (op == "Mul")
    *r = x * y;
  else if (op == "Max")
    *r = std::max(x, y);
  else if (op == "Min")
    *r = std::min(x, y);
  else if (op == "Equal")
    *r = x == y;
  else if (op == "Less")
    *r = x < y;
  else if (op == "Greater")
    *r = x > y;
  else if (op == "LessOrEqual")
    *r = x <= y;
  else if (op == "GreaterOrEqual")
    *r = x >= y;
  else if (op == "And")
    *r = (x != 0) && (y != 0);
  else if (op == "Or")
    *r = (x != 0) || (y != 0);
  else if (op == "Xor")
    *r = (x != 0) != (y != 0);
  else
    return false;
  return true;
}

bool BinaryEval(const Node& n, const HostTensor& a, const HostTensor& b, HostTensor* out) {
  const std::string& op = n.op;
  bool flt = IsFloat(a.type.dtype);
  int64_t total = out->NumElements();
  for (int64_t i = 0; i < total; ++i) {
    int64_t ia = BroadcastIndex(i, out->type.shape, a.type.shape);
    int64_t ib = BroadcastIndex(i, out->type.shape, b.type.shape);
    if (flt || op == "Pow") {
      double x = a.GetAsDouble(ia), y = b.GetAsDouble(ib), r;
      if (op == "Div")
        r = x / y;
      else if (op == "Pow")
        r = std::pow(x, y);
      else if (op == "Mod" && n.GetInt("fmod", 0))
        r = std::fmod(x, y);
      else if (!SameFormBinary(op, x, y, &r))
        return false;
      if (IsFloat(out->type.dtype)) {
        out->SetFromDouble(i, r);
      } else {
        out->SetFromInt(i, static_cast<int64_t>(r));
      }
    } else {
      int64_t x = a.GetAsInt(ia), y = b.GetAsInt(ib), r;
      if (op == "Div") {
        if (y == 0) NodeError(n, "integer division by zero in a constant expression");
        r = x / y;
      } else if (op == "Mod") {
        if (y == 0) NodeError(n, "integer modulo by zero in a constant expression");
        r = n.GetInt("fmod", 0) ? x % y : FloorMod(x, y);
      } else if (!SameFormBinary(op, x, y, &r)) {
        return false;
      }
      out->SetFromInt(i, r);
    }
  }
  return true;
}

// Copies elements: out[i] = in[src(i)] with a byte-wise move (dtype preserved).
template <typename SrcFn>
void Gather(const HostTensor& in, HostTensor* out, SrcFn src) {
  int64_t es = DTypeBytes(in.type.dtype);
  int64_t total = out->NumElements();
  for (int64_t i = 0; i < total; ++i) {
    std::memcpy(out->data.data() + i * es, in.data.data() + src(i) * es, static_cast<size_t>(es));
  }
}

// Unravel flat output index into coordinates.
std::vector<int64_t> Unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> c(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    c[d] = flat % shape[d];
    flat /= shape[d];
  }
  return c;
}

// Split in canonical form (axis, split sizes): output k is the k-th run of slices on the axis.
void SplitEval(const Node& n, const HostTensor& x, const std::vector<TensorType>& out_types,
               std::vector<HostTensorPtr>* outputs) {
  const int64_t axis = n.GetInt("axis");
  const int64_t es = DTypeBytes(x.type.dtype);
  int64_t outer = 1, inner = es;
  for (int64_t d = 0; d < axis; ++d) outer *= x.type.shape[d];
  for (int64_t d = axis + 1; d < x.type.ndim(); ++d) inner *= x.type.shape[d];
  const int64_t row = x.type.shape[axis] * inner;
  int64_t offset = 0;
  outputs->clear();
  for (const TensorType& t : out_types) {
    auto part = std::make_shared<HostTensor>(t);
    part->data.resize(static_cast<size_t>(t.ByteSize()));
    const int64_t bytes = t.shape[axis] * inner;
    for (int64_t o = 0; o < outer && bytes > 0; ++o) {
      std::memcpy(part->data.data() + o * bytes, x.data.data() + o * row + offset,
                  static_cast<size_t>(bytes));
    }
    offset += bytes;
    outputs->push_back(part);
  }
}

}  // namespace

bool HostEvaluate(const Node& n, const std::vector<HostTensorPtr>& in,
                  const std::vector<TensorType>& out_types, std::vector<HostTensorPtr>* outputs) {
  constexpr int64_t kMaxFoldElements = int64_t{1} << 24;
  for (const auto& t : out_types) {
    if (t.NumElements() > kMaxFoldElements) return false;
  }
  const std::string& op = n.op;
  auto out = std::make_shared<HostTensor>(out_types.at(0));
  if (op == "Split" && in.size() == 1) {
    SplitEval(n, *in[0], out_types, outputs);
    return true;
  }
  if (in.size() == 1 || op == "Dropout") {
    const HostTensor& x = *in.at(0);
    // Data movement ops on one input, all in canonical attribute form.
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
        op == "Identity" || op == "Dropout") {
      if (op == "Dropout" && out_types.size() > 1) return false;
      out->data = x.data;
    } else if (op == "Expand") {
      Gather(x, out.get(),
             [&](int64_t i) { return BroadcastIndex(i, out->type.shape, x.type.shape); });
    } else if (op == "Transpose") {
      auto perm = n.GetInts("perm");
      auto st = Strides(x.type.shape);
      Gather(x, out.get(), [&](int64_t i) {
        auto c = Unravel(i, out->type.shape);
        int64_t s = 0;
        for (size_t d = 0; d < c.size(); ++d) s += c[d] * st[perm[d]];
        return s;
      });
    } else if (op == "Slice") {
      auto starts = n.GetInts("starts"), steps = n.GetInts("steps");
      auto st = Strides(x.type.shape);
      Gather(x, out.get(), [&](int64_t i) {
        auto c = Unravel(i, out->type.shape);
        int64_t s = 0;
        for (size_t d = 0; d < c.size(); ++d) s += (starts[d] + c[d] * steps[d]) * st[d];
        return s;
      });
    } else if (op == "Tile") {
      auto st = Strides(x.type.shape);
      Gather(x, out.get(), [&](int64_t i) {
        auto c = Unravel(i, out->type.shape);
        int64_t s = 0;
        for (size_t d = 0; d < c.size(); ++d) s += (c[d] % x.type.shape[d]) * st[d];
        return s;
      });
    } else if (op == "Clip") {
      const double lo = n.GetFloat("min"), hi = n.GetFloat("max");
      for (int64_t i = 0; i < out->NumElements(); ++i) {
        if (IsFloat(x.type.dtype)) {
          out->SetFromDouble(i, std::min(std::max(x.GetAsDouble(i), lo), hi));
        } else {
          const double v = std::min(std::max(static_cast<double>(x.GetAsInt(i)), lo), hi);
          out->SetFromInt(i, static_cast<int64_t>(v));
        }
      }
    } else if (op == "Cast") {
      for (int64_t i = 0; i < out->NumElements(); ++i) {
        if (IsFloat(x.type.dtype) && !IsFloat(out->type.dtype)) {
          double v = x.GetAsDouble(i);
          if (out->type.dtype == kBool) {
            out->SetFromInt(i, v != 0);
          } else {
            out->SetFromInt(i, static_cast<int64_t>(std::trunc(v)));
          }
        } else if (IsFloat(x.type.dtype)) {
          out->SetFromDouble(i, x.GetAsDouble(i));
        } else {
          if (IsFloat(out->type.dtype)) {
            out->SetFromDouble(i, static_cast<double>(x.GetAsInt(i)));
          } else {
            out->SetFromInt(i, x.GetAsInt(i));
          }
        }
      }
    } else if (op == "ReduceProd" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin") {
      if (!IsFloat(x.type.dtype) && x.type.dtype != kInt64 && x.type.dtype != kInt32) return false;
      auto axes = n.GetInts("axes");
      std::vector<double> acc(static_cast<size_t>(out->NumElements()), op == "ReduceProd"  ? 1.0
                                                                       : op == "ReduceSum" ? 0.0
                                                                       : op == "ReduceMax"
                                                                           ? -INFINITY
                                                                           : INFINITY);
      std::vector<int64_t> keep_shape = x.type.shape;
      for (int64_t a : axes) keep_shape[a] = 1;
      for (int64_t i = 0; i < x.NumElements(); ++i) {
        auto c = Unravel(i, x.type.shape);
        int64_t o = 0;
        for (size_t d = 0; d < c.size(); ++d)
          o = o * keep_shape[d] + (keep_shape[d] == 1 ? 0 : c[d]);
        double v = x.GetAsDouble(i);
        double& r = acc[static_cast<size_t>(o)];
        if (op == "ReduceProd")
          r *= v;
        else if (op == "ReduceSum")
          r += v;
        else if (op == "ReduceMax")
          r = std::max(r, v);
        else
          r = std::min(r, v);
      }
      for (size_t i = 0; i < acc.size(); ++i) out->SetFromDouble(static_cast<int64_t>(i), acc[i]);
    } else {
      bool ok = true;
      for (int64_t i = 0; i < out->NumElements() && ok; ++i) {
        if (IsFloat(x.type.dtype)) {
          out->SetFromDouble(i, UnaryF(op, x.GetAsDouble(i), ok));
        } else {
          double r = UnaryF(op, static_cast<double>(x.GetAsInt(i)), ok);
          out->SetFromInt(i, static_cast<int64_t>(r));
        }
      }
      if (!ok || in.size() != 1) return false;
      if (op == "Sqrt" || op == "Exp" || op == "Log" || op == "Reciprocal" || op == "Sigmoid" ||
          op == "Tanh" || op == "Erf") {
        if (!IsFloat(x.type.dtype)) return false;
      }
    }
    outputs->assign({out});
    return true;
  }
  if (op == "Concat") {
    int64_t axis = n.GetInt("axis");
    int64_t es = DTypeBytes(out->type.dtype);
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out->type.shape[d];
    int64_t pos = 0;
    int64_t out_row = out->NumElements() / std::max<int64_t>(outer, 1) * es;
    for (const auto& t : in) {
      if (!t) return false;
      int64_t row = outer ? t->NumElements() / std::max<int64_t>(outer, 1) * es : 0;
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(out->data.data() + o * out_row + pos, t->data.data() + o * row,
                    static_cast<size_t>(row));
      }
      pos += row;
    }
    outputs->assign({out});
    return true;
  }
  if (op == "Gather") {
    const HostTensor& x = *in[0];
    const HostTensor& idx = *in[1];
    int64_t axis = n.GetInt("axis");
    int64_t dim = x.type.shape[axis];
    auto st = Strides(x.type.shape);
    int64_t ir = idx.type.ndim();
    Gather(x, out.get(), [&](int64_t i) {
      auto c = Unravel(i, out->type.shape);
      std::vector<int64_t> ic(c.begin() + axis, c.begin() + axis + ir);
      int64_t flat = 0;
      for (int64_t d = 0; d < ir; ++d) flat = flat * idx.type.shape[d] + ic[d];
      int64_t k = idx.GetAsInt(flat);
      if (k < 0) k += dim;
      if (k < 0 || k >= dim) NodeError(n, "index " + std::to_string(k) + " out of range");
      int64_t s = 0;
      for (int64_t d = 0; d < axis; ++d) s += c[d] * st[d];
      s += k * st[axis];
      for (int64_t d = axis + 1; d < x.type.ndim(); ++d) s += c[d - 1 + ir] * st[d];
      return s;
    });
    outputs->assign({out});
    return true;
  }
  if (op == "Where") {
    for (int64_t i = 0; i < out->NumElements(); ++i) {
      bool c = in[0]->GetAsInt(BroadcastIndex(i, out->type.shape, in[0]->type.shape)) != 0;
      const HostTensor& src = c ? *in[1] : *in[2];
      int64_t j = BroadcastIndex(i, out->type.shape, src.type.shape);
      int64_t es = DTypeBytes(out->type.dtype);
      std::memcpy(out->data.data() + i * es, src.data.data() + j * es, static_cast<size_t>(es));
    }
    outputs->assign({out});
    return true;
  }
  if (in.size() == 2 && in[0] && in[1]) {
    if (!BinaryEval(n, *in[0], *in[1], out.get())) return false;
    outputs->assign({out});
    return true;
  }
  return false;
}

}  // namespace compiler
}  // namespace ember
