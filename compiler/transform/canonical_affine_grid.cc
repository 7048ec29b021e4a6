// AffineGrid (opset 20), the sampling grid GridSample reads in a spatial transformer: each output
// pixel's normalized coordinates (x, y[, z], 1), a constant once the size is, times theta^T: one
// batched MatMul, reshaped to (N, H, W, 2) or (N, D, H, W, 3).
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include <string>
#include <vector>

#include "ir/shape_util.h"
#include "transform/onnx_expander.h"

namespace ember {
namespace compiler {
namespace {

// Pixel i of `size` in [-1, 1]: the centres of the pixels, or with align_corners their corners
// (-1 and 1 the first and last; a lone pixel at -1).
double NormalizedCoordinate(int64_t i, int64_t size, bool align_corners) {
  if (align_corners) return size > 1 ? -1.0 + 2.0 * i / (size - 1) : -1.0;
  return (2.0 * i + 1.0) / size - 1.0;
}

// (prod(spatial), spatial.size() + 1): each pixel's coordinates, the last axis's (x) first, then a
// one for theta's translation column.
HostTensorPtr BaseGrid(const std::vector<int64_t>& spatial, bool align_corners, DLDataType dtype) {
  int64_t pixels = 1;
  for (int64_t s : spatial) pixels *= s;
  const int64_t dims = static_cast<int64_t>(spatial.size());
  auto grid = std::make_shared<HostTensor>(TensorType{{pixels, dims + 1}, dtype});
  grid->data.assign(static_cast<size_t>(grid->type.ByteSize()), 0);
  for (int64_t p = 0; p < pixels; ++p) {
    int64_t rest = p;
    for (int64_t d = dims; d-- > 0;) {  // the last axis (x) varies fastest and comes first
      const int64_t size = spatial[static_cast<size_t>(d)];
      grid->SetFromDouble(p * (dims + 1) + (dims - 1 - d),
                          NormalizedCoordinate(rest % size, size, align_corners));
      rest /= size;
    }
    grid->SetFromDouble(p * (dims + 1) + dims, 1.0);
  }
  return grid;
}

void AffineGridOp(Node n, CanonicalizeContext* ctx) {
  OnnxExpander e(n, ctx);
  const TensorType theta = ctx->TypeOf(n.inputs.at(0));
  const std::vector<int64_t> size = ctx->RequiredConstInput(n, 1, "size")->ToIntVector();
  const int64_t dims = static_cast<int64_t>(size.size()) - 2;  // 2 or 3 spatial axes
  const bool fits = (dims == 2 || dims == 3) && theta.ndim() == 3 && theta.shape[0] == size[0] &&
                    theta.shape[1] == dims && theta.shape[2] == dims + 1 &&
                    theta.dtype.code == kDLFloat;
  if (!fits) {
    NodeError(n,
              "theta must be float (N, 2, 3) for a size (N, C, H, W) or (N, 3, 4) for (N, C, D, "
              "H, W), got theta " +
                  theta.ToString() + " and size " + ShapeToString(size));
  }
  const std::vector<int64_t> spatial(size.begin() + 2, size.end());
  // The grid of coordinates is a constant of (dims + 1) values a pixel: bounded like a fold.
  int64_t pixels = 1;
  for (int64_t s : spatial) {
    if (s < 1 || pixels > kMaxFoldElements / 4 / s) {
      NodeError(n, "size's spatial dimensions must be positive and hold at most " +
                       std::to_string(kMaxFoldElements / 4) + " pixels, got " +
                       ShapeToString(size));
    }
    pixels *= s;
  }
  const int base =
      e.Constant("_grid", BaseGrid(spatial, n.GetInt("align_corners", 0) != 0, theta.dtype));
  const int theta_t = e.Op("Transpose", {n.inputs[0]}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  std::vector<int64_t> out_shape = {size[0]};
  out_shape.insert(out_shape.end(), spatial.begin(), spatial.end());
  out_shape.push_back(dims);
  e.OpInto(n.outputs.at(0), "Reshape", {e.Op("MatMul", {base, theta_t}), e.Ints(out_shape)});
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("AffineGrid", AffineGridOp);

}  // namespace compiler
}  // namespace ember
