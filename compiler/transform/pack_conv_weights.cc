// PackConvWeights: constant Conv weights rewritten once, at compile time, into the blocked layout
// the conv's planned kernel reads (compiler/schedule/conv2d_nchw_ocvec.cc, conv2d_1x1.cc,
// conv2d_int8.cc).
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/weight_layout.h>
#include <ember/compiler/transform.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "transform/derived_constants.h"

namespace ember {
namespace compiler {
namespace {

// OIHW -> [OC/block][IC/ic_block][KH][KW][ic_block][block] (ic_block 1: [OC/block][IC][KH][KW]
// [block]), float32 or 8-bit; the element count and declared shape stay.
HostTensorPtr PackOIHW(const HostTensor& w, int64_t block, int64_t ic_block) {
  const std::vector<int64_t>& shape = w.type.shape;
  const int64_t oc = shape[0], ic = shape[1], taps = shape[2] * shape[3];
  const size_t bytes = (w.type.dtype.bits + 7) / 8;
  auto packed = std::make_shared<HostTensor>(w.type);
  const uint8_t* src = w.data.data();
  uint8_t* dst = packed->data.data();
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t i = 0; i < ic; ++i) {
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t outer = ((o / block) * (ic / ic_block) + i / ic_block) * taps + t;
        const int64_t to = (outer * ic_block + i % ic_block) * block + o % block;
        std::memcpy(dst + to * bytes, src + ((o * ic + i) * taps + t) * bytes, bytes);
      }
    }
  }
  return packed;
}

// `n`'s constant weight replaced by PackOIHW's layout of it, marked with `block`.
void PackWeightBlocked(Graph* graph, DerivedConstants* derived, Node* n, int64_t block,
                       int64_t ic_block) {
  const int w = n->inputs[1];
  const std::string params = std::to_string(block) + "x" + std::to_string(ic_block);
  n->inputs[1] = derived->Get(w, "_packed", params, [&] {
    return PackOIHW(*graph->value(w).constant, block, std::max<int64_t>(1, ic_block));
  });
  n->attrs[kPackedWeightBlockAttr] = block;
  if (ic_block > 1) n->attrs[kPackedWeightIcBlockAttr] = ic_block;
}

int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// An integer conv's int8 OIHW weight as the int8 kernel streams it, [OCp/B][ICp/4][KH][KW][B][4]
// with zeros past the channels, and its bias compensated for the data's zero point z (read as
// unsigned bytes: an int8 input + 128, so z + 128) and the offset the kernel subtracts from
// them (its dot's operand rule): sum((x - z) * w) = sum((u - offset) * w) - (zu - offset) *
// sum(w). A run-time zero point leaves z out of the bias (only the + 128) and adds the sums
// as an input. With `halves`, each [B][4] vector in halves order (kPackedInt8HalvesAttr).
void PackInt8Conv(Graph* graph, Node* n, int64_t block, int64_t data_offset, bool halves) {
  const Value& w = graph->value(n->inputs[1]);
  const std::vector<int64_t>& shape = w.type.shape;
  const int64_t oc = shape[0], ic = shape[1], kh = shape[2], kw = shape[3], taps = kh * kw;
  const int64_t ocp = RoundUp(oc, block), icp = RoundUp(ic, kInt8DotDepth);
  auto packed = std::make_shared<HostTensor>(
      TensorType{{ocp / block, icp / kInt8DotDepth, kh, kw, block, kInt8DotDepth}, kInt8});
  std::fill_n(packed->Data<int8_t>(), packed->NumElements(), int8_t{0});
  auto bias = std::make_shared<HostTensor>(TensorType{{ocp}, kInt32});
  auto sums = std::make_shared<HostTensor>(TensorType{{ocp}, kInt32});  // zero-filled
  const bool signed_data = graph->value(n->inputs[0]).type.dtype == kInt8;
  const int64_t zu = n->GetInt(kDataZeroPointAttr, 0) + (signed_data ? 128 : 0);
  const int64_t compensation = zu - data_offset;
  const int8_t* src = w.constant->Data<int8_t>();
  int8_t* dst = packed->Data<int8_t>();
  for (int64_t o = 0; o < oc; ++o) {
    int64_t sum = 0;
    for (int64_t i = 0; i < ic; ++i) {
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t outer = ((o / block) * (icp / kInt8DotDepth) + i / kInt8DotDepth) * taps + t;
        const int8_t v = src[(o * ic + i) * taps + t];
        const int64_t lane = o % block, byte = i % kInt8DotDepth;
        const int64_t at =
            halves ? Int8HalvesIndex(lane, byte, block) : lane * kInt8DotDepth + byte;
        dst[outer * block * kInt8DotDepth + at] = v;
        sum += v;
      }
    }
    const int64_t b =
        n->HasInput(2) ? static_cast<int64_t>(graph->value(n->inputs[2]).constant->GetAsDouble(o))
                       : 0;
    bias->Data<int32_t>()[o] = static_cast<int32_t>(b - compensation * sum);
    sums->Data<int32_t>()[o] = static_cast<int32_t>(sum);
  }
  const std::string w_name = w.name;
  n->inputs[1] = graph->AddConstant(graph->UniqueName(w_name + "_packed"), packed);
  const std::string bias_name = n->HasInput(2) ? graph->value(n->inputs[2]).name : w_name;
  if (n->inputs.size() < 3) n->inputs.resize(3, kAbsentValue);
  n->inputs[2] = graph->AddConstant(graph->UniqueName(bias_name + "_compensated"), bias);
  if (n->HasInput(kDataZeroPointInput)) {
    // The run-time zero point's compensation, -zp * sum(w), is the kernel's to add.
    n->inputs.resize(kWeightSumInput + 1, kAbsentValue);
    n->inputs[kWeightSumInput] = graph->AddConstant(graph->UniqueName(w_name + "_sums"), sums);
  }
  n->attrs[kPackedInt8WeightAttr] = block;
  if (data_offset != 0) n->attrs[kPackedInt8DataOffsetAttr] = data_offset;
  if (halves) n->attrs[kPackedInt8HalvesAttr] = int64_t{1};
}

}  // namespace

void PackConvWeights(Graph* graph) {
  DerivedConstants derived(graph);
  for (Node& n : graph->nodes()) {
    if (n.op == "Conv" && KernelPlan::Of(n).int8_dot) {
      // Depthwise: OIHW as it is (weight_block 0), or a tap's channels together for the blocked
      // kernel; the dense kernels' byte layout otherwise.
      const KernelPlan plan = KernelPlan::Of(n);
      const bool depthwise = n.GetInt("group", 1) > 1;
      if (plan.weight_block > 0 && depthwise && !n.HasAttr(kPackedWeightBlockAttr)) {
        PackWeightBlocked(graph, &derived, &n, plan.weight_block, 1);
      } else if (plan.weight_block > 0 && !depthwise && !n.HasAttr(kPackedInt8WeightAttr)) {
        PackInt8Conv(graph, &n, plan.weight_block, plan.int8_data_offset, plan.int8_weight_halves);
      }
      continue;
    }
    if (n.op != "Conv" || n.HasAttr(kPackedWeightBlockAttr) || !n.HasInput(1)) continue;
    const Value& w = graph->value(n.inputs[1]);
    if (!w.is_constant() || w.type.dtype != kFloat32 || w.type.shape.size() != 4) continue;
    const KernelPlan plan = KernelPlan::Of(n);
    const int64_t block = plan.weight_block, ic_block = plan.weight_ic_block;
    if (block > 1) PackWeightBlocked(graph, &derived, &n, block, ic_block);
  }
}

}  // namespace compiler
}  // namespace ember
