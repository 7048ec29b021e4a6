// DeformConv (opset 19), the deformable convolution of DCN v1 (and v2 with a mask): the input
// sampled bilinearly at each kernel tap's offset position into columns (DeformableColumns, a loop
// kernel: ops/loop_kernels_sampling.cc), then the weights times the columns as one batched MatMul
// per group, which the dense kernels run, and the bias added.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include <string>
#include <vector>

#include "ir/shape_util.h"
#include "transform/onnx_expander.h"

namespace ember {
namespace compiler {
namespace {

std::vector<int64_t> Ints(const Node& n, const char* key, size_t count, int64_t fill) {
  const std::vector<int64_t> v = n.GetInts(key, std::vector<int64_t>(count, fill));
  if (v.size() != count) {
    NodeError(n, std::string(key) + " must hold " + std::to_string(count) + " values, got " +
                     ShapeToString(v));
  }
  return v;
}

void DeformConvOp(Node n, CanonicalizeContext* ctx) {
  OnnxExpander e(n, ctx);
  const TensorType x = e.TypeOf(n.inputs.at(0)), w = e.TypeOf(n.inputs.at(1)),
                   offset = e.TypeOf(n.inputs.at(2));
  const int64_t group = n.GetInt("group", 1), offset_group = n.GetInt("offset_group", 1);
  if (x.ndim() != 4 || x.dtype.code != kDLFloat || w.ndim() != 4 || w.dtype != x.dtype ||
      group < 1 || offset_group < 1 || group > x.shape[1] || offset_group > x.shape[1] ||
      x.shape[1] % offset_group != 0 || w.shape[1] * group != x.shape[1] ||
      w.shape[0] % group != 0) {
    NodeError(n,
              "expected float X [N, C, H, W] and W [M, C / group, kH, kW] (M a multiple of "
              "group " +
                  std::to_string(group) + ", C of offset_group " + std::to_string(offset_group) +
                  "), got " + x.ToString() + " and " + w.ToString());
  }
  const std::vector<int64_t> kernel = Ints(n, "kernel_shape", 2, 0);
  const std::vector<int64_t> k =
      n.HasAttr("kernel_shape") ? kernel : std::vector<int64_t>{w.shape[2], w.shape[3]};
  const std::vector<int64_t> s = Ints(n, "strides", 2, 1), d = Ints(n, "dilations", 2, 1),
                             p = Ints(n, "pads", 4, 0);
  std::vector<int64_t> out = {x.shape[0], 0, 0};
  // Each bounded before it is multiplied or added: attributes may hold any int64.
  auto bounded = [](int64_t v, int64_t low) { return v >= low && v <= kMaxFoldElements; };
  for (size_t i = 0; i < 2; ++i) {
    const bool sane = k[i] == w.shape[2 + i] && s[i] >= 1 && bounded(d[i], 1) && bounded(p[i], 0) &&
                      bounded(p[2 + i], 0);
    const int64_t span = sane ? x.shape[2 + i] + p[i] + p[2 + i] - d[i] * (k[i] - 1) - 1 : -1;
    if (span < 0) {
      NodeError(n, "kernel " + ShapeToString(k) + " (W " + w.ToString() + "), strides " +
                       ShapeToString(s) + ", dilations " + ShapeToString(d) + " and pads " +
                       ShapeToString(p) + " do not fit the input " + x.ToString());
    }
    out[1 + i] = span / s[i] + 1;
  }
  const int64_t taps = k[0] * k[1], positions = out[1] * out[2];
  const std::vector<int64_t> want_offset = {x.shape[0], offset_group * 2 * taps, out[1], out[2]};
  if (offset.shape != want_offset || offset.dtype != x.dtype) {
    NodeError(n, "offset must be " + TensorType{want_offset, x.dtype}.ToString() + ", got " +
                     offset.ToString());
  }
  std::vector<int> operands = {n.inputs[0], n.inputs[2]};
  if (n.HasInput(4)) {
    const std::vector<int64_t> want_mask = {x.shape[0], offset_group * taps, out[1], out[2]};
    if (e.TypeOf(n.inputs[4]).shape != want_mask || e.TypeOf(n.inputs[4]).dtype != x.dtype) {
      NodeError(n, "mask must be " + TensorType{want_mask, x.dtype}.ToString() + ", got " +
                       e.TypeOf(n.inputs[4]).ToString());
    }
    operands.push_back(n.inputs[4]);
  }
  const int64_t channels = x.shape[1], filters = w.shape[0];
  const int columns =
      e.Op("DeformableColumns", operands,
           {{"kernel_shape", k},
            {"strides", s},
            {"dilations", d},
            {"pads", p},
            {"offset_group", offset_group},
            {"__out_shape",
             std::vector<int64_t>{x.shape[0], group, channels / group * taps, positions}}});
  // [group, M / group, C / group * taps] x [N, group, C / group * taps, positions].
  const int weights =
      e.Op("Reshape", {n.inputs[1], e.Ints({group, filters / group, channels / group * taps})});
  int y = e.Op("MatMul", {weights, columns});
  y = e.Op("Reshape", {y, e.Ints({x.shape[0], filters, out[1], out[2]})});
  if (n.HasInput(3)) {
    if (e.TypeOf(n.inputs[3]).shape != std::vector<int64_t>{filters}) {
      NodeError(n, "B must be [" + std::to_string(filters) + "], got " +
                       e.TypeOf(n.inputs[3]).ToString());
    }
    y = e.Op("Add", {y, e.Op("Reshape", {n.inputs[3], e.Ints({1, filters, 1, 1})})});
  }
  e.OpInto(n.outputs.at(0), "Identity", {y});
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("DeformConv", DeformConvOp);

}  // namespace compiler
}  // namespace ember
