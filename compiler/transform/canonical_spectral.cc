// DFT and STFT (opset 17) as products with constant bases, so the fast kernels run them: a DFT
// along an axis is one MatMul of the signal (that axis and the real/imaginary pair flattened)
// with a [N * C, K * 2] basis of cosines and sines; an STFT is one 1-D Conv whose output
// channels are the windowed basis (stride: the frame step), reshaped and transposed into
// [batch, frames, bins, 2]. The bases are built at compile time, so the sizes must be constants.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include <cmath>
#include <vector>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

// One frequency's weights on the real (c = 0) and imaginary (c = 1) parts of sample n, for the
// real (o = 0) and imaginary (o = 1) parts of the result: x * e^(-+i theta), theta = 2 pi k n / N.
double BasisWeight(int64_t k, int64_t n, int64_t length, int c, int o, bool inverse) {
  const double theta = 2.0 * M_PI * static_cast<double>(k % length) *
                       static_cast<double>(n % length) / static_cast<double>(length);
  const double sign = inverse ? 1.0 : -1.0;  // e^(sign * i theta)
  const double cosine = std::cos(theta), sine = sign * std::sin(theta);
  if (o == 0) return c == 0 ? cosine : -sine;  // re(x) cos - im(x) * sign sin
  return c == 0 ? sine : cosine;               // re(x) * sign sin + im(x) cos
}

void CheckBasisSize(const Node& n, int64_t elements) {
  if (elements > kMaxFoldElements) {
    NodeUnsupported(n, "its basis would hold " + std::to_string(elements) + " values, more than " +
                           std::to_string(kMaxFoldElements) +
                           " (a transform this long needs an FFT)");
  }
}

// The last axis of a signal: 1 (real) or 2 (real, imaginary).
int64_t Components(const Node& n, const TensorType& signal) {
  const int64_t c = signal.shape.empty() ? 0 : signal.shape.back();
  if (signal.ndim() < 3 || (c != 1 && c != 2)) {
    NodeError(n, "expected a signal [batch, ..., 1 or 2], got " + signal.ToString());
  }
  return c;
}

void DftOp(Node n, CanonicalizeContext* ctx) {
  const TensorType x = ctx->TypeOf(n.inputs.at(0));
  const int64_t c = Components(n, x), r = x.ndim();
  // Opset 20 made the axis an input (default -2, the last signal axis).
  const int64_t given = ctx->opset() < 20 ? n.GetInt("axis", 1)
                        : n.HasInput(2)   ? ctx->OneValueInput(n, 2, "axis")->GetAsInt(0)
                                          : -2;
  const int64_t axis = NormalizeAxis(n, given, r);
  if (axis == 0 || axis == r - 1) {
    NodeError(n, "axis must be a signal axis (1.." + std::to_string(r - 2) + "), got " +
                     std::to_string(axis));
  }
  const bool inverse = n.GetInt("inverse", 0) != 0, onesided = n.GetInt("onesided", 0) != 0;
  if (onesided && (c == 2 || inverse)) {
    NodeError(n, "onesided applies to a real forward transform only");
  }
  const int64_t samples = x.shape[axis];
  const int64_t length =
      n.HasInput(1) ? ctx->OneValueInput(n, 1, "dft_length")->GetAsInt(0) : samples;
  if (length < 1) NodeError(n, "dft_length must be positive, got " + std::to_string(length));
  const int64_t bins = onesided ? length / 2 + 1 : length;
  CheckBasisSize(n, samples * c * bins * 2);
  auto basis = std::make_shared<HostTensor>(TensorType{{samples * c, bins * 2}, x.dtype});
  const double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  for (int64_t s = 0; s < samples && s < length; ++s) {
    for (int64_t ci = 0; ci < c; ++ci) {
      for (int64_t k = 0; k < bins; ++k) {
        for (int o = 0; o < 2; ++o) {
          basis->SetFromDouble((s * c + ci) * bins * 2 + k * 2 + o,
                               scale * BasisWeight(k, s, length, static_cast<int>(ci), o, inverse));
        }
      }
    }
  }
  // [..., samples at axis, ..., c] -> [rest, samples, c] -> [rows, samples * c] x basis.
  std::vector<int64_t> perm, rest;
  for (int64_t d = 0; d < r - 1; ++d) {
    if (d != axis) perm.push_back(d), rest.push_back(x.shape[d]);
  }
  perm.push_back(axis);
  perm.push_back(r - 1);
  int64_t rows = 1;
  for (int64_t d : rest) rows *= d;
  int moved = ctx->Emit("Transpose", n.name + "_signal_last", {n.inputs[0]}, {{"perm", perm}});
  int flat = ctx->Emit("Reshape", n.name + "_rows", {moved},
                       {{"__out_shape", std::vector<int64_t>{rows, samples * c}}});
  int product =
      ctx->Emit("MatMul", n.name + "_basis", {flat, ctx->Constant(n.name + "_dft_basis", basis)});
  std::vector<int64_t> shape = rest;
  shape.push_back(bins);
  shape.push_back(2);
  int back = ctx->Emit("Reshape", n.name + "_spectrum", {product}, {{"__out_shape", shape}});
  std::vector<int64_t> inverse_perm(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) inverse_perm[static_cast<size_t>(perm[d])] = d;
  ctx->EmitInto(Node{"Transpose", n.name, {{"perm", inverse_perm}}, {back}, n.outputs});
}

void StftOp(Node n, CanonicalizeContext* ctx) {
  const TensorType x = ctx->TypeOf(n.inputs.at(0));
  const int64_t c = Components(n, x);
  if (x.ndim() != 3) NodeError(n, "expected a signal [batch, length, 1 or 2], got " + x.ToString());
  const int64_t step = ctx->OneValueInput(n, 1, "frame_step")->GetAsInt(0);
  // The window may be computed at run time: it scales the basis, which then folds or not.
  const bool windowed = n.HasInput(2);
  const TensorType window = windowed ? ctx->TypeOf(n.inputs[2]) : TensorType{};
  int64_t length = windowed ? window.NumElements() : 0;
  if (n.HasInput(3)) length = ctx->OneValueInput(n, 3, "frame_length")->GetAsInt(0);
  const bool onesided = n.GetInt("onesided", 1) != 0;
  if (step < 1 || length < 1 || length > x.shape[1]) {
    NodeError(n, "frame_step must be positive and frame_length 1.." + std::to_string(x.shape[1]) +
                     " (the signal's length), got " + std::to_string(step) + " and " +
                     std::to_string(length));
  }
  if (windowed && window.shape != std::vector<int64_t>{length}) {
    NodeError(n, "window must be [frame_length] = [" + std::to_string(length) + "], got " +
                     window.ToString());
  }
  if (onesided && c == 2) NodeError(n, "onesided applies to a real signal only");
  const int64_t bins = onesided ? length / 2 + 1 : length;
  CheckBasisSize(n, 2 * bins * c * length);
  // Conv weight [2 * bins (real parts, then imaginary)][c][length].
  auto weight = std::make_shared<HostTensor>(TensorType{{2 * bins, c, length}, x.dtype});
  for (int o = 0; o < 2; ++o) {
    for (int64_t k = 0; k < bins; ++k) {
      for (int64_t ci = 0; ci < c; ++ci) {
        for (int64_t s = 0; s < length; ++s) {
          weight->SetFromDouble(((o * bins + k) * c + ci) * length + s,
                                BasisWeight(k, s, length, static_cast<int>(ci), o, false));
        }
      }
    }
  }
  int basis = ctx->Constant(n.name + "_stft_basis", weight);
  if (windowed) basis = ctx->Emit("Mul", n.name + "_windowed_basis", {basis, n.inputs[2]});
  const int64_t frames = (x.shape[1] - length) / step + 1;
  int channels = ctx->Emit("Transpose", n.name + "_channels", {n.inputs[0]},
                           {{"perm", std::vector<int64_t>{0, 2, 1}}});
  int conv = ctx->Emit("Conv", n.name + "_frames", {channels, basis},
                       {{"kernel_shape", std::vector<int64_t>{length}},
                        {"strides", std::vector<int64_t>{step}},
                        {"dilations", std::vector<int64_t>{1}},
                        {"pads", std::vector<int64_t>{0, 0}},
                        {"group", int64_t{1}}});
  int parts = ctx->Emit("Reshape", n.name + "_parts", {conv},
                        {{"__out_shape", std::vector<int64_t>{x.shape[0], 2, bins, frames}}});
  ctx->EmitInto(
      Node{"Transpose", n.name, {{"perm", std::vector<int64_t>{0, 3, 2, 1}}}, {parts}, n.outputs});
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("DFT", DftOp);
EMBER_REGISTER_OP_CANONICALIZE("STFT", StftOp);

}  // namespace compiler
}  // namespace ember
