// ConvAsDense: a float conv that no conv kernel of the strategy takes (every 1-D conv, odd channel
// counts the blocked kernels cannot tile) runs as a dense product over its patches (im2col, as
// Chellapilla et al. 2006 lower convolutions to matrix products): a Gather of each output
// position's window into a row, the Gemm of those rows with the weight as [C*taps][OC], which the
// dense kernel runs, and a Transpose back to channels first. The default lowering of such a conv
// computed one dot product per output, 16-25 GFLOP/s on AVX-512 against the dense kernel's
// 100+ (the two STFT convs of wakeword_melspectrogram: 52 us each, the Gemm of the same product
// 9 us). The patch rows repeat the input taps/stride times over, so only convs whose rows are
// small take it (kMaxPatchElements); larger ones keep the default lowering.
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/window_attrs.h>
#include <ember/compiler/transform.h>

#include <limits>
#include <memory>
#include <vector>

namespace ember {
namespace compiler {
namespace {

// The patch rows' elements (and their index constant's entries, int32): 1 MB each at most.
constexpr int64_t kMaxPatchElements = int64_t{1} << 18;

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

// The conv's geometry: x [N][C][in...], w [OC][C][k...], y [N][OC][out...].
struct ConvGeometry {
  std::vector<int64_t> in, kernel, out;  // spatial extents
  WindowAttrs win;
  int64_t n = 0, c = 0, oc = 0;

  int64_t Positions() const { return Product(out); }  // output positions per image
  int64_t Taps() const { return Product(kernel); }
  int64_t Plane() const { return Product(in); }  // input positions per channel
  int64_t InputElements() const { return n * c * Plane(); }
  int64_t Rows() const { return n * Positions(); }
  int64_t Cols() const { return c * Taps(); }
  bool Padded() const {
    for (int64_t p : win.pads) {
      if (p != 0) return true;
    }
    return false;
  }
};

// Whether the strategy has a dense kernel for the product (none with schedules off: then every
// node keeps the default lowering it asked for).
bool PlansDense(const KernelStrategy& strategy, const ConvGeometry& geo) {
  Graph probe;
  const int a = probe.AddValue("patches", TensorType{{geo.Rows(), geo.Cols()}, kFloat32});
  const int w = probe.AddValue("weight", TensorType{{geo.Cols(), geo.oc}, kFloat32});
  const int y = probe.AddValue("rows", TensorType{{geo.Rows(), geo.oc}, kFloat32});
  const Node gemm{"Gemm", "probe", {{"transA", int64_t{0}}, {"transB", int64_t{0}}}, {a, w}, {y}};
  return !strategy.Choose(probe, gemm).kernel.empty();
}

bool Applies(const Graph& g, const Node& conv, const KernelStrategy& strategy, ConvGeometry* geo) {
  if (conv.op != "Conv" || conv.outputs.size() != 1 || !conv.HasInput(1) ||
      conv.HasAttr(kExactSumAttr)) {
    return false;
  }
  const Value& x = g.value(conv.inputs[0]);
  const Value& w = g.value(conv.inputs[1]);
  const TensorType& y = g.value(conv.outputs[0]).type;
  if (x.type.dtype != kFloat32 || !w.is_constant() || w.type.dtype != kFloat32 ||
      x.type.ndim() < 3 || w.type.ndim() != x.type.ndim() || y.ndim() != x.type.ndim()) {
    return false;
  }
  if (conv.HasInput(2)) {
    const Value& b = g.value(conv.inputs[2]);
    if (!b.is_constant() || b.type.dtype != kFloat32 || b.type.NumElements() != w.type.shape[0]) {
      return false;
    }
  }
  const size_t spatial = static_cast<size_t>(x.type.ndim() - 2);
  std::string why;
  if (!WindowAttrs::Read(conv, spatial, {w.type.shape.begin() + 2, w.type.shape.end()}, &geo->win,
                         &why) ||
      geo->win.group != 1 || w.type.shape[1] != x.type.shape[1]) {
    return false;
  }
  geo->n = x.type.shape[0];
  geo->c = x.type.shape[1];
  geo->oc = w.type.shape[0];
  geo->in.assign(x.type.shape.begin() + 2, x.type.shape.end());
  geo->kernel.assign(w.type.shape.begin() + 2, w.type.shape.end());
  geo->out.assign(y.shape.begin() + 2, y.shape.end());
  // The index constant is int32: x's elements (and the zero past them) must fit it.
  if (geo->kernel != geo->win.kernel || geo->Rows() == 0 ||
      geo->Rows() * geo->Cols() > kMaxPatchElements ||
      x.type.NumElements() >= std::numeric_limits<int32_t>::max()) {
    return false;
  }
  return strategy.Choose(g, conv).kernel.empty() && PlansDense(strategy, *geo);
}

// Row (n, o) of the patches, column (c, t): the flat index into x of input position
// o * stride - pad_begin + t * dilation, or `zero` (one past x) where that lies in the padding.
HostTensorPtr PatchIndex(const ConvGeometry& geo) {
  const size_t sp = geo.in.size();
  const int64_t rows = geo.Rows(), cols = geo.Cols(), taps = geo.Taps();
  const int64_t plane = geo.Plane(), positions = geo.Positions();
  const int64_t zero = geo.InputElements();
  auto idx = std::make_shared<HostTensor>(TensorType{{rows, cols}, kInt32});
  int32_t* dst = idx->Data<int32_t>();
  std::vector<int64_t> o(sp), t(sp);
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t batch = row / positions;
    for (int64_t r = row % positions, d = sp; d-- > 0;) {
      o[d] = r % geo.out[d];
      r /= geo.out[d];
    }
    for (int64_t tap = 0; tap < taps; ++tap) {
      for (int64_t r = tap, d = sp; d-- > 0;) {
        t[d] = r % geo.kernel[d];
        r /= geo.kernel[d];
      }
      int64_t at = 0;
      bool inside = true;
      for (size_t d = 0; d < sp; ++d) {
        const int64_t i = o[d] * geo.win.strides[d] - geo.win.pads[d] + t[d] * geo.win.dilations[d];
        inside = inside && i >= 0 && i < geo.in[d];
        at = at * geo.in[d] + i;
      }
      for (int64_t ch = 0; ch < geo.c; ++ch) {
        const int64_t flat = (batch * geo.c + ch) * plane + at;
        dst[row * cols + ch * taps + tap] = static_cast<int32_t>(inside ? flat : zero);
      }
    }
  }
  return idx;
}

// w [OC][C][taps...] as [C * taps][OC]: column (c, t) of the patches meets row (c, t).
HostTensorPtr WeightAsKByN(const HostTensor& w, const ConvGeometry& geo) {
  const int64_t k = geo.Cols();
  auto kn = std::make_shared<HostTensor>(TensorType{{k, geo.oc}, kFloat32});
  const float* src = w.Data<float>();
  float* dst = kn->Data<float>();
  for (int64_t o = 0; o < geo.oc; ++o) {
    for (int64_t r = 0; r < k; ++r) dst[r * geo.oc + o] = src[o * k + r];
  }
  return kn;
}

class Rewriter {
 public:
  Rewriter(Graph* g, const Node& conv) : g_(*g), conv_(conv) {}

  int Value(const char* suffix, std::vector<int64_t> shape, DLDataType dtype = kFloat32) {
    return g_.AddValue(g_.UniqueName(conv_.name + suffix), TensorType{std::move(shape), dtype});
  }
  int Constant(const char* suffix, HostTensorPtr t) {
    return g_.AddConstant(g_.UniqueName(conv_.name + suffix), std::move(t));
  }
  int Emit(const char* op, const char* suffix, AttrMap attrs, std::vector<int> inputs, int output) {
    out_.push_back(Node{
        op, g_.UniqueName(conv_.name + suffix), std::move(attrs), std::move(inputs), {output}});
    return output;
  }
  std::vector<Node> Take() { return std::move(out_); }

 private:
  Graph& g_;
  const Node& conv_;
  std::vector<Node> out_;
};

std::vector<Node> AsDense(Graph* g, const Node& conv, const ConvGeometry& geo) {
  Rewriter r(g, conv);
  const int64_t elems = geo.InputElements();
  const int64_t rows = geo.Rows(), cols = geo.Cols(), positions = geo.Positions();
  int flat = r.Emit("Reshape", "_flat", {{"__out_shape", std::vector<int64_t>{elems}}},
                    {conv.inputs[0]}, r.Value("_flat", {elems}));
  if (geo.Padded()) {  // one zero past x for the taps that fall in the padding
    auto zero = std::make_shared<HostTensor>(TensorType{{1}, kFloat32});
    flat = r.Emit("Concat", "_with_zero", {{"axis", int64_t{0}}}, {flat, r.Constant("_zero", zero)},
                  r.Value("_with_zero", {elems + 1}));
  }
  const int patches = r.Emit("Gather", "_patches", {{"axis", int64_t{0}}},
                             {flat, r.Constant("_patch_index", PatchIndex(geo))},
                             r.Value("_patches", {rows, cols}));
  std::vector<int> gemm_in{
      patches, r.Constant("_weight_kn", WeightAsKByN(*g->value(conv.inputs[1]).constant, geo))};
  if (conv.HasInput(2)) gemm_in.push_back(conv.inputs[2]);
  const int prod = r.Emit(
      "Gemm", "", {{"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", int64_t{0}}},
      std::move(gemm_in), r.Value("_rows", {rows, geo.oc}));
  const int nps = r.Emit("Reshape", "_by_position",
                         {{"__out_shape", std::vector<int64_t>{geo.n, positions, geo.oc}}}, {prod},
                         r.Value("_by_position", {geo.n, positions, geo.oc}));
  const int ncp = r.Emit("Transpose", "_channels_first", {{"perm", std::vector<int64_t>{0, 2, 1}}},
                         {nps}, r.Value("_channels_first", {geo.n, geo.oc, positions}));
  r.Emit("Reshape", "_out", {{"__out_shape", g->value(conv.outputs[0]).type.shape}}, {ncp},
         conv.outputs[0]);
  return r.Take();
}

}  // namespace

void ConvAsDense(Graph* graph, const KernelStrategy& strategy) {
  std::vector<Node> nodes = std::move(graph->nodes());
  graph->nodes().clear();
  for (Node& n : nodes) {
    ConvGeometry geo;
    if (!Applies(*graph, n, strategy, &geo)) {
      graph->nodes().push_back(std::move(n));
      continue;
    }
    for (Node& m : AsDense(graph, n, geo)) graph->nodes().push_back(std::move(m));
  }
  EliminateDeadCode(graph);
}

}  // namespace compiler
}  // namespace ember
