// libFuzzer target: graph.json parsing must refuse bad input with an Error, never crash or hang.
#include <ember/runtime/logging.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "graph_executor/graph_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    ember::runtime::Graph g = ember::runtime::ParseGraphJson(text, "fuzz.json");
    // Whatever parses must be safe to index the way the executor does.
    for (const auto& n : g.nodes) {
      for (const auto& e : n.inputs) {
        if (g.EntryId(e) >= g.NumEntries()) __builtin_trap();
      }
    }
    for (const auto& e : g.heads) {
      if (g.EntryId(e) >= g.NumEntries()) __builtin_trap();
    }
  } catch (const ember::runtime::Error&) {
  }
  return 0;
}
