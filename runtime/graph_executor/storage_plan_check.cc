// Storage-plan check: live ranges per value, then no two values of one storage id may overlap.
// The executor runs nodes in order and a kernel's output never aliases its inputs (TVM's and
// emberc's planners both allocate a node's outputs before releasing its inputs), so a value is
// live from the node that writes it through the last node that reads it, inclusive.
#include "graph_executor/storage_plan_check.h"

#include <ember/runtime/logging.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

namespace ember::runtime {
namespace {

// Steps are node ids; inputs and params are written before step 0 and read after the last one.
constexpr int64_t kBeforeRun = -1;
constexpr int64_t kAfterRun = std::numeric_limits<int64_t>::max();

struct LiveRange {
  int64_t first = 0;
  int64_t last = 0;
  uint32_t eid = 0;  // the entry that owns the bytes (a "__nop" output points at its input's)
};

std::string EntryLabel(const Graph& g, const std::vector<uint32_t>& entry_node, uint32_t eid) {
  const GraphNode& n = g.nodes[entry_node[eid]];
  std::string kind = n.op == "null" ? "input/param" : "output of";
  return "entry " + std::to_string(eid) + " (" + kind + " node " + std::to_string(entry_node[eid]) +
         " \"" + n.name + "\")";
}

}  // namespace

void CheckStoragePlan(const Graph& g, const std::string& source) {
  size_t n = g.NumEntries();
  std::vector<uint32_t> entry_node(n);
  std::vector<uint32_t> owner(n);
  for (uint32_t nid = 0; nid < g.nodes.size(); ++nid) {
    for (uint32_t eid = g.node_row_ptr[nid]; eid < g.node_row_ptr[nid + 1]; ++eid) {
      entry_node[eid] = nid;
      owner[eid] = eid;
    }
  }
  std::vector<LiveRange> live(n);
  for (uint32_t eid = 0; eid < n; ++eid) {
    bool is_arg = g.nodes[entry_node[eid]].op == "null";
    int64_t step = entry_node[eid];
    live[eid] = {is_arg ? kBeforeRun : step, is_arg ? kAfterRun : step, eid};
  }
  for (uint32_t nid = 0; nid < g.nodes.size(); ++nid) {
    const GraphNode& node = g.nodes[nid];
    if (node.op == "tvm_op" && node.func_name == kNopFunc && !node.inputs.empty()) {
      uint32_t in = owner[g.EntryId(node.inputs[0])];
      for (uint32_t eid = g.node_row_ptr[nid]; eid < g.node_row_ptr[nid + 1]; ++eid) {
        // The executor runs nothing for "__nop": its output is correct only in its input's bytes.
        if (g.storage_id[eid] != g.storage_id[in]) {
          EMBER_LOG_FATAL << source << ": " << EntryLabel(g, entry_node, eid)
                          << " is a \"__nop\" output, so it must have the storage id of its input "
                          << EntryLabel(g, entry_node, in) << " (" << g.storage_id[in] << "), got "
                          << g.storage_id[eid];
        }
        owner[eid] = in;
      }
    }
    for (const GraphEntry& e : node.inputs) {
      LiveRange& r = live[owner[g.EntryId(e)]];
      r.last = std::max<int64_t>(r.last, nid);
    }
  }
  for (const GraphEntry& e : g.heads) live[owner[g.EntryId(e)]].last = kAfterRun;
  // A "__nop" output keeps its input's bytes alive as long as the output is read.
  for (uint32_t eid = 0; eid < n; ++eid) {
    if (owner[eid] != eid) {
      LiveRange& r = live[owner[eid]];
      r.last = std::max(r.last, live[eid].last);
    }
  }
  std::vector<std::vector<LiveRange>> by_storage(n);
  for (uint32_t eid = 0; eid < n; ++eid) {
    if (owner[eid] == eid) by_storage[static_cast<size_t>(g.storage_id[eid])].push_back(live[eid]);
  }
  for (size_t sid = 0; sid < n; ++sid) {
    std::vector<LiveRange>& ranges = by_storage[sid];
    if (ranges.size() < 2) continue;  // nothing to overlap (and qsort takes no null array)
    // libc's qsort rather than std::sort: one call instead of 2.5 KB of sort templates, and
    // ties in entry order, so the message names the same pair on every platform.
    std::qsort(ranges.data(), ranges.size(), sizeof(LiveRange), [](const void* a, const void* b) {
      const auto* x = static_cast<const LiveRange*>(a);
      const auto* y = static_cast<const LiveRange*>(b);
      if (x->first != y->first) return x->first < y->first ? -1 : 1;
      return x->eid < y->eid ? -1 : x->eid > y->eid ? 1 : 0;
    });
    // Sorted by start, a range overlaps an earlier one iff it starts before the latest end so far.
    const LiveRange* longest = &ranges[0];
    for (size_t i = 1; i < ranges.size(); ++i) {
      const LiveRange& later = ranges[i];
      if (later.first <= longest->last) {
        EMBER_LOG_FATAL << source << ": attrs.storage_id gives "
                        << EntryLabel(g, entry_node, later.eid) << " storage " << sid << ", which "
                        << EntryLabel(g, entry_node, longest->eid)
                        << " still needs then; values may share storage only when one is dead "
                        << "before the other is written";
      }
      if (later.last > longest->last) longest = &later;
    }
  }
}

}  // namespace ember::runtime
