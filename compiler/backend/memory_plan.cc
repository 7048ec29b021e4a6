// PlanMemory: storage ids for graph.json, reusing a kernel output's storage once it is dead.
#include <ember/compiler/backend.h>

namespace ember {
namespace compiler {

MemoryPlan PlanMemory(const std::vector<int64_t>& entry_bytes,
                      const std::vector<bool>& is_op_output,
                      const std::vector<std::vector<int>>& reads,
                      const std::vector<std::vector<int>>& writes,
                      const std::vector<bool>& pinned) {
  MemoryPlan plan;
  size_t n = entry_bytes.size();
  plan.storage_id.assign(n, -1);
  std::vector<int> refs(n, 0);
  for (const auto& r : reads) {
    for (int e : r) ++refs[static_cast<size_t>(e)];
  }
  auto new_storage = [&](int64_t bytes) {
    plan.storage_bytes.push_back(bytes);
    return static_cast<int>(plan.storage_bytes.size() - 1);
  };
  for (size_t e = 0; e < n; ++e) {
    if (!is_op_output[e]) plan.storage_id[e] = new_storage(entry_bytes[e]);
  }
  std::vector<int> free_list;
  std::vector<bool> is_activation(0);
  auto release = [&](int e) {
    if (is_op_output[static_cast<size_t>(e)] && !pinned[static_cast<size_t>(e)]) {
      free_list.push_back(plan.storage_id[static_cast<size_t>(e)]);
    }
  };
  std::vector<int> activation_ids;
  for (size_t step = 0; step < writes.size(); ++step) {
    for (int e : writes[step]) {
      int64_t need = entry_bytes[static_cast<size_t>(e)];
      plan.activation_bytes_no_reuse += need;
      int best = -1;
      for (size_t i = 0; i < free_list.size(); ++i) {
        int64_t have = plan.storage_bytes[static_cast<size_t>(free_list[i])];
        if (best < 0) {
          best = static_cast<int>(i);
          continue;
        }
        int64_t cur = plan.storage_bytes[static_cast<size_t>(free_list[static_cast<size_t>(best)])];
        bool fits = have >= need, cur_fits = cur >= need;
        // Prefer the smallest that fits; among too-small ones the largest (least growth).
        if ((fits && (!cur_fits || have < cur)) || (!fits && !cur_fits && have > cur)) {
          best = static_cast<int>(i);
        }
      }
      int sid;
      if (best >= 0) {
        sid = free_list[static_cast<size_t>(best)];
        free_list.erase(free_list.begin() + best);
        auto& bytes = plan.storage_bytes[static_cast<size_t>(sid)];
        bytes = std::max(bytes, need);
      } else {
        sid = new_storage(need);
        activation_ids.push_back(sid);
      }
      plan.storage_id[static_cast<size_t>(e)] = sid;
    }
    for (int e : reads[step]) {
      if (--refs[static_cast<size_t>(e)] == 0) release(e);
    }
    for (int e : writes[step]) {
      if (refs[static_cast<size_t>(e)] == 0) release(e);  // written, never read
    }
  }
  for (int sid : activation_ids)
    plan.activation_bytes += plan.storage_bytes[static_cast<size_t>(sid)];
  return plan;
}

}  // namespace compiler
}  // namespace ember
