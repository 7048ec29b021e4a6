/*!
 * \file ember/runtime/threading.h
 * \brief The thread pool behind TVMBackendParallelLaunch and the per-thread workspace pool behind
 *        TVMBackendAllocWorkspace, seen from C++.
 *
 * Thread count. A launch with num_task 0 runs one task per thread of the pool; the thread that
 * calls TVMBackendParallelLaunch runs task 0 itself, so a pool of N threads owns N - 1 workers.
 * The count is, first match wins:
 *   1. the last SetNumThreads(n) / Configure(mode, n) / runtime.config_threadpool with n > 0;
 *   2. the environment: EMBER_NUM_THREADS, else TVM_NUM_THREADS (an integer in [1, kMaxThreads];
 *      anything else is ignored with a one-time warning on stderr);
 *   3. the cores of the chosen affinity mode that the process may run on (sched_getaffinity, so
 *      taskset and cgroup cpusets are respected).
 * SetNumThreads(0) goes back to 2./3. and re-reads the environment.
 *
 * Affinity. AffinityMode::kBig / kLittle pin the workers to the fast / slow cores, told apart by
 * /sys/devices/system/cpu/cpu<N>/cpufreq/cpuinfo_max_freq: little = the cores with the lowest
 * maximum frequency, big = every other core. Where all cores look alike (or sysfs says nothing),
 * both sets are all cores. kAll pins the workers to every core the process may use. The calling
 * thread's affinity is never changed; pin it yourself if task 0 must run on a big core. A failed
 * pthread_setaffinity_np (containers, cpusets) prints one warning and the pool runs unpinned.
 *
 * Waiting. A thread waiting for a launch or for the other tasks of one spins, then parks on a
 * futex. While a model run is in progress (a RunScope lives: GraphExecutor::Run and the profiler
 * hold one) it spins up to RunSpinMicros() (EMBER_THREAD_RUN_SPIN_US, default 2 ms): the gaps
 * between a run's launches are short, and waking a parked worker costs tens of microseconds (far
 * more on a virtual machine whose host is busy). Otherwise, and once the last run ended, it spins
 * SpinMicros() (EMBER_THREAD_SPIN_US, default 20 us) more: an idle process uses no CPU.
 *
 * Late workers. A worker that ends its task of a launch more than the calling thread's own busy
 * time (plus 0.2 ms) after the calling thread ended its own was descheduled mid-task: another
 * process shares its core. It then sits out the launches with num_task 0 for 10 ms, twice as long
 * each time it is late again, up to EMBER_THREAD_LATE_BACKOFF_MS (default 1000; 0 = never sit
 * out), and 256 launches in a row on time forget its record. The pool runs with fewer threads in
 * that time instead of waiting a time slice for the late worker in every launch. Launches that ask
 * for num_task > 0 always get every worker (their tasks may meet at a barrier).
 *
 * Launch rules.
 *   - Nested launches (a task calling TVMBackendParallelLaunch) run serially on the calling thread;
 *     so does a launch while another thread's launch holds the pool (it never blocks).
 *   - num_task larger than the pool is allowed: every task id runs exactly once, spread over the
 *     pool. TVMBackendParallelBarrier then fails (a barrier needs every task running at once), the
 *     launch returns -1 and TVMGetLastError() says why. The same holds for a serial run of more
 *     than one task.
 *   - A task returning non-zero (or throwing) makes the launch return -1; TVMGetLastError() names
 *     the first failing task and carries the message that task left in TVMGetLastError().
 *   - fork() while the pool exists leaves the child a fresh pool (workers are restarted on the
 *     child's first launch). Forking from inside a parallel task is not supported.
 *
 * Logging. With EMBER_VERBOSE set to anything but "" or "0", the pool prints Describe() to stderr
 * each time it starts (once, unless it is reconfigured).
 *
 * Environment variables and their API twins:
 *   EMBER_NUM_THREADS / TVM_NUM_THREADS   SetNumThreads(), Configure(), and the globals
 *                                         runtime.config_threadpool(mode, nthreads) and
 *                                         runtime.NumThreads() (TVM's names)
 *   EMBER_THREAD_SPIN_US                  SetSpinMicros()
 *   EMBER_THREAD_RUN_SPIN_US              SetRunSpinMicros()
 *   EMBER_THREAD_LATE_BACKOFF_MS          SetLateBackoffMillis() (TimesWorkersWereLate() counts)
 *   EMBER_VERBOSE                         Describe()
 */
#ifndef EMBER_RUNTIME_THREADING_H_
#define EMBER_RUNTIME_THREADING_H_

#include <ember/runtime/c_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ember::runtime::threading {

/*! \brief Upper bound on the pool size; larger requests are errors. */
constexpr int kMaxThreads = 1024;
/*! \brief Spin before parking outside a run when EMBER_THREAD_SPIN_US is not set. */
constexpr int kDefaultSpinMicros = 20;
/*! \brief Spin before parking during a run when EMBER_THREAD_RUN_SPIN_US is not set. */
constexpr int kDefaultRunSpinMicros = 2000;
/*! \brief Upper bound on SetSpinMicros (one second). */
constexpr int kMaxSpinMicros = 1000000;
/*! \brief Longest time a late worker sits out when EMBER_THREAD_LATE_BACKOFF_MS is not set. */
constexpr int kDefaultLateBackoffMillis = 1000;
/*! \brief Upper bound on SetLateBackoffMillis (one minute). */
constexpr int kMaxLateBackoffMillis = 60000;

/*! \brief Which cores the workers run on; the values match TVM's config_threadpool modes. */
enum class AffinityMode : int {
  kLittle = -1, /*!< the cores with the lowest maximum frequency */
  kAll = 0,     /*!< every core the process may use (the default) */
  kBig = 1,     /*!< every core faster than the slowest ones */
};

/*! \brief Threads a launch with num_task 0 uses, counting the calling thread. */
TVM_DLL int NumThreads();

/*! \brief Sets the pool size (1..kMaxThreads) keeping the affinity mode; 0 means the default. */
TVM_DLL void SetNumThreads(int nthreads);

/*!
 * \brief Sets affinity mode and pool size (0 = every core of that mode) together. Running workers
 *        are stopped; the next launch starts the new pool. Throws ember::runtime::Error on a bad
 *        argument or when called from inside a parallel task.
 */
TVM_DLL void Configure(AffinityMode mode, int nthreads);

/*! \brief The affinity mode of the pool. */
TVM_DLL AffinityMode GetAffinityMode();

/*!
 * \brief How long a waiting thread spins before parking outside a run, and after the last run
 *        ended, in microseconds (0 = park at once).
 */
TVM_DLL void SetSpinMicros(int micros);
TVM_DLL int SpinMicros();

/*! \brief How long a waiting thread spins before parking while a run is in progress (us). */
TVM_DLL void SetRunSpinMicros(int micros);
TVM_DLL int RunSpinMicros();

/*!
 * \brief Marks a model run in progress for its lifetime: waiting threads spin RunSpinMicros()
 *        instead of SpinMicros(). Scopes may nest and live on several threads at once.
 */
class TVM_DLL RunScope {
 public:
  RunScope();
  ~RunScope();
  RunScope(const RunScope&) = delete;
  RunScope& operator=(const RunScope&) = delete;
};

/*! \brief One line describing the pool: thread count and where it came from, cores, spin. */
TVM_DLL std::string Describe();

/*! \brief True while the calling thread runs a task of a parallel launch. */
TVM_DLL bool InParallelTask();

/*!
 * \brief Workers of the pool that stopped spinning and sleep on their futex now (0 before the
 *        first launch). A diagnostic: it shows whether an idle process holds any core.
 */
TVM_DLL int NumParkedWorkers();

/*!
 * \brief The longest time a late worker sits out launches, in milliseconds (0 = workers never
 *        sit out; a worker sitting out now is back at the next launch). Throws on a value outside
 *        [0, kMaxLateBackoffMillis].
 */
TVM_DLL void SetLateBackoffMillis(int millis);
TVM_DLL int LateBackoffMillis();

/*!
 * \brief Times, since the pool started, that a worker ended its task late and began to sit out
 *        launches (see Late workers in the file comment); 0 before the first launch.
 */
TVM_DLL uint64_t TimesWorkersWereLate();

/*! \brief Cores the process may run on, split by maximum frequency (see the file comment). */
struct CpuTopology {
  std::vector<int> all;         /*!< sched_getaffinity of the process, ascending */
  std::vector<int> big;         /*!< subset of all; equals all when the cores look alike */
  std::vector<int> little;      /*!< subset of all; equals all when the cores look alike */
  bool has_frequencies = false; /*!< every core of `all` had a readable cpuinfo_max_freq */
};

/*! \brief Reads the topology of this machine (cached after the first call). */
TVM_DLL const CpuTopology& GetCpuTopology();

/*!
 * \brief Classifies \p cpus by the cpuinfo_max_freq files under \p sysfs_cpu_dir (normally
 *        "/sys/devices/system/cpu"); exposed so the rule can be tested on a fake tree.
 */
TVM_DLL CpuTopology ReadCpuTopology(const std::string& sysfs_cpu_dir, const std::vector<int>& cpus);

/*! \brief Counters of the calling thread's workspace pool (TVMBackendAllocWorkspace). */
struct WorkspaceStats {
  uint64_t system_allocations = 0; /*!< aligned_alloc calls plus bookkeeping growth, ever */
  uint64_t bytes_reserved = 0;     /*!< bytes the pool holds now, in use or free */
  uint64_t blocks_in_use = 0;      /*!< allocations not yet freed */
  uint64_t blocks_free = 0;        /*!< freed blocks kept for reuse */
};

/*! \brief The calling thread's workspace counters (all zero before its first allocation). */
TVM_DLL WorkspaceStats GetWorkspaceStats();

/*! \brief Alignment of every workspace block, in bytes. */
constexpr size_t kWorkspaceAlignment = 64;

}  // namespace ember::runtime::threading

#endif  // EMBER_RUNTIME_THREADING_H_
