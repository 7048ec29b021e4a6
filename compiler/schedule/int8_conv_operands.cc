// ReadInt8ConvOperands and LargestMagnitude: see int8_conv_operands.h.
#include "int8_conv_operands.h"

#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/layout.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace ember::compiler::schedule {

bool ReadInt8ConvOperands(const Graph& g, const Node& conv, size_t weight_rank,
                          Int8ConvOperands* out) {
  if (!conv.HasAttr(kDataZeroPointAttr) || !conv.HasInput(0) || !conv.HasInput(1)) return false;
  const int64_t in_block = LayoutBlock(conv.GetString(kDataLayoutAttr, "NCHW"));
  const int64_t out_block = LayoutBlock(conv.GetString(kOutLayoutAttr, "NCHW"));
  const TensorType x{NchwShapeOf(g.value(conv.inputs[0]).type.shape, in_block),
                     g.value(conv.inputs[0]).type.dtype};
  // (Canonicalization asks before the output has a type; only a blocked one is checked.)
  if (out_block != 0 && (conv.outputs.size() != 1 ||
                         NchwShapeOf(g.value(conv.outputs[0]).type.shape, out_block).empty())) {
    return false;
  }
  const Value& w = g.value(conv.inputs[1]);
  const std::vector<int64_t>& ws = w.type.shape;
  if (x.ndim() != 4 || out_block < 0 || (x.dtype != kUInt8 && x.dtype != kInt8) ||
      !w.is_constant() || w.type.dtype.bits != 8 || ws.size() != weight_rank || weight_rank < 4) {
    return false;
  }
  WindowAttrs win;
  std::string why;
  if (!WindowAttrs::Read(conv, 2, {ws[2], ws[3]}, &win, &why)) return false;
  for (int64_t d : win.dilations) {
    if (d < 1) return false;
  }
  for (int64_t s : win.strides) {
    if (s < 1 || s > 4) return false;
  }
  for (int64_t p : win.pads) {
    if (p < 0) return false;
  }
  out->data = x;
  out->in_block = in_block;
  out->out_block = out_block;
  out->weight = &w;
  out->window = win;
  out->zero_point = conv.GetInt(kDataZeroPointAttr, 0);
  out->zero_point_input = -1;
  if (conv.HasInput(kDataZeroPointInput)) {
    const TensorType& zp = g.value(conv.inputs[kDataZeroPointInput]).type;
    if (zp.NumElements() != 1 || zp.dtype != x.dtype || out->zero_point != 0) return false;
    out->zero_point_input = conv.inputs[kDataZeroPointInput];
  }
  return true;
}

int64_t LargestMagnitude(const HostTensor& t) {
  int64_t most = 0;
  for (int64_t i = 0; i < t.NumElements(); ++i) most = std::max(most, std::abs(t.GetAsInt(i)));
  return most;
}

}  // namespace ember::compiler::schedule
