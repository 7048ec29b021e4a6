// CPU topology (sysfs, big/little) and thread affinity for the thread pool; see
// threading_backend.h.
#include "threading_backend.h"

#include <ember/runtime/logging.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace ember::runtime::threading {
namespace {

constexpr const char* kSysfsCpuDir = "/sys/devices/system/cpu";

std::vector<int> ProcessCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  if (cpus.empty()) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (long cpu = 0; cpu < std::max(online, 1L); ++cpu) cpus.push_back(static_cast<int>(cpu));
  }
  return cpus;
}

void WarnAffinityOnce(int err) {
  static std::once_flag once;
  std::call_once(once, [err] {
    EMBER_LOG_WARNING << "thread pool: could not pin the workers to their cores "
                         "(pthread_setaffinity_np: "
                      << std::strerror(err) << "); running them unpinned";
  });
}

}  // namespace

namespace backend {

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

void PinThisThread(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (err != 0) WarnAffinityOnce(err);
}

}  // namespace backend

CpuTopology ReadCpuTopology(const std::string& sysfs_cpu_dir, const std::vector<int>& cpus) {
  CpuTopology topo;
  topo.all = cpus;
  std::sort(topo.all.begin(), topo.all.end());
  topo.all.erase(std::unique(topo.all.begin(), topo.all.end()), topo.all.end());
  std::vector<long> freq;
  for (int cpu : topo.all) {
    std::string path = sysfs_cpu_dir + "/cpu" + std::to_string(cpu) + "/cpufreq/cpuinfo_max_freq";
    long khz = 0;
    FILE* f = std::fopen(path.c_str(), "r");
    if (f != nullptr) {
      if (std::fscanf(f, "%ld", &khz) != 1) khz = 0;
      std::fclose(f);
    }
    if (khz <= 0) break;
    freq.push_back(khz);
  }
  topo.has_frequencies = !topo.all.empty() && freq.size() == topo.all.size();
  if (topo.has_frequencies) {
    const long slowest = *std::min_element(freq.begin(), freq.end());
    for (size_t i = 0; i < topo.all.size(); ++i) {
      (freq[i] == slowest ? topo.little : topo.big).push_back(topo.all[i]);
    }
  }
  if (topo.big.empty()) {  // all cores alike, or nothing known: no distinction to make
    topo.big = topo.all;
    topo.little = topo.all;
  }
  return topo;
}

const CpuTopology& GetCpuTopology() {
  static const CpuTopology* topo = new CpuTopology(ReadCpuTopology(kSysfsCpuDir, ProcessCpus()));
  return *topo;
}

}  // namespace ember::runtime::threading
