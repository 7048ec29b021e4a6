// Canonicalize: the frontend's second half. Walks nodes in order, rewriting ONNX version
// differences into the canonical form of ir/canonical_ops.h, inferring types and folding.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/ir/subgraph.h>
#include <ember/compiler/transform.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "frontend/onnx/onnx_dtype.h"
#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

using Types = std::vector<TensorType>;

class Canonicalizer : public CanonicalizeContext {
 public:
  // RewriteContext, for expansions that live in files of their own (recurrent.cc).
  Graph& graph() override { return g_; }
  int Emit(const std::string& op, const std::string& name, std::vector<int> inputs,
           AttrMap attrs) override {
    return EmitNew(op, name, std::move(inputs), std::move(attrs));
  }
  void EmitInto(Node node) override { Emit(std::move(node)); }

  int64_t opset() const override { return opset_; }
  void Canonicalize(Node node) override { Visit(std::move(node)); }
  std::vector<Node> CanonicalizeApart(std::vector<Node> nodes) override {
    std::vector<Node> outer;
    outer.swap(g_.nodes());
    try {
      for (Node& n : nodes) Visit(std::move(n));
    } catch (...) {
      g_.nodes().swap(outer);
      throw;
    }
    g_.nodes().swap(outer);
    return outer;
  }
  void EmitTyped(Node node) override { g_.nodes().push_back(std::move(node)); }

  Canonicalizer(Graph* g, int64_t opset) : g_(*g), opset_(opset) {}

  void Run() {
    std::vector<Node> old;
    old.swap(g_.nodes());
    for (Node& n : old) Visit(std::move(n));
  }

 private:
  // Indices known at compile time are checked here, so the kernel never meets a bad one.
  void CheckConstantGatherIndices(const Node& n) {
    const Value& indices = g_.value(n.inputs.at(1));
    if (!indices.is_constant()) return;
    int64_t axis = n.GetInt("axis");
    int64_t dim = TypeOf(n.inputs[0]).shape.at(static_cast<size_t>(axis));
    for (int64_t i = 0; i < indices.constant->type.NumElements(); ++i) {
      int64_t k = indices.constant->GetAsInt(i);
      if (k < -dim || k >= dim) {
        NodeError(n, "index " + std::to_string(k) + " (element " + std::to_string(i) +
                         " of indices '" + indices.name + "') is out of range for axis " +
                         std::to_string(axis) + " of size " + std::to_string(dim) +
                         "; valid: " + std::to_string(-dim) + ".." + std::to_string(dim - 1));
      }
    }
  }

  void Emit(Node n) {
    Types in;
    for (int id : n.inputs) in.push_back(id == kAbsentValue ? TensorType{} : TypeOf(id));
    const OpDef* def = OpRegistry::Global()->Find(n.op);
    if (def) {
      for (const auto& [k, v] : def->attr_defaults()) {
        if (!n.HasAttr(k)) n.attrs[k] = v;
      }
    }
    Types out = InferNodeTypes(n, in);
    for (size_t i = 0; i < n.outputs.size() && i < out.size(); ++i) {
      g_.value(n.outputs[i]).type = out[i];
    }
    bool all_const = true;
    std::vector<HostTensorPtr> cin;
    for (int id : n.inputs) {
      if (id == kAbsentValue) continue;
      if (!g_.value(id).is_constant()) all_const = false;
      cin.push_back(g_.value(id).constant);
    }
    std::vector<HostTensorPtr> folded;
    if (all_const && !cin.empty() && HostEvaluate(n, cin, out, &folded)) {
      for (size_t i = 0; i < folded.size(); ++i) SetConstOutput(n.outputs[i], folded[i]);
      return;
    }
    g_.nodes().push_back(std::move(n));
  }

  // A fresh intermediate value + node, emitted immediately.
  int EmitNew(const std::string& op, const std::string& name, std::vector<int> inputs,
              AttrMap attrs = {}) {
    int out = g_.AddValue(g_.UniqueName(name), TensorType{});
    Emit(Node{op, name, std::move(attrs), std::move(inputs), {out}});
    return out;
  }

  void Visit(Node n);
  void Window(Node& n, bool transpose);
  void Reduce(Node& n);
  void SliceOp(Node& n);
  void SoftmaxOp(Node n);
  void Variadic(Node n);
  void PadWithRunTimeValue(Node n);
  void PadAxesToFullPads(Node& n);

  Graph& g_;
  int64_t opset_;
};

std::vector<int64_t> Fill(size_t n, int64_t v) { return std::vector<int64_t>(n, v); }

void Canonicalizer::Window(Node& n, bool transpose) {
  const TensorType& x = TypeOf(n.inputs[0]);
  if (x.ndim() < 3) NodeError(n, "expected input of rank >= 3, got " + x.ToString());
  size_t sp = static_cast<size_t>(x.ndim() - 2);
  if (!n.HasAttr("kernel_shape")) {
    if (n.inputs.size() < 2) NodeError(n, "missing attribute 'kernel_shape'");
    const auto& w = TypeOf(n.inputs[1]).shape;
    n.attrs["kernel_shape"] = std::vector<int64_t>(w.begin() + 2, w.end());
  }
  auto k = n.GetInts("kernel_shape");
  auto s = n.GetInts("strides", Fill(sp, 1));
  auto d = n.GetInts("dilations", Fill(sp, 1));
  if (k.size() != sp || s.size() != sp || d.size() != sp) {
    NodeError(n, "kernel_shape/strides/dilations must have " + std::to_string(sp) + " entries");
  }
  std::string ap = n.GetString("auto_pad", "NOTSET");
  std::vector<int64_t> pads = n.GetInts("pads", Fill(2 * sp, 0));
  if (pads.size() != 2 * sp) NodeError(n, "pads must have " + std::to_string(2 * sp) + " entries");
  std::vector<int64_t> outpad = n.GetInts("output_padding", Fill(sp, 0));
  if (ap == "VALID") {
    pads = Fill(2 * sp, 0);
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t i = 0; i < sp; ++i) {
      int64_t in = x.shape[2 + i];
      int64_t eff = (k[i] - 1) * d[i] + 1;
      int64_t total;
      if (transpose) {
        int64_t out = in * s[i];
        total = std::max<int64_t>(0, s[i] * (in - 1) + outpad[i] + eff - out);
      } else {
        int64_t out = CeilDiv(in, s[i]);
        total = std::max<int64_t>(0, (out - 1) * s[i] + eff - in);
      }
      int64_t small = total / 2, big = total - small;
      bool upper = ap == "SAME_UPPER";
      pads[i] = upper ? small : big;
      pads[sp + i] = upper ? big : small;
    }
  } else if (ap != "NOTSET") {
    NodeError(n, "auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got '" + ap + "'");
  }
  if (transpose && n.HasAttr("output_shape")) {
    auto os = n.GetInts("output_shape");
    if (os.size() == sp + 2) os.erase(os.begin(), os.begin() + 2);
    for (size_t i = 0; i < sp; ++i) {
      int64_t eff = (k[i] - 1) * d[i] + 1;
      int64_t total = s[i] * (x.shape[2 + i] - 1) + outpad[i] + eff - os.at(i);
      if (total < 0) {
        outpad[i] -= total;
        total = 0;
      }
      bool upper = ap != "SAME_LOWER";
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[sp + i] = total - pads[i];
    }
    n.attrs.erase("output_shape");
  }
  n.attrs.erase("auto_pad");
  n.attrs["strides"] = s;
  n.attrs["dilations"] = d;
  n.attrs["pads"] = pads;
  if (transpose) n.attrs["output_padding"] = outpad;
  if (n.op == "Conv" || n.op == "ConvTranspose") n.attrs["group"] = n.GetInt("group", 1);
}

void Canonicalizer::Reduce(Node& n) {
  int64_t r = Rank(n, 0);
  std::vector<int64_t> axes;
  bool from_input = (n.op == "ReduceSum" && opset_ >= 13) || opset_ >= 18;
  if (from_input) {
    if (auto c = ConstInput(n, 1, "axes")) axes = c->ToIntVector();
  } else {
    axes = n.GetInts("axes", {});
  }
  DropInputsFrom(n, 1);
  if (axes.empty()) {
    if (n.GetInt("noop_with_empty_axes", 0)) {
      n.op = "Identity";
      n.attrs.clear();
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
}

void Canonicalizer::SliceOp(Node& n) {
  const TensorType& x = TypeOf(n.inputs[0]);
  int64_t r = x.ndim();
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset_ < 10) {
    starts = n.GetInts("starts");
    ends = n.GetInts("ends");
    axes = n.GetInts("axes", {});
  } else {
    starts = ConstInput(n, 1, "starts")->ToIntVector();
    ends = ConstInput(n, 2, "ends")->ToIntVector();
    if (auto c = ConstInput(n, 3, "axes")) axes = c->ToIntVector();
    if (auto c = ConstInput(n, 4, "steps")) steps = c->ToIntVector();
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps = Fill(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    NodeError(n, "starts, ends, axes and steps must have equal lengths");
  }
  std::vector<int64_t> fs = Fill(static_cast<size_t>(r), 0), fe = x.shape,
                       fst = Fill(static_cast<size_t>(r), 1), out = x.shape;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = NormalizeAxis(n, axes[i], r, "axes entry");
    int64_t dim = x.shape[a], st = steps[i];
    if (st == 0) NodeError(n, "slice step 0 on axis " + std::to_string(a));
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    int64_t len = st > 0 ? std::max<int64_t>(0, CeilDiv(e - b, st))
                         : std::max<int64_t>(0, CeilDiv(b - e, -st));
    fs[a] = b;
    fe[a] = e;
    fst[a] = st;
    out[a] = len;
  }
  DropInputsFrom(n, 1);
  n.attrs = {{"starts", fs}, {"ends", fe}, {"steps", fst}, {"__out_shape", out}};
}

// Before opset 13 Softmax/LogSoftmax/Hardmax flatten to 2-D at `axis` (default 1).
void Canonicalizer::SoftmaxOp(Node n) {
  int64_t r = Rank(n, 0);
  int64_t axis = NormalizeAxis(n, n.GetInt("axis", opset_ >= 13 ? -1 : 1), r);
  if (opset_ >= 13 || axis == r - 1 || r == 0) {
    n.attrs["axis"] = r == 0 ? 0 : (opset_ >= 13 ? axis : r - 1);
    Emit(std::move(n));
    return;
  }
  const std::vector<int64_t> shape = TypeOf(n.inputs[0]).shape;  // copy: EmitNew adds values
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= shape[i];
  int64_t flat = EmitNew("Reshape", n.name + "_flatten", {n.inputs[0]},
                         {{"__out_shape", std::vector<int64_t>{outer, inner}}});
  int64_t sm = EmitNew(n.op, n.name, {static_cast<int>(flat)}, {{"axis", int64_t{1}}});
  Emit(Node{"Reshape",
            n.name + "_unflatten",
            {{"__out_shape", shape}},
            {static_cast<int>(sm)},
            n.outputs});
}

// Sum/Mean/Max/Min with any number of inputs -> chains of binary ops.
void Canonicalizer::Variadic(Node n) {
  std::string bin = n.op == "Sum" || n.op == "Mean" ? "Add" : n.op;
  if (n.inputs.empty()) NodeError(n, "needs at least one input");
  int acc = n.inputs[0];
  size_t last = n.inputs.size() - 1;
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    bool final_op = i == last && n.op != "Mean";
    if (final_op) {
      Emit(Node{bin, n.name, {}, {acc, n.inputs[i]}, n.outputs});
      return;
    }
    acc = EmitNew(bin, n.name + "_" + std::to_string(i), {acc, n.inputs[i]});
  }
  if (n.op == "Mean" && n.inputs.size() > 1) {
    int c =
        g_.AddConstant(g_.UniqueName(n.name + "_count"),
                       MakeScalarTensor(TypeOf(acc).dtype, static_cast<double>(n.inputs.size())));
    Emit(Node{"Div", n.name, {}, {acc, c}, n.outputs});
    return;
  }
  Emit(Node{"Identity", n.name, {}, {acc}, n.outputs});
}

// Pad whose constant_value arrives at run time: zero-pad, then Where(inside-mask, padded, value).
void Canonicalizer::PadWithRunTimeValue(Node n) {
  auto pads = ConstInput(n, 1, "pads")->ToIntVector();
  const TensorType x = TypeOf(n.inputs[0]);  // a copy: emitting nodes grows the value table
  int64_t r = x.ndim();
  if (static_cast<int64_t>(pads.size()) != 2 * r) NodeError(n, "pads length != 2 * rank");
  int value = n.inputs[2];
  int padded = EmitNew("Pad", n.name + "_zero", {n.inputs[0]},
                       {{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}});
  const TensorType pt = TypeOf(padded);
  auto mask = std::make_shared<HostTensor>(TensorType{pt.shape, kBool});
  for (int64_t i = 0; i < mask->NumElements(); ++i) {
    int64_t rem = i;
    bool inside = true;
    for (int64_t d = r - 1; d >= 0; --d) {
      int64_t c = rem % pt.shape[d] - pads[d];
      rem /= pt.shape[d];
      inside = inside && c >= 0 && c < x.shape[d];
    }
    mask->SetFromInt(i, inside ? 1 : 0);
  }
  int m = g_.AddConstant(g_.UniqueName(n.name + "_inside"), mask);
  Emit(Node{"Where", n.name, {}, {m, padded, value}, n.outputs});
}

void Canonicalizer::Visit(Node n) {
  const std::string& op = n.op;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] != kAbsentValue && TypeOf(n.inputs[i]).dtype.bits == 0) {
      NodeError(n, "input " + std::to_string(i) + " has no type");
    }
  }
  const OpDef* def = OpRegistry::Global()->Find(op);
  if (def != nullptr && def->canonicalize()) {
    def->canonicalize()(std::move(n), this);
    return;
  }
  if (op == "Shape") {
    auto s = TypeOf(n.inputs.at(0)).shape;
    int64_t r = static_cast<int64_t>(s.size());
    int64_t b = n.GetInt("start", 0), e = n.GetInt("end", r);
    if (b < 0) b += r;
    if (e < 0) e += r;
    b = std::clamp<int64_t>(b, 0, r);
    e = std::clamp<int64_t>(e, b, r);
    SetConstOutput(n.outputs[0],
                   MakeInt64Tensor(std::vector<int64_t>(s.begin() + b, s.begin() + e)));
    return;
  }
  if (op == "Size") {
    SetConstOutput(
        n.outputs[0],
        MakeScalarTensor(kInt64, static_cast<double>(TypeOf(n.inputs[0]).NumElements())));
    return;
  }
  if (op == "ConstantOfShape") {
    auto shape = ConstInput(n, 0, "shape")->ToIntVector();
    HostTensorPtr v = n.HasAttr("value") ? n.GetTensor("value") : MakeScalarTensor(kFloat32, 0);
    auto t = std::make_shared<HostTensor>(TensorType{shape, v->type.dtype});
    int64_t es = DTypeBytes(v->type.dtype);
    for (int64_t i = 0; i < t->NumElements(); ++i) {
      std::memcpy(t->data.data() + i * es, v->data.data(), static_cast<size_t>(es));
    }
    SetConstOutput(n.outputs[0], t);
    return;
  }
  if (op == "Range") {
    auto s = ConstInput(n, 0, "start"), l = ConstInput(n, 1, "limit"),
         d = ConstInput(n, 2, "delta");
    double a = s->GetAsDouble(0), b = l->GetAsDouble(0), c = d->GetAsDouble(0);
    if (c == 0) NodeError(n, "delta is 0");
    int64_t cnt = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((b - a) / c)));
    auto t = std::make_shared<HostTensor>(TensorType{{cnt}, s->type.dtype});
    for (int64_t i = 0; i < cnt; ++i) {
      if (s->type.dtype.code == kDLFloat) {
        t->SetFromDouble(i, a + static_cast<double>(i) * c);
      } else {
        t->SetFromInt(i, s->GetAsInt(0) + i * d->GetAsInt(0));
      }
    }
    SetConstOutput(n.outputs[0], t);
    return;
  }
  if (op == "Sum" || op == "Mean" || ((op == "Max" || op == "Min") && n.inputs.size() != 2)) {
    Variadic(std::move(n));
    return;
  }
  if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
    SoftmaxOp(std::move(n));
    return;
  }
  if (op == "CastLike") {
    n.op = "Cast";
    n.attrs["to"] = int64_t{DTypeToOnnx(TypeOf(n.inputs[1]).dtype)};
    DropInputsFrom(n, 1);
  }
  if (op == "Cast") {
    n.attrs["__dtype"] = DTypeToString(
        OnnxToDType(static_cast<int32_t>(n.GetInt("to")), n.Describe() + ": attribute 'to'"));
  } else if (op == "Conv" || op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
    Window(n, false);
    if (op != "Conv") n.attrs["ceil_mode"] = n.GetInt("ceil_mode", 0);
  } else if (op == "ConvTranspose") {
    Window(n, true);
  } else if (op == "Squeeze" || op == "Unsqueeze") {
    if (opset_ >= 13) IntsInputToAttr(n, 1, "axes");
    DropInputsFrom(n, 1);
    auto shape = TypeOf(n.inputs[0]).shape;
    auto axes = n.GetInts("axes", {});
    int64_t r = static_cast<int64_t>(shape.size());
    std::vector<int64_t> out;
    if (op == "Squeeze") {
      if (axes.empty()) {
        for (int64_t i = 0; i < r; ++i) {
          if (shape[i] == 1) axes.push_back(i);
        }
      }
      for (auto& a : axes) {
        a = NormalizeAxis(n, a, r, "axes entry");
        if (shape[a] != 1)
          NodeError(n, "cannot squeeze axis " + std::to_string(a) + " of " + ShapeToString(shape));
      }
      for (int64_t i = 0; i < r; ++i) {
        if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(shape[i]);
      }
    } else {
      int64_t orank = r + static_cast<int64_t>(axes.size());
      for (auto& a : axes) a = NormalizeAxis(n, a, orank, "axes entry");
      size_t k = 0;
      for (int64_t i = 0; i < orank; ++i) {
        if (std::find(axes.begin(), axes.end(), i) != axes.end()) {
          out.push_back(1);
        } else {
          out.push_back(shape.at(k++));
        }
      }
    }
    std::sort(axes.begin(), axes.end());
    n.attrs["axes"] = axes;
    n.attrs["__out_shape"] = out;
  } else if (op == "Reshape") {
    auto target = opset_ >= 5 ? ConstInput(n, 1, "shape")->ToIntVector() : n.GetInts("shape");
    DropInputsFrom(n, 1);
    auto in = TypeOf(n.inputs[0]);
    bool allowzero = n.GetInt("allowzero", 0) != 0;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < target.size(); ++i) {
      if (target[i] == 0 && !allowzero) {
        if (i >= in.shape.size()) NodeError(n, "shape entry 0 copies a dimension the input lacks");
        target[i] = in.shape[i];
      }
      if (target[i] == -1) {
        if (infer >= 0) NodeError(n, "more than one -1 in the target shape");
        infer = static_cast<int64_t>(i);
      } else {
        known *= target[i];
      }
    }
    if (infer >= 0) {
      if (known == 0 || in.NumElements() % known) {
        NodeError(n, "cannot reshape " + in.ToString() + " to " + ShapeToString(target));
      }
      target[infer] = in.NumElements() / known;
    }
    TensorType t{target, in.dtype};
    if (t.NumElements() != in.NumElements()) {
      NodeError(n, "cannot reshape " + in.ToString() + " to " + ShapeToString(target));
    }
    n.attrs = {{"__out_shape", target}};
  } else if (op == "Flatten") {
    auto in = TypeOf(n.inputs[0]);
    int64_t r = in.ndim();
    int64_t axis = n.GetInt("axis", 1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r) NodeError(n, "axis out of range");
    int64_t a = 1, b = 1;
    for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= in.shape[i];
    n.attrs = {{"axis", axis}, {"__out_shape", std::vector<int64_t>{a, b}}};
  } else if (op == "Expand") {
    auto shape = ConstInput(n, 1, "shape")->ToIntVector();
    DropInputsFrom(n, 1);
    n.attrs["__out_shape"] = BroadcastShapes(n, TypeOf(n.inputs[0]).shape, shape);
  } else if (op == "Slice") {
    SliceOp(n);
  } else if (op == "Tile") {
    IntsInputToAttr(n, 1, "repeats");
    DropInputsFrom(n, 1);
  } else if (op == "Pad") {
    if (opset_ >= 18 && n.HasInput(3)) PadAxesToFullPads(n);
    if (opset_ >= 11 && n.HasInput(2) && !g_.value(n.inputs[2]).is_constant() &&
        n.GetString("mode", "constant") == "constant" && !n.HasInput(3)) {
      PadWithRunTimeValue(std::move(n));
      return;
    }
    if (opset_ >= 11) {
      n.attrs["pads"] = ConstInput(n, 1, "pads")->ToIntVector();
      double v = 0;
      if (auto c = ConstInput(n, 2, "constant_value")) v = c->NumElements() ? c->GetAsDouble(0) : 0;
      n.attrs["value"] = v;
    } else if (opset_ < 2) {
      n.attrs["pads"] = n.GetInts("paddings");
    }
    DropInputsFrom(n, 1);
    n.attrs["value"] = n.GetFloat("value", 0.0);
    std::string mode = n.GetString("mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
      NodeUnsupported(n, "mode '" + mode + "' (valid: constant, reflect, edge, wrap)");
    }
    n.attrs["mode"] = mode;
  } else if (op == "Clip") {
    double lo = -std::numeric_limits<double>::infinity(), hi = -lo;
    bool runtime_bounds =
        opset_ >= 11 && ((n.HasInput(1) && !g_.value(n.inputs[1]).is_constant()) ||
                         (n.HasInput(2) && !g_.value(n.inputs[2]).is_constant()));
    if (runtime_bounds) {
      // Bounds computed at run time: Clip(x, lo, hi) = Min(Max(x, lo), hi).
      int acc = n.inputs[0];
      if (n.HasInput(1)) acc = EmitNew("Max", n.name + "_min", {acc, n.inputs[1]});
      if (n.HasInput(2)) {
        Emit(Node{"Min", n.name + "_max", {}, {acc, n.inputs[2]}, n.outputs});
      } else {
        Emit(Node{"Identity", n.name, {}, {acc}, n.outputs});
      }
      return;
    }
    if (opset_ >= 11) {
      if (auto c = ConstInput(n, 1, "min")) lo = c->GetAsDouble(0);
      if (auto c = ConstInput(n, 2, "max")) hi = c->GetAsDouble(0);
    } else {
      lo = n.GetFloat("min", lo);
      hi = n.GetFloat("max", hi);
    }
    DropInputsFrom(n, 1);
    n.attrs = {{"min", lo}, {"max", hi}};
  } else if (op == "Split") {
    int64_t r = Rank(n, 0);
    int64_t axis = NormalizeAxis(n, n.GetInt("axis", 0), r);
    std::vector<int64_t> split;
    if (opset_ >= 13) {
      if (auto c = ConstInput(n, 1, "split")) split = c->ToIntVector();
    } else {
      split = n.GetInts("split", {});
    }
    DropInputsFrom(n, 1);
    int64_t dim = TypeOf(n.inputs[0]).shape[axis];
    int64_t parts = static_cast<int64_t>(n.outputs.size());
    // Split-18's num_outputs splits like opset 13 without `split`: ceil-sized parts, last smaller.
    if (n.HasAttr("num_outputs") && n.GetInt("num_outputs") != parts) {
      NodeError(n, "num_outputs is " + std::to_string(n.GetInt("num_outputs")) +
                       " but the node has " + std::to_string(parts) + " outputs");
    }
    if (split.empty()) {
      int64_t each = CeilDiv(dim, parts);
      for (int64_t i = 0; i < parts; ++i) split.push_back(std::min(each, dim - i * each));
    }
    if (std::accumulate(split.begin(), split.end(), int64_t{0}) != dim ||
        static_cast<int64_t>(split.size()) != parts) {
      NodeError(n, "split sizes do not add up to dimension " + std::to_string(dim));
    }
    n.attrs = {{"axis", axis}, {"split", split}};
  } else if (op.rfind("Reduce", 0) == 0) {
    Reduce(n);
  } else if (op == "ArgMax" || op == "ArgMin") {
    n.attrs["axis"] = NormalizeAxis(n, n.GetInt("axis", 0), Rank(n, 0));
  } else if (op == "Concat" || op == "Gather") {
    int64_t r = Rank(n, 0);
    if (op == "Concat" && !n.HasAttr("axis")) NodeError(n, "missing attribute 'axis'");
    n.attrs["axis"] = NormalizeAxis(n, n.GetInt("axis", 0), r);
    if (op == "Gather") CheckConstantGatherIndices(n);
  } else if (op == "Transpose") {
    int64_t r = Rank(n, 0);
    std::vector<int64_t> perm(static_cast<size_t>(r));
    for (int64_t i = 0; i < r; ++i) perm[i] = r - 1 - i;
    perm = n.GetInts("perm", perm);
    for (auto& p : perm) p = NormalizeAxis(n, p, r, "perm entry");
    n.attrs["perm"] = perm;
  } else if (op == "Dropout") {
    if (opset_ >= 12 && n.HasInput(2) && ConstInput(n, 2, "training_mode")->GetAsInt(0) != 0) {
      NodeUnsupported(n, "training-mode Dropout is not supported");
    }
    DropInputsFrom(n, 1);
    if (n.outputs.size() > 1) {
      auto mask = std::make_shared<HostTensor>(TensorType{TypeOf(n.inputs[0]).shape, kBool});
      for (int64_t i = 0; i < mask->NumElements(); ++i) mask->SetFromInt(i, 1);
      SetConstOutput(n.outputs[1], mask);
      n.outputs.resize(1);
    }
    n.op = "Identity";
    n.attrs.clear();
  } else if (op == "Max" || op == "Min") {
    // two inputs: a plain binary op
  }
  Emit(std::move(n));
}

// Pad-18's `axes` input names the axes `pads` covers; the other axes get no padding.
void Canonicalizer::PadAxesToFullPads(Node& n) {
  const int64_t r = Rank(n, 0);
  std::vector<int64_t> axes = ConstInput(n, 3, "axes")->ToIntVector();
  std::vector<int64_t> pads = ConstInput(n, 1, "pads")->ToIntVector();
  const size_t k = axes.size();
  if (pads.size() != 2 * k) {
    NodeError(n, "pads holds " + std::to_string(pads.size()) + " values, expected " +
                     std::to_string(2 * k) + " (begin and end for each of axes " +
                     ShapeToString(axes) + ")");
  }
  std::vector<int64_t> full(static_cast<size_t>(2 * r), 0);
  for (size_t i = 0; i < k; ++i) {
    const int64_t a = NormalizeAxis(n, axes[i], r, "axes entry");
    full[a] = pads[i];
    full[r + a] = pads[k + i];
  }
  n.inputs[1] = g_.AddConstant(g_.UniqueName(n.name + "_pads"), MakeInt64Tensor(full));
  DropInputsFrom(n, 3);
}

}  // namespace

HostTensorPtr CanonicalizeContext::ConstInput(const Node& n, size_t i, const char* what) {
  if (!n.HasInput(i)) return nullptr;
  const Value& v = graph().value(n.inputs[i]);
  if (!v.is_constant()) {
    NodeUnsupported(n, std::string("input ") + std::to_string(i) + " ('" + what + "', value '" +
                           v.name + "') must be a constant: emberc compiles static shapes");
  }
  return v.constant;
}

void CanonicalizeContext::IntsInputToAttr(Node& n, size_t i, const char* key) {
  if (auto c = ConstInput(n, i, key)) n.attrs[key] = c->ToIntVector();
}

void CanonicalizeContext::DropInputsFrom(Node& n, size_t keep) {
  if (n.inputs.size() > keep) n.inputs.resize(keep);
}

void CanonicalizeContext::SetConstOutput(int id, HostTensorPtr c) {
  Value& v = graph().value(id);
  v.type = c->type;
  v.constant = std::move(c);
}

void Canonicalize(Graph* graph, int64_t opset) { Canonicalizer(graph, opset).Run(); }

}  // namespace compiler
}  // namespace ember
