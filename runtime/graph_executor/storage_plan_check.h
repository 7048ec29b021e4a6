// Checks graph.json's storage plan (attrs.storage_id) before any storage is allocated.
#ifndef EMBER_RUNTIME_GRAPH_EXECUTOR_STORAGE_PLAN_CHECK_H_
#define EMBER_RUNTIME_GRAPH_EXECUTOR_STORAGE_PLAN_CHECK_H_

#include <string>

#include "graph_executor/graph_json.h"

namespace ember::runtime {

/*!
 * \brief Throws Error naming \p source, both entries and their nodes when two values share a
 * storage id while both are live: an op output may not use the storage of an input or param
 * (those live for the whole run), and op outputs share storage only when one is dead before the
 * other is written. A "__nop" output is the same bytes as its input and counts as that value.
 * \p g must already be self-consistent (ParseGraphJson checks that first).
 */
void CheckStoragePlan(const Graph& g, const std::string& source);

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_GRAPH_EXECUTOR_STORAGE_PLAN_CHECK_H_
