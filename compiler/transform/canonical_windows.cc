// Window functions (opset 17: HannWindow, HammingWindow, BlackmanWindow): their size is a
// constant once shapes are static, so each becomes a constant, sum_m a_m cos(2 pi m n / d) for
// n < size, with d = size (periodic, the default) or size - 1 (symmetric). MelWeightMatrix (17),
// the mel filter bank over a spectrum, is written out as float64 ops on its (bins, bands) grid.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include <cmath>
#include <vector>

#include "frontend/onnx/onnx_dtype.h"
#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"
#include "transform/onnx_expander.h"

namespace ember {
namespace compiler {
namespace {

// The cosine series of each window, as ONNX defines them (Hamming: a0 = 25/46).
const std::vector<double> kHann = {0.5, -0.5};
const std::vector<double> kHamming = {25.0 / 46.0, -21.0 / 46.0};
const std::vector<double> kBlackman = {0.42, -0.5, 0.08};

void WindowOp(Node n, const std::vector<double>& series, CanonicalizeContext* ctx) {
  const int64_t size = ctx->OneValueInput(n, 0, "size")->GetAsInt(0);
  if (size < 1 || size > kMaxFoldElements) {
    NodeError(
        n, "size must be 1.." + std::to_string(kMaxFoldElements) + ", got " + std::to_string(size));
  }
  const DLDataType dtype = OnnxToDType(static_cast<int32_t>(n.GetInt("output_datatype", 1)),
                                       n.Describe() + ": attribute 'output_datatype'");
  const bool periodic = n.GetInt("periodic", 1) != 0;
  const double d = static_cast<double>(periodic || size == 1 ? size : size - 1);
  auto window = std::make_shared<HostTensor>(TensorType{{size}, dtype});
  for (int64_t i = 0; i < size; ++i) {
    double v = 0;
    for (size_t m = 0; m < series.size(); ++m) {
      v += series[m] * std::cos(2.0 * M_PI * static_cast<double>(m) * static_cast<double>(i) / d);
    }
    window->SetFromDouble(i, v);
  }
  ctx->SetConstOutput(n.outputs.at(0), window);
}

// A float64 [from, from + 1, ..., from + count - 1] shaped `shape`.
HostTensorPtr Steps(int64_t count, const std::vector<int64_t>& shape) {
  auto t = std::make_shared<HostTensor>(TensorType{shape, kFloat64});
  t->data.assign(static_cast<size_t>(t->type.ByteSize()), 0);
  for (int64_t i = 0; i < count; ++i) t->SetFromDouble(i, static_cast<double>(i));
  return t;
}

// MelWeightMatrix: band i of num_mel_bins rises from spectrum bin f[i] to 1 at f[i + 1] and falls
// to 0 at f[i + 2]. The num_mel_bins + 2 points f start at lower_edge_hertz and step by 1 /
// (num_mel_bins + 2) of the mel span (2595 log10(1 + hz / 700)) up to upper_edge_hertz, so the
// last falls short of it, as ONNX defines them (and ONNX Runtime computes); each is the bin
// floor((dft_length + 1) * hz / sample_rate). The edges and the sample rate may come at run time;
// the band and bin counts shape the output and must be constants.
void MelWeightMatrixOp(Node n, CanonicalizeContext* ctx) {
  OnnxExpander e(n, ctx);
  const int64_t bands = ctx->OneValueInput(n, 0, "num_mel_bins")->GetAsInt(0);
  const int64_t dft = ctx->OneValueInput(n, 1, "dft_length")->GetAsInt(0);
  const int64_t bins = dft / 2 + 1;
  if (bands < 1 || dft < 1 || dft > kMaxFoldElements || bands > kMaxFoldElements / bins) {
    NodeError(n, "num_mel_bins and dft_length must be positive, their grid at most " +
                     std::to_string(kMaxFoldElements) + " values, got " + std::to_string(bands) +
                     " and " + std::to_string(dft));
  }
  auto wide = [&](size_t i, const char* what) {  // a scalar input as float64 [1]
    if (e.TypeOf(n.inputs.at(i)).NumElements() != 1) {
      NodeError(
          n, std::string(what) + " must hold one value, got " + e.TypeOf(n.inputs[i]).ToString());
    }
    return e.Op("Reshape", {e.Cast(n.inputs[i], kFloat64), e.Ints({1})});
  };
  const double ln10 = std::log(10.0);
  auto mel = [&](int hz) {
    const int ratio =
        e.Op("Add", {e.Scalar(kFloat64, 1), e.Op("Div", {hz, e.Scalar(kFloat64, 700)})});
    return e.Op("Mul", {e.Op("Log", {ratio}), e.Scalar(kFloat64, 2595 / ln10)});
  };
  const int low = mel(wide(3, "lower_edge_hertz")), high = mel(wide(4, "upper_edge_hertz"));
  const int step = e.Op("Div", {e.Op("Sub", {high, low}), e.Scalar(kFloat64, bands + 2)});
  const int mels =
      e.Op("Add", {low, e.Op("Mul", {e.Constant("_k", Steps(bands + 2, {bands + 2})), step})});
  const int hz =
      e.Op("Mul", {e.Op("Sub", {e.Op("Exp", {e.Op("Mul", {mels, e.Scalar(kFloat64, ln10 / 2595)})}),
                                e.Scalar(kFloat64, 1)}),
                   e.Scalar(kFloat64, 700)});
  const int points =
      e.Op("Floor",
           {e.Op("Div", {e.Op("Mul", {hz, e.Scalar(kFloat64, dft + 1)}), wide(2, "sample_rate")})});
  auto band_edge = [&](int64_t first) {  // f[i + first] for every band i, as [1, bands]
    return e.Op("Slice", {points, e.Ints({first}), e.Ints({first + bands}), e.Ints({0})});
  };
  const int left = band_edge(0), center = band_edge(1), right = band_edge(2);
  const int j = e.Constant("_j", Steps(bins, {bins, 1}));
  auto both = [&](int a, int b) { return e.Op("And", {a, b}); };
  const int rises = both(e.Op("GreaterOrEqual", {j, left}), e.Op("LessOrEqual", {j, center}));
  const int falls = both(e.Op("GreaterOrEqual", {j, center}), e.Op("Less", {j, right}));
  const int rising =
      e.Op("Where", {e.Op("Equal", {j, center}), e.Scalar(kFloat64, 1),
                     e.Op("Div", {e.Op("Sub", {j, left}), e.Op("Sub", {center, left})})});
  const int falling = e.Op("Div", {e.Op("Sub", {right, j}), e.Op("Sub", {right, center})});
  const int weights =
      e.Op("Where", {falls, falling, e.Op("Where", {rises, rising, e.Scalar(kFloat64, 0)})});
  const int64_t to = n.GetInt("output_datatype", 1);
  OnnxToDType(static_cast<int32_t>(to), n.Describe() + ": attribute 'output_datatype'");
  e.OpInto(n.outputs.at(0), "Cast", {weights}, {{"to", to}});
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("MelWeightMatrix", MelWeightMatrixOp);
EMBER_REGISTER_OP_CANONICALIZE("HannWindow",
                               [](Node n, CanonicalizeContext* ctx) { WindowOp(n, kHann, ctx); });
EMBER_REGISTER_OP_CANONICALIZE("HammingWindow", [](Node n, CanonicalizeContext* ctx) {
  WindowOp(n, kHamming, ctx);
});
EMBER_REGISTER_OP_CANONICALIZE("BlackmanWindow", [](Node n, CanonicalizeContext* ctx) {
  WindowOp(n, kBlackman, ctx);
});

}  // namespace compiler
}  // namespace ember
