// KernelPlan as node attributes: one key per field, so graph dumps (--dump-ir) show each choice.
#include <ember/compiler/ir/kernel_plan.h>

namespace ember {
namespace compiler {
namespace {

constexpr const char* kKernelKey = "ember_plan_kernel";
constexpr const char* kWeightBlockKey = "ember_plan_weight_block";
constexpr const char* kWeightIcBlockKey = "ember_plan_weight_ic_block";
constexpr const char* kWinogradTileKey = "ember_plan_winograd_tile";
constexpr const char* kWinogradBlockKey = "ember_plan_winograd_block";
constexpr const char* kDensePanelKey = "ember_plan_dense_panel";
constexpr const char* kInt8DotKey = "ember_plan_int8_dot";
constexpr const char* kInt8DataOffsetKey = "ember_plan_int8_data_offset";
constexpr const char* kInt8WeightHalvesKey = "ember_plan_int8_weight_halves";
constexpr const char* kFusedWithProducerKey = "ember_plan_fused_with_producer";

}  // namespace

bool KernelPlan::IsPlanned(const Node& node) { return node.HasAttr(kKernelKey); }

KernelPlan KernelPlan::Of(const Node& node) {
  KernelPlan p;
  p.kernel = node.GetString(kKernelKey, "");
  p.weight_block = node.GetInt(kWeightBlockKey, 0);
  p.weight_ic_block = node.GetInt(kWeightIcBlockKey, 0);
  p.winograd_tile = node.GetInt(kWinogradTileKey, 0);
  p.winograd_block = node.GetInt(kWinogradBlockKey, 0);
  p.dense_panel = node.GetInt(kDensePanelKey, 0);
  p.int8_dot = node.GetInt(kInt8DotKey, 0) != 0;
  p.int8_data_offset = node.GetInt(kInt8DataOffsetKey, 0);
  p.int8_weight_halves = node.GetInt(kInt8WeightHalvesKey, 0) != 0;
  p.fused_with_producer = node.GetInt(kFusedWithProducerKey, 0) != 0;
  return p;
}

void KernelPlan::AttachTo(Node* node) const {
  node->attrs[kKernelKey] = kernel;
  // Only the fields in use, so dumps stay short.
  const std::pair<const char*, int64_t> fields[] = {
      {kWeightBlockKey, weight_block},
      {kWeightIcBlockKey, weight_ic_block},
      {kWinogradTileKey, winograd_tile},
      {kWinogradBlockKey, winograd_block},
      {kDensePanelKey, dense_panel},
      {kInt8DotKey, int8_dot ? 1 : 0},
      {kInt8DataOffsetKey, int8_data_offset},
      {kInt8WeightHalvesKey, int8_weight_halves ? 1 : 0},
      {kFusedWithProducerKey, fused_with_producer ? 1 : 0}};
  for (const auto& [key, value] : fields) {
    if (value != 0) {
      node->attrs[key] = value;
    } else {
      node->attrs.erase(key);
    }
  }
}

}  // namespace compiler
}  // namespace ember
