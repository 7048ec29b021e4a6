// The thread pool behind TVMBackendParallelLaunch / TVMBackendParallelBarrier, its configuration
// (threading.h) and TVMBackendRunOnce.
//
// One process-wide pool of N threads: the launching thread runs task 0 and N - 1 workers run the
// rest. Each worker owns a cache line with a state word: a launch fills the shared Job, then posts
// it to each worker it needs. A worker spins on its word (up to milliseconds during a model run,
// microseconds otherwise: see KeepSpinning), then parks on it with a futex, so a run's launches
// never enter the kernel and an idle process uses no CPU. When
// the launcher is done with task 0 it takes back the posts no worker picked up yet and runs those
// tasks itself, so a sleeping or descheduled worker (a loaded machine) delays nobody. It waits
// for the rest the same spin-then-park way on `remaining_`. A worker that ended its task far
// later than the launcher ended its own was descheduled mid-task; it sits out the launches that
// let the pool choose their size (num_task 0) for a while (late_worker.h).
//
// Only one launch at a time owns the pool (state.mu); a launch that finds it busy, and any launch
// from inside a task, runs its tasks serially on the calling thread instead of blocking.
//
// Which cores the workers run on, and pinning them there, is threading_backend.cc's.
#include <ember/runtime/c_backend_api.h>
#include <ember/runtime/logging.h>
#include <ember/runtime/registry.h>
#include <ember/runtime/threading.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "late_worker.h"
#include "thread_pool_sync.h"
#include "threading_backend.h"

namespace ember::runtime::threading {
namespace {

using backend::CoresOf;
using backend::FormatCpuList;
using backend::ModeName;
using sync::FutexWait;
using sync::FutexWake;
using sync::NowNanos;
using sync::SpinUntil;

constexpr size_t kCacheLine = 64;
constexpr int kNoFailure = -1;

// True while this thread runs a task; a launch from here runs serially.
thread_local bool tls_in_task = false;

[[noreturn]] void ThrowInvalid(const std::string& msg) { throw Error(msg); }

bool EnvFlagSet(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

// Parses an integer in [lo, hi]; false for anything else (empty, junk, trailing text, range).
bool ParseInt(const char* text, int lo, int hi, int* out) {
  if (text == nullptr || text[0] == '\0') return false;
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < lo || value > hi) return false;
  *out = static_cast<int>(value);
  return true;
}

void WarnIgnoredEnv(const char* name, const char* value, int lo, int hi) {
  EMBER_LOG_WARNING << "thread pool: ignoring " << name << "=\"" << value
                    << "\": expected an integer in [" << lo << ", " << hi << "]";
}

// The spin time in environment variable `name` when it holds a valid one, else `fallback`.
uint64_t SpinNanosFromEnv(const char* name, int fallback_micros) {
  const char* value = std::getenv(name);
  int micros = fallback_micros;
  if (value != nullptr && !ParseInt(value, 0, kMaxSpinMicros, &micros)) {
    WarnIgnoredEnv(name, value, 0, kMaxSpinMicros);
    micros = fallback_micros;
  }
  return static_cast<uint64_t>(micros) * 1000;
}

// How long waiting threads spin before parking outside / during a run, the runs in progress and
// when the last one ended (see threading.h). Read on every wait, so changes apply at once.
std::atomic<uint64_t> g_spin_ns{SpinNanosFromEnv("EMBER_THREAD_SPIN_US", kDefaultSpinMicros)};
std::atomic<uint64_t> g_run_spin_ns{
    SpinNanosFromEnv("EMBER_THREAD_RUN_SPIN_US", kDefaultRunSpinMicros)};
std::atomic<int> g_runs_in_progress{0};
std::atomic<uint64_t> g_last_run_end_ns{0};

// How long a late worker sits out launches at most (late_worker.h); 0 turns that off.
uint64_t LateBackoffNanosFromEnv() {
  const char* value = std::getenv("EMBER_THREAD_LATE_BACKOFF_MS");
  int millis = kDefaultLateBackoffMillis;
  if (value != nullptr && !ParseInt(value, 0, kMaxLateBackoffMillis, &millis)) {
    WarnIgnoredEnv("EMBER_THREAD_LATE_BACKOFF_MS", value, 0, kMaxLateBackoffMillis);
    millis = kDefaultLateBackoffMillis;
  }
  return static_cast<uint64_t>(millis) * 1'000'000;
}
std::atomic<uint64_t> g_late_backoff_ns{LateBackoffNanosFromEnv()};

LateWorkerLimits CurrentLateWorkerLimits() {
  LateWorkerLimits limits;
  limits.max_backoff_ns = g_late_backoff_ns.load(std::memory_order_relaxed);
  limits.first_backoff_ns = std::min(limits.first_backoff_ns, limits.max_backoff_ns);
  return limits;
}

// Whether a wait that began at start_ns goes on spinning at now_ns, under the current budget.
bool KeepSpinning(uint64_t start_ns, uint64_t now_ns) {
  sync::SpinBudget budget;
  budget.runs_in_progress = g_runs_in_progress.load(std::memory_order_relaxed);
  budget.last_run_end_ns = g_last_run_end_ns.load(std::memory_order_relaxed);
  budget.spin_ns = g_spin_ns.load(std::memory_order_relaxed);
  budget.run_spin_ns = g_run_spin_ns.load(std::memory_order_relaxed);
  return sync::KeepSpinning(budget, start_ns, now_ns);
}

void StoreSpinMicros(int micros, std::atomic<uint64_t>* spin_ns) {
  if (micros < 0 || micros > kMaxSpinMicros) {
    ThrowInvalid("thread pool: spin time must be in [0, " + std::to_string(kMaxSpinMicros) +
                 "] microseconds, got " + std::to_string(micros));
  }
  spin_ns->store(static_cast<uint64_t>(micros) * 1000, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------
// One launch: what every task needs, the barrier, and the first failure.

struct Job {
  FTVMParallelLambda fn = nullptr;
  void* cdata = nullptr;
  TVMParallelGroupEnv env{nullptr, 0};
  // Tasks that run at the same time. A barrier only works when every task does (num_task <=).
  int32_t concurrent = 1;

  alignas(kCacheLine) std::atomic<int32_t> next_task{0};  // tasks beyond `concurrent` are claimed
  std::atomic<int32_t> failed_task{kNoFailure};
  std::string error;  // written only by the thread that set failed_task

  alignas(kCacheLine) std::atomic<uint32_t> barrier_arrived{0};
  std::atomic<uint32_t> barrier_generation{0};  // futex word of parked barrier waiters
  std::atomic<uint32_t> barrier_waiters{0};

  void Reset(FTVMParallelLambda f, void* data, int32_t num_task, int32_t num_concurrent) {
    fn = f;
    cdata = data;
    env.sync_handle = this;
    env.num_task = num_task;
    concurrent = num_concurrent;
    next_task.store(num_concurrent, std::memory_order_relaxed);
    failed_task.store(kNoFailure, std::memory_order_relaxed);
    error.clear();
    barrier_arrived.store(0, std::memory_order_relaxed);
    barrier_waiters.store(0, std::memory_order_relaxed);
  }

  // The first failure wins; later ones would only repeat or confuse it.
  void Fail(int32_t task, const std::string& why) {
    int32_t expected = kNoFailure;
    if (failed_task.compare_exchange_strong(expected, task, std::memory_order_acq_rel)) {
      error = why;
    }
  }

  // Call after every task finished (the wait on `remaining_` orders the writes before this).
  int Result() const {
    int32_t task = failed_task.load(std::memory_order_acquire);
    if (task == kNoFailure) return 0;
    std::string msg = "TVMBackendParallelLaunch: task " + std::to_string(task) + " of " +
                      std::to_string(env.num_task) + " failed";
    if (!error.empty()) msg += ": " + error;
    TVMAPISetLastError(msg.c_str());
    return -1;
  }
};

void RunTask(Job* job, int32_t task) {
  int rc = 0;
  try {
    rc = job->fn(task, &job->env, job->cdata);
  } catch (const std::exception& e) {
    job->Fail(task, std::string("threw an exception: ") + e.what());
    return;
  } catch (...) {
    job->Fail(task, "threw an unknown exception");
    return;
  }
  if (rc != 0) {
    std::string why = "returned " + std::to_string(rc);
    const char* last = TVMGetLastError();
    if (last != nullptr && last[0] != '\0') why += ": " + std::string(last);
    job->Fail(task, why);
    TVMAPISetLastError("");  // so a later failure on this thread cannot show this stale text
  }
}

// Runs `first`, then claims tasks nobody runs concurrently until none are left.
void RunTasks(Job* job, int32_t first) {
  const bool was_in_task = tls_in_task;
  tls_in_task = true;
  RunTask(job, first);
  const int32_t num_task = job->env.num_task;
  if (num_task > job->concurrent) {
    for (int32_t t = job->next_task.fetch_add(1, std::memory_order_relaxed); t < num_task;
         t = job->next_task.fetch_add(1, std::memory_order_relaxed)) {
      RunTask(job, t);
    }
  }
  tls_in_task = was_in_task;
}

int RunSerially(FTVMParallelLambda fn, void* cdata, int num_task) {
  Job job;
  job.Reset(fn, cdata, num_task == 0 ? 1 : num_task, 1);
  RunTasks(&job, 0);
  return job.Result();
}

int Barrier(Job* job, int task_id) {
  const int32_t num_task = job->env.num_task;
  if (num_task > job->concurrent) {
    job->Fail(task_id, "TVMBackendParallelBarrier: the launch has " + std::to_string(num_task) +
                           " tasks but only " + std::to_string(job->concurrent) +
                           " run at once (nested, contended or larger than the pool of " +
                           std::to_string(NumThreads()) +
                           " threads); a barrier needs every task running. Launch with "
                           "num_task 0 or at most NumThreads() tasks.");
    return -1;
  }
  if (num_task <= 1) return 0;
  // Read the generation before arriving: it cannot move until we arrive.
  const uint32_t generation = job->barrier_generation.load(std::memory_order_acquire);
  if (job->barrier_arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
      static_cast<uint32_t>(num_task)) {
    job->barrier_arrived.store(0, std::memory_order_relaxed);
    job->barrier_generation.fetch_add(1, std::memory_order_seq_cst);
    if (job->barrier_waiters.load(std::memory_order_seq_cst) != 0) {
      FutexWake(&job->barrier_generation, sync::kWakeAll);
    }
    return 0;
  }
  auto passed = [&] {
    return job->barrier_generation.load(std::memory_order_acquire) != generation;
  };
  if (SpinUntil(passed, KeepSpinning)) return 0;
  job->barrier_waiters.fetch_add(1, std::memory_order_seq_cst);
  while (job->barrier_generation.load(std::memory_order_seq_cst) == generation) {
    FutexWait(&job->barrier_generation, generation);
  }
  job->barrier_waiters.fetch_sub(1, std::memory_order_seq_cst);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// The pool.

class ThreadPool {
 public:
  ThreadPool(int num_threads, std::vector<int> cpus)
      : num_threads_(num_threads),
        cpus_(std::move(cpus)),
        workers_(new Worker[num_threads]),
        posted_to_(new int[num_threads]),
        took_(new bool[num_threads]) {
    // Start in order; if one cannot start, stop those that did and report.
    try {
      for (int i = 1; i < num_threads_; ++i) {
        workers_[i].thread = std::thread([this, i] { WorkerLoop(i); });
        started_ = i;
      }
    } catch (const std::exception& e) {
      StopWorkers();
      throw Error("thread pool: could not start worker " + std::to_string(started_ + 1) + " of " +
                  std::to_string(num_threads_ - 1) + ": " + e.what());
    }
  }

  ~ThreadPool() { StopWorkers(); }

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Workers that stopped spinning and sleep (or are about to) on their futex.
  int NumParked() const {
    int parked = 0;
    for (int i = 1; i <= started_; ++i) {
      parked += workers_[i].parked.load(std::memory_order_acquire) != 0 ? 1 : 0;
    }
    return parked;
  }

  // Caller holds state.mu and is not inside a task.
  int Launch(FTVMParallelLambda fn, void* cdata, int num_task) {
    const uint64_t start_ns = NowNanos();
    const LateWorkerLimits limits = CurrentLateWorkerLimits();
    // A launch that lets the pool choose its size leaves out the workers sitting out a back-off;
    // one that asks for num_task tasks gets every worker (its tasks may meet at a barrier).
    const bool may_leave_out = num_task == 0 && limits.max_backoff_ns != 0;
    int num_workers = 0;
    for (int i = 1; i < num_threads_; ++i) {
      if (!may_leave_out || workers_[i].late.Available(start_ns)) posted_to_[num_workers++] = i;
    }
    const bool pool_sized = num_task == 0;
    if (pool_sized) num_task = num_workers + 1;
    const int concurrent = std::min(num_task, num_workers + 1);
    job_.Reset(fn, cdata, num_task, concurrent);
    remaining_.store(static_cast<uint32_t>(concurrent - 1), std::memory_order_relaxed);
    for (int task = 1; task < concurrent; ++task) {
      Worker& w = workers_[posted_to_[task - 1]];
      w.job = &job_;
      w.task = task;
      w.state.store(kPosted, std::memory_order_seq_cst);  // publishes job_, w.job and w.task
      if (w.parked.load(std::memory_order_seq_cst) != 0) FutexWake(&w.state, 1);
    }
    RunTasks(&job_, 0);
    // A worker that has not picked up its task by now is asleep or descheduled: waiting for it
    // would cost a wake-up or a time slice, so the launcher runs that task itself. (With a
    // barrier this never triggers: task 0 cannot finish before every task has started.)
    for (int task = 1; task < concurrent; ++task) {
      uint32_t posted = kPosted;
      took_[task] = !workers_[posted_to_[task - 1]].state.compare_exchange_strong(
          posted, kIdle, std::memory_order_acq_rel);
      if (!took_[task]) {
        RunTasks(&job_, task);
        remaining_.fetch_sub(1, std::memory_order_relaxed);
      }
    }
    const uint64_t launcher_done_ns = NowNanos();
    WaitForWorkers();
    RecordLateness(limits, concurrent, launcher_done_ns - start_ns, launcher_done_ns);
    return job_.Result();
  }

  // How many times a worker was found late and sat out launches since the pool started.
  uint64_t TimesWorkersWereLate() const {
    uint64_t total = 0;
    for (int i = 1; i <= started_; ++i) total += workers_[i].late.times_late();
    return total;
  }

 private:
  // A worker's state word, which is also its futex word. The launcher posts (kIdle -> kPosted);
  // the worker takes the post (kPosted -> kTaken) or the launcher takes it back (-> kIdle).
  static constexpr uint32_t kIdle = 0;
  static constexpr uint32_t kPosted = 1;
  static constexpr uint32_t kTaken = 2;
  static constexpr uint32_t kExit = 3;

  struct alignas(kCacheLine) Worker {
    std::atomic<uint32_t> state{kIdle};
    std::atomic<uint32_t> parked{0};  // 1 while the worker sleeps (or is about to) on state
    Job* job = nullptr;               // valid while state is kPosted or kTaken
    int32_t task = 0;                 // the task posted with job
    uint64_t finished_ns = 0;         // when it ended its last task (written before remaining_)
    LateWorker late;                  // the launcher's record of it
    std::thread thread;
  };

  // After a launch: each worker that ran a task and ended it late sits out the next launches.
  void RecordLateness(const LateWorkerLimits& limits, int concurrent, uint64_t launcher_busy_ns,
                      uint64_t launcher_done_ns) {
    const uint64_t now_ns = NowNanos();
    for (int task = 1; task < concurrent; ++task) {
      if (!took_[task]) continue;
      Worker& w = workers_[posted_to_[task - 1]];
      const uint64_t late_by =
          w.finished_ns > launcher_done_ns ? w.finished_ns - launcher_done_ns : 0;
      w.late.Record(limits, now_ns, launcher_busy_ns, late_by);
    }
  }

  // Waits for the workers that took their task; they are running, so this is usually short.
  void WaitForWorkers() {
    auto done = [this] { return remaining_.load(std::memory_order_acquire) == 0; };
    if (SpinUntil(done, KeepSpinning)) return;
    launcher_parked_.store(1, std::memory_order_seq_cst);
    for (uint32_t left; (left = remaining_.load(std::memory_order_seq_cst)) != 0;) {
      FutexWait(&remaining_, left);
    }
    launcher_parked_.store(0, std::memory_order_relaxed);
  }

  void WorkerLoop(int index) {
    Worker& w = workers_[index];
    backend::PinThisThread(cpus_);
    auto has_post = [&w] { return w.state.load(std::memory_order_acquire) != kIdle; };
    for (;;) {
      if (!SpinUntil(has_post, KeepSpinning)) {
        w.parked.store(1, std::memory_order_seq_cst);
        while (w.state.load(std::memory_order_seq_cst) == kIdle) FutexWait(&w.state, kIdle);
        w.parked.store(0, std::memory_order_relaxed);
      }
      if (w.state.load(std::memory_order_acquire) == kExit) return;
      uint32_t posted = kPosted;
      if (!w.state.compare_exchange_strong(posted, kTaken, std::memory_order_acq_rel)) {
        continue;  // the launcher took it back
      }
      RunTasks(w.job, w.task);
      w.finished_ns = NowNanos();
      w.state.store(kIdle, std::memory_order_release);
      if (remaining_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
          launcher_parked_.load(std::memory_order_seq_cst) != 0) {
        FutexWake(&remaining_, 1);
      }
    }
  }

  void StopWorkers() {
    for (int i = 1; i <= started_; ++i) {
      workers_[i].state.store(kExit, std::memory_order_seq_cst);
      FutexWake(&workers_[i].state, 1);
    }
    for (int i = 1; i <= started_; ++i) workers_[i].thread.join();
    started_ = 0;
  }

  const int num_threads_;
  const std::vector<int> cpus_;        // workers' affinity
  std::unique_ptr<Worker[]> workers_;  // [0] stands for the launching thread and stays unused
  // Per launch, made once: the worker each task 1.. was posted to, and whether it took the task.
  std::unique_ptr<int[]> posted_to_;
  std::unique_ptr<bool[]> took_;
  int started_ = 0;  // workers [1, started_] are running
  Job job_;
  alignas(kCacheLine) std::atomic<uint32_t> remaining_{0};  // posts not yet finished or taken back
  std::atomic<uint32_t> launcher_parked_{0};
};

// ---------------------------------------------------------------------------------------------
// Process-wide configuration and the pool instance.

struct PoolState {
  // Held for a whole launch and while the pool is replaced. Lock order: mu, then config_mu.
  std::mutex mu;
  ThreadPool* pool = nullptr;  // guarded by mu; started by the first launch
  bool shut_down = false;      // guarded by mu; set at process exit

  std::mutex config_mu;  // guards the fields below
  AffinityMode mode = AffinityMode::kAll;
  int requested = 0;   // from the API; 0 = default (environment, then cores)
  int resolved = 0;    // 0 = not resolved since the last change
  std::string source;  // where `resolved` came from, for Describe()
  bool locked_for_fork = false;
};

PoolState& State() {
  // Never destroyed: workers and atfork handlers may touch it during exit.
  static PoolState* state = new PoolState();
  return *state;
}

void WarnEnvOnce(const char* name, const char* value) {
  static std::once_flag once;
  std::call_once(once, [&] { WarnIgnoredEnv(name, value, 1, kMaxThreads); });
}

// Caller holds config_mu.
int ResolveLocked(PoolState& s) {
  if (s.resolved > 0) return s.resolved;
  if (s.requested > 0) {
    s.resolved = s.requested;
    s.source = "set through the API";
    return s.resolved;
  }
  for (const char* name : {"EMBER_NUM_THREADS", "TVM_NUM_THREADS"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    int n = 0;
    if (ParseInt(value, 1, kMaxThreads, &n)) {
      s.resolved = n;
      s.source = std::string(name) + "=" + value;
      return s.resolved;
    }
    WarnEnvOnce(name, value);
  }
  const std::vector<int>& cores = CoresOf(GetCpuTopology(), s.mode);
  s.resolved = std::max<int>(1, static_cast<int>(cores.size()));
  s.source = std::string("default: the ") + ModeName(s.mode) + " cores this process may use";
  return s.resolved;
}

std::string DescribeLocked(PoolState& s) {
  const int n = ResolveLocked(s);
  const CpuTopology& topo = GetCpuTopology();
  std::string out = "ember thread pool: " + std::to_string(n) + " thread" + (n == 1 ? "" : "s") +
                    " (" + s.source + "), affinity " + ModeName(s.mode) + " -> cpus " +
                    FormatCpuList(CoresOf(topo, s.mode));
  if (!topo.has_frequencies) out += " (no cpufreq data: big = little = all)";
  out += ", spin " + std::to_string(SpinMicros()) + " us (" + std::to_string(RunSpinMicros()) +
         " us during a run)";
  return out;
}

// Caller holds mu. Starts the pool if needed; nullptr after process exit began.
ThreadPool* GetPoolLocked(PoolState& s) {
  if (s.pool != nullptr || s.shut_down) return s.pool;
  int n;
  std::vector<int> cpus;
  std::string description;
  {
    std::lock_guard<std::mutex> lock(s.config_mu);
    n = ResolveLocked(s);
    cpus = CoresOf(GetCpuTopology(), s.mode);
    if (EnvFlagSet("EMBER_VERBOSE")) description = DescribeLocked(s);
  }
  if (!description.empty()) EMBER_LOG_INFO << description;
  s.pool = new ThreadPool(n, std::move(cpus));
  return s.pool;
}

void ForkPrepare() {
  PoolState& s = State();
  // A task that forks already holds mu (through its launcher); locking again would deadlock.
  if (tls_in_task) return;
  s.mu.lock();
  s.config_mu.lock();
  s.locked_for_fork = true;
}

void ForkParent() {
  PoolState& s = State();
  if (!s.locked_for_fork) return;
  s.locked_for_fork = false;
  s.config_mu.unlock();
  s.mu.unlock();
}

void ForkChild() {
  PoolState& s = State();
  // The workers did not survive the fork: drop the pool without touching its threads (its memory
  // is leaked on purpose). The next launch starts a new one.
  s.pool = nullptr;
  if (!s.locked_for_fork) return;
  s.locked_for_fork = false;
  s.config_mu.unlock();
  s.mu.unlock();
}

// Registers the fork handlers at load time and stops the workers at exit, unless a launch is
// still running somewhere (then the process ends around them).
struct PoolLifetime {
  PoolLifetime() { pthread_atfork(ForkPrepare, ForkParent, ForkChild); }
  ~PoolLifetime() {
    PoolState& s = State();
    if (tls_in_task || !s.mu.try_lock()) return;  // exit() from a task: its launch holds mu
    delete s.pool;
    s.pool = nullptr;
    s.shut_down = true;
    s.mu.unlock();
  }
};
PoolLifetime g_pool_lifetime;

// Stops the workers so the next launch starts a pool with the new settings.
void ReplacePool(AffinityMode mode, int requested) {
  if (tls_in_task) {
    ThrowInvalid("thread pool: cannot reconfigure from inside a parallel task");
  }
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  delete s.pool;
  s.pool = nullptr;
  std::lock_guard<std::mutex> config_lock(s.config_mu);
  s.mode = mode;
  s.requested = requested;
  s.resolved = 0;
}

int Launch(FTVMParallelLambda fn, void* cdata, int num_task) {
  if (fn == nullptr) {
    TVMAPISetLastError("TVMBackendParallelLaunch: the task function is NULL");
    return -1;
  }
  if (num_task < 0) {
    std::string msg = "TVMBackendParallelLaunch: num_task must be >= 0 (0 = one per thread), got " +
                      std::to_string(num_task);
    TVMAPISetLastError(msg.c_str());
    return -1;
  }
  if (tls_in_task || num_task == 1) return RunSerially(fn, cdata, num_task);
  PoolState& s = State();
  std::unique_lock<std::mutex> lock(s.mu, std::try_to_lock);
  if (!lock.owns_lock()) return RunSerially(fn, cdata, num_task);
  ThreadPool* pool;
  try {
    pool = GetPoolLocked(s);
  } catch (const std::exception& e) {
    std::string msg = std::string("TVMBackendParallelLaunch: ") + e.what();
    TVMAPISetLastError(msg.c_str());
    return -1;
  }
  if (pool == nullptr || pool->num_threads() == 1) {
    lock.unlock();
    return RunSerially(fn, cdata, num_task);
  }
  return pool->Launch(fn, cdata, num_task);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// threading.h

int NumThreads() {
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.config_mu);
  return ResolveLocked(s);
}

void SetNumThreads(int nthreads) { Configure(GetAffinityMode(), nthreads); }

void Configure(AffinityMode mode, int nthreads) {
  if (mode != AffinityMode::kAll && mode != AffinityMode::kBig && mode != AffinityMode::kLittle) {
    ThrowInvalid("thread pool: unknown affinity mode " + std::to_string(static_cast<int>(mode)) +
                 "; expected 1 (big), -1 (little) or 0 (all)");
  }
  if (nthreads < 0 || nthreads > kMaxThreads) {
    ThrowInvalid("thread pool: thread count must be in [0, " + std::to_string(kMaxThreads) +
                 "] (0 = default), got " + std::to_string(nthreads));
  }
  ReplacePool(mode, nthreads);
}

AffinityMode GetAffinityMode() {
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.config_mu);
  return s.mode;
}

void SetSpinMicros(int micros) { StoreSpinMicros(micros, &g_spin_ns); }

int SpinMicros() { return static_cast<int>(g_spin_ns.load(std::memory_order_relaxed) / 1000); }

void SetRunSpinMicros(int micros) { StoreSpinMicros(micros, &g_run_spin_ns); }

void SetLateBackoffMillis(int millis) {
  if (millis < 0 || millis > kMaxLateBackoffMillis) {
    ThrowInvalid("thread pool: late-worker back-off must be in [0, " +
                 std::to_string(kMaxLateBackoffMillis) + "] milliseconds, got " +
                 std::to_string(millis));
  }
  g_late_backoff_ns.store(static_cast<uint64_t>(millis) * 1'000'000, std::memory_order_relaxed);
}

int LateBackoffMillis() {
  return static_cast<int>(g_late_backoff_ns.load(std::memory_order_relaxed) / 1'000'000);
}

int RunSpinMicros() {
  return static_cast<int>(g_run_spin_ns.load(std::memory_order_relaxed) / 1000);
}

RunScope::RunScope() { g_runs_in_progress.fetch_add(1, std::memory_order_relaxed); }

RunScope::~RunScope() {
  g_last_run_end_ns.store(sync::NowNanos(), std::memory_order_relaxed);
  g_runs_in_progress.fetch_sub(1, std::memory_order_relaxed);
}

std::string Describe() {
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.config_mu);
  return DescribeLocked(s);
}

bool InParallelTask() { return tls_in_task; }

int NumParkedWorkers() {
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.pool == nullptr ? 0 : s.pool->NumParked();
}

uint64_t TimesWorkersWereLate() {
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.pool == nullptr ? 0 : s.pool->TimesWorkersWereLate();
}

// TVM's names, so Python and apps written for TVM configure the pool unchanged.
EMBER_REGISTER_GLOBAL("runtime.config_threadpool").set_body_typed([](int mode, int nthreads) {
  Configure(static_cast<AffinityMode>(mode), nthreads);
});
EMBER_REGISTER_GLOBAL("runtime.NumThreads").set_body_typed([] { return NumThreads(); });

}  // namespace ember::runtime::threading

// ---------------------------------------------------------------------------------------------
// C entry points.

extern "C" {

int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task) {
  return ember::runtime::threading::Launch(flambda, cdata, num_task);
}

int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv) {
  if (penv == nullptr || penv->sync_handle == nullptr) {
    TVMAPISetLastError(
        "TVMBackendParallelBarrier: called outside a parallel launch (no group env)");
    return -1;
  }
  return ember::runtime::threading::Barrier(
      static_cast<ember::runtime::threading::Job*>(penv->sync_handle), task_id);
}

int TVMBackendRunOnce(void** handle, int (*f)(void*), void* cdata, int /*nbytes*/) {
  if (handle == nullptr || f == nullptr) {
    TVMAPISetLastError("TVMBackendRunOnce: handle and function must not be NULL");
    return -1;
  }
  void* const kDone = reinterpret_cast<void*>(1);
  if (__atomic_load_n(handle, __ATOMIC_ACQUIRE) == kDone) return 0;
  // One lock for every handle: initialisers are rare and short. Recursive so one may run another.
  static std::recursive_mutex* mu = new std::recursive_mutex();
  std::lock_guard<std::recursive_mutex> lock(*mu);
  if (__atomic_load_n(handle, __ATOMIC_ACQUIRE) == kDone) return 0;
  int rc = f(cdata);
  if (rc == 0) __atomic_store_n(handle, kDone, __ATOMIC_RELEASE);  // a failure may be retried
  return rc;
}

}  // extern "C"
