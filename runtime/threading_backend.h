// The machine under the thread pool (thread_pool.cc): which cores the process may use, which of
// them are big or little (the rule is in ember/runtime/threading.h), and pinning a worker to a
// set of them. CpuTopology, GetCpuTopology and ReadCpuTopology are public (threading.h); the
// rest is private to the runtime (its symbols stay local: ember_runtime.map).
#ifndef EMBER_RUNTIME_THREADING_BACKEND_H_
#define EMBER_RUNTIME_THREADING_BACKEND_H_

#include <ember/runtime/threading.h>

#include <string>
#include <vector>

namespace ember::runtime::threading::backend {

/*! \brief "big", "little" or "all". */
inline const char* ModeName(AffinityMode mode) {
  switch (mode) {
    case AffinityMode::kBig:
      return "big";
    case AffinityMode::kLittle:
      return "little";
    case AffinityMode::kAll:
      break;
  }
  return "all";
}

/*! \brief The cores of \p topo the workers of \p mode run on. */
inline const std::vector<int>& CoresOf(const CpuTopology& topo, AffinityMode mode) {
  switch (mode) {
    case AffinityMode::kBig:
      return topo.big;
    case AffinityMode::kLittle:
      return topo.little;
    case AffinityMode::kAll:
      break;
  }
  return topo.all;
}

/*! \brief "0-3,6" for {0,1,2,3,6}; "none" for no cores. */
std::string FormatCpuList(const std::vector<int>& cpus);

/*!
 * \brief Pins the calling thread to \p cpus (none: leaves it alone). A failure (containers,
 * cpusets) warns once per process and the thread runs unpinned.
 */
void PinThisThread(const std::vector<int>& cpus);

}  // namespace ember::runtime::threading::backend

#endif  // EMBER_RUNTIME_THREADING_BACKEND_H_
