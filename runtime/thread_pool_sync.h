// Waiting primitives of the thread pool: a CPU pause, a short time-bounded spin, and futex
// wait/wake on a 32-bit atomic word (a mutex + condition variable where futexes do not exist).
#ifndef EMBER_RUNTIME_THREAD_POOL_SYNC_H_
#define EMBER_RUNTIME_THREAD_POOL_SYNC_H_

#include <time.h>

#include <atomic>
#include <cstdint>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#else
#include <condition_variable>
#include <mutex>
#endif

namespace ember::runtime::threading::sync {

// The futex syscall reads the word as a plain int, so the atomic must be exactly that.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
static_assert(std::atomic<uint32_t>::is_always_lock_free);

/*! Tells the core we are spinning (frees the sibling hyperthread, saves power). */
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

inline uint64_t NowNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

/*! Reading the clock costs ~20 ns, a pause ~10-40 ns: look at the clock every 32 pauses. */
constexpr uint32_t kSpinClockMask = 31;

/*! What decides how long a waiting thread spins before it parks (see threading.h, Waiting). */
struct SpinBudget {
  int runs_in_progress = 0;      // RunScopes alive
  uint64_t last_run_end_ns = 0;  // NowNanos() when the last RunScope ended
  uint64_t spin_ns = 0;          // budget outside a run
  uint64_t run_spin_ns = 0;      // budget during a run
};

/*!
 * Whether a wait that began at start_ns goes on spinning at now_ns. During a run it spins
 * run_spin_ns from its start; otherwise spin_ns from the later of its start and the end of the
 * last run, so a run that ends during a wait leaves it the idle budget from then on.
 */
inline bool KeepSpinning(const SpinBudget& budget, uint64_t start_ns, uint64_t now_ns) {
  if (budget.runs_in_progress > 0) return now_ns - start_ns < budget.run_spin_ns;
  const uint64_t from = start_ns > budget.last_run_end_ns ? start_ns : budget.last_run_end_ns;
  return from >= now_ns || now_ns - from < budget.spin_ns;
}

/*!
 * Spins until ready() or until keep_spinning(start_ns, now_ns) says to stop; returns whether
 * ready() became true. The budget is a callable so it may change during the wait.
 */
template <typename Ready, typename KeepSpinning>
inline bool SpinUntil(Ready ready, KeepSpinning keep_spinning) {
  if (ready()) return true;
  const uint64_t start = NowNanos();
  if (!keep_spinning(start, start)) return false;
  for (uint32_t i = 1;; ++i) {
    CpuRelax();
    if (ready()) return true;
    if ((i & kSpinClockMask) == 0 && !keep_spinning(start, NowNanos())) return false;
  }
}

#if defined(__linux__)
/*! Sleeps while *word == expected (returns at once if it differs; may return spuriously). */
inline void FutexWait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}
/*! Wakes up to \p count threads sleeping in FutexWait on \p word. */
inline void FutexWake(std::atomic<uint32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr,
          0);
}
constexpr int kWakeAll = INT_MAX;
#else
// One process-wide condition variable stands in for every futex word: wake-ups are broadcast and
// each waiter re-checks its own word. Only the slow (parked) path pays for it.
struct FallbackParking {
  std::mutex mu;
  std::condition_variable cv;
};
inline FallbackParking& Parking() {
  static FallbackParking* parking = new FallbackParking();
  return *parking;
}
inline void FutexWait(std::atomic<uint32_t>* word, uint32_t expected) {
  std::unique_lock<std::mutex> lock(Parking().mu);
  while (word->load(std::memory_order_seq_cst) == expected) Parking().cv.wait(lock);
}
inline void FutexWake(std::atomic<uint32_t>*, int) {
  // Taking the mutex orders this wake after any waiter's check of its word.
  { std::lock_guard<std::mutex> lock(Parking().mu); }
  Parking().cv.notify_all();
}
constexpr int kWakeAll = 0x7fffffff;
#endif

}  // namespace ember::runtime::threading::sync

#endif  // EMBER_RUNTIME_THREAD_POOL_SYNC_H_
