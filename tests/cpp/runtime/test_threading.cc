// Thread pool behind TVMBackendParallelLaunch / Barrier / RunOnce, and its configuration API.
#include <ember/runtime/c_backend_api.h>
#include <ember/runtime/registry.h>
#include <ember/runtime/threading.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../../../runtime/late_worker.h"
#include "../../../runtime/thread_pool_sync.h"

namespace {

using ember::runtime::threading::AffinityMode;
namespace threading = ember::runtime::threading;

// Every test starts and ends with the default configuration, except that workers never sit out
// launches for being late: these tests count the tasks of launches with num_task 0, and a busy
// machine can make any worker late. The late-worker tests turn it on.
class ThreadPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    threading::Configure(AffinityMode::kAll, 0);
    threading::SetLateBackoffMillis(0);
  }
  void TearDown() override {
    threading::Configure(AffinityMode::kAll, 0);
    threading::SetLateBackoffMillis(threading::kDefaultLateBackoffMillis);
  }
};

// Each task sums its slice of `data` into partial[task] and counts how often it ran.
struct SumJob {
  std::vector<int64_t> data;
  std::vector<int64_t> partial;
  std::vector<std::atomic<int>> runs;
  std::atomic<int> seen_num_task{0};
  explicit SumJob(size_t n, size_t max_tasks) : data(n), partial(max_tasks, 0), runs(max_tasks) {
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<int64_t>(i * 7 % 1000);
  }
  int64_t Expected() const {
    int64_t s = 0;
    for (int64_t v : data) s += v;
    return s;
  }
};

int SumTask(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  auto* job = static_cast<SumJob*>(cdata);
  const int n = penv->num_task;
  job->seen_num_task.store(n);
  const size_t size = job->data.size();
  const size_t begin = size * task_id / n, end = size * (task_id + 1) / n;
  int64_t s = 0;
  for (size_t i = begin; i < end; ++i) s += job->data[i];
  job->partial[task_id] = s;
  job->runs[task_id].fetch_add(1);
  return 0;
}

// Runs one launch of SumTask and checks the sum and that each task id ran exactly once.
void CheckSumLaunch(int num_task, int expect_tasks) {
  SumJob job(10007, 512);
  ASSERT_EQ(TVMBackendParallelLaunch(SumTask, &job, num_task), 0) << TVMGetLastError();
  ASSERT_EQ(job.seen_num_task.load(), expect_tasks);
  int64_t total = 0;
  for (int t = 0; t < expect_tasks; ++t) {
    ASSERT_EQ(job.runs[t].load(), 1) << "task " << t;
    total += job.partial[t];
  }
  for (size_t t = expect_tasks; t < job.runs.size(); ++t) ASSERT_EQ(job.runs[t].load(), 0);
  EXPECT_EQ(total, job.Expected());
}

TEST_F(ThreadPoolTest, ThousandLaunchesGiveCorrectSums) {
  for (int nthreads : {0, 2, 3, 8}) {
    threading::SetNumThreads(nthreads);
    const int n = threading::NumThreads();
    for (int i = 0; i < 1000; ++i) {
      CheckSumLaunch(0, n);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_F(ThreadPoolTest, CallingThreadRunsTaskZero) {
  threading::SetNumThreads(2);
  struct Ids {
    std::thread::id ids[2];
  } ids;
  auto task = [](int task_id, TVMParallelGroupEnv*, void* cdata) {
    static_cast<Ids*>(cdata)->ids[task_id] = std::this_thread::get_id();
    return 0;
  };
  ASSERT_EQ(TVMBackendParallelLaunch(task, &ids, 0), 0) << TVMGetLastError();
  EXPECT_EQ(ids.ids[0], std::this_thread::get_id());
  // Task 1 runs on a worker, or on the caller when the worker was too slow to pick it up.
}

TEST_F(ThreadPoolTest, MoreTasksThanThreadsRunEachTaskOnce) {
  threading::SetNumThreads(2);
  for (int num_task : {3, 17, 100, 512}) {
    for (int rep = 0; rep < 20; ++rep) {
      CheckSumLaunch(num_task, num_task);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_F(ThreadPoolTest, SingleThreadPoolRunsEverythingOnCaller) {
  threading::SetNumThreads(1);
  EXPECT_EQ(threading::NumThreads(), 1);
  CheckSumLaunch(0, 1);
  CheckSumLaunch(5, 5);
}

// Nested launches must run serially on the task's own thread.
struct NestedState {
  std::atomic<int> inner_runs{0};
  std::atomic<int> wrong_thread{0};
  std::atomic<int> wrong_num_task{0};
  std::atomic<int> not_in_task{0};
  std::atomic<int> inner_failures{0};
  int inner_num_task = 0;
};
thread_local std::thread::id tls_outer_thread;

int InnerTask(int, TVMParallelGroupEnv* penv, void* cdata) {
  auto* s = static_cast<NestedState*>(cdata);
  s->inner_runs.fetch_add(1);
  if (std::this_thread::get_id() != tls_outer_thread) s->wrong_thread.fetch_add(1);
  const int expect = s->inner_num_task == 0 ? 1 : s->inner_num_task;
  if (penv->num_task != expect) s->wrong_num_task.fetch_add(1);
  if (!threading::InParallelTask()) s->not_in_task.fetch_add(1);
  return 0;
}

int OuterTask(int, TVMParallelGroupEnv*, void* cdata) {
  auto* s = static_cast<NestedState*>(cdata);
  tls_outer_thread = std::this_thread::get_id();
  if (TVMBackendParallelLaunch(InnerTask, s, s->inner_num_task) != 0) s->inner_failures++;
  return 0;
}

TEST_F(ThreadPoolTest, NestedLaunchesRunSeriallyOnTheTaskThread) {
  threading::SetNumThreads(2);
  for (int inner : {0, 1, 3}) {
    NestedState s;
    s.inner_num_task = inner;
    for (int i = 0; i < 100; ++i) {
      ASSERT_EQ(TVMBackendParallelLaunch(OuterTask, &s, 0), 0) << TVMGetLastError();
    }
    const int per_outer = inner == 0 ? 1 : inner;
    EXPECT_EQ(s.inner_runs.load(), 100 * 2 * per_outer);
    EXPECT_EQ(s.wrong_thread.load(), 0);
    EXPECT_EQ(s.wrong_num_task.load(), 0);
    EXPECT_EQ(s.not_in_task.load(), 0);
    EXPECT_EQ(s.inner_failures.load(), 0);
  }
  EXPECT_FALSE(threading::InParallelTask());
}

// Phase p: every task writes its slot, waits at the barrier, then checks all slots say p.
struct BarrierState {
  static constexpr int kPhases = 200;
  std::vector<std::atomic<int>> slots;
  std::atomic<int> errors{0};
  std::atomic<int> barrier_failures{0};
  std::vector<std::thread::id> threads;
  explicit BarrierState(int n) : slots(n), threads(n) {}
};

int BarrierTask(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  auto* s = static_cast<BarrierState*>(cdata);
  const int n = penv->num_task;
  s->threads[task_id] = std::this_thread::get_id();
  for (int phase = 1; phase <= BarrierState::kPhases; ++phase) {
    s->slots[task_id].store(phase, std::memory_order_relaxed);
    if (TVMBackendParallelBarrier(task_id, penv) != 0) {
      s->barrier_failures++;
      return -1;
    }
    for (int t = 0; t < n; ++t) {
      if (s->slots[t].load(std::memory_order_relaxed) != phase) s->errors++;
    }
    if (TVMBackendParallelBarrier(task_id, penv) != 0) {
      s->barrier_failures++;
      return -1;
    }
  }
  return 0;
}

TEST_F(ThreadPoolTest, BarrierSeparatesPhases) {
  for (int nthreads : {2, 3, 4}) {
    threading::SetNumThreads(nthreads);
    for (int num_task : {0, 2}) {
      BarrierState s(num_task == 0 ? nthreads : num_task);
      ASSERT_EQ(TVMBackendParallelLaunch(BarrierTask, &s, num_task), 0) << TVMGetLastError();
      EXPECT_EQ(s.errors.load(), 0) << nthreads << " threads";
      EXPECT_EQ(s.barrier_failures.load(), 0);
      // A barrier only completes when every task runs on a thread of its own.
      std::sort(s.threads.begin(), s.threads.end());
      EXPECT_EQ(std::unique(s.threads.begin(), s.threads.end()), s.threads.end());
    }
  }
}

TEST_F(ThreadPoolTest, BarrierWorksWithParkedWaiters) {
  // With no spinning every barrier wait goes through the futex path.
  threading::SetNumThreads(3);
  threading::SetSpinMicros(0);
  BarrierState s(3);
  const int rc = TVMBackendParallelLaunch(BarrierTask, &s, 0);
  threading::SetSpinMicros(threading::kDefaultSpinMicros);
  ASSERT_EQ(rc, 0) << TVMGetLastError();
  EXPECT_EQ(s.errors.load(), 0);
}

TEST_F(ThreadPoolTest, BarrierWithMoreTasksThanThreadsIsAnError) {
  threading::SetNumThreads(2);
  BarrierState s(8);
  EXPECT_EQ(TVMBackendParallelLaunch(BarrierTask, &s, 8), -1);
  const std::string msg = TVMGetLastError();
  EXPECT_NE(msg.find("TVMBackendParallelBarrier"), std::string::npos) << msg;
  EXPECT_NE(msg.find("8 tasks"), std::string::npos) << msg;
  EXPECT_GT(s.barrier_failures.load(), 0);
  // The pool still works afterwards.
  CheckSumLaunch(0, 2);
}

TEST(ThreadPoolApi, BarrierOutsideALaunchIsAnError) {
  EXPECT_EQ(TVMBackendParallelBarrier(0, nullptr), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("outside a parallel launch"), std::string::npos);
}

int FailingTask(int task_id, TVMParallelGroupEnv*, void* cdata) {
  const int bad = *static_cast<int*>(cdata);
  if (task_id != bad) return 0;
  std::string msg = "kernel blew up in task " + std::to_string(task_id);
  TVMAPISetLastError(msg.c_str());
  return -1;
}

TEST_F(ThreadPoolTest, FailingTaskFailsTheLaunchWithItsMessage) {
  threading::SetNumThreads(2);
  for (int bad : {0, 1}) {
    ASSERT_EQ(TVMBackendParallelLaunch(FailingTask, &bad, 0), -1);
    const std::string msg = TVMGetLastError();
    EXPECT_NE(msg.find("task " + std::to_string(bad) + " of 2 failed"), std::string::npos) << msg;
    EXPECT_NE(msg.find("kernel blew up in task " + std::to_string(bad)), std::string::npos) << msg;
  }
  int bad = 40;  // beyond the pool: runs on whichever thread claims it
  ASSERT_EQ(TVMBackendParallelLaunch(FailingTask, &bad, 64), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("kernel blew up in task 40"), std::string::npos);
  int none = -1;
  EXPECT_EQ(TVMBackendParallelLaunch(FailingTask, &none, 0), 0);
}

int ThrowingTask(int task_id, TVMParallelGroupEnv*, void*) {
  if (task_id == 1) throw std::runtime_error("task threw on purpose");
  return 0;
}

TEST_F(ThreadPoolTest, ThrowingTaskFailsTheLaunch) {
  threading::SetNumThreads(2);
  ASSERT_EQ(TVMBackendParallelLaunch(ThrowingTask, nullptr, 0), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("task threw on purpose"), std::string::npos);
}

TEST(ThreadPoolApi, BadLaunchArgumentsAreErrors) {
  EXPECT_EQ(TVMBackendParallelLaunch(nullptr, nullptr, 0), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("NULL"), std::string::npos);
  EXPECT_EQ(TVMBackendParallelLaunch(SumTask, nullptr, -3), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("got -3"), std::string::npos);
}

TEST_F(ThreadPoolTest, ConcurrentLaunchersAllGetCorrectResults) {
  threading::SetNumThreads(2);
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&failures] {
      for (int i = 0; i < 200; ++i) {
        SumJob job(1000, 8);
        if (TVMBackendParallelLaunch(SumTask, &job, 0) != 0) failures++;
        int64_t total = 0;
        for (int t = 0; t < job.seen_num_task.load(); ++t) {
          if (job.runs[t].load() != 1) failures++;
          total += job.partial[t];
        }
        if (total != job.Expected()) failures++;
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(ThreadPoolTest, ForkAfterPoolStartLeavesAWorkingPoolInTheChild) {
  threading::SetNumThreads(2);
  CheckSumLaunch(0, 2);  // the pool runs in the parent now
  fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(30);  // a hung child dies instead of hanging the suite
    int code = 0;
    for (int i = 0; i < 200 && code == 0; ++i) {
      SumJob job(1000, 8);
      if (TVMBackendParallelLaunch(SumTask, &job, 0) != 0) code = 2;
      if (job.seen_num_task.load() != 2) code = 3;
      int64_t total = job.partial[0] + job.partial[1];
      if (total != job.Expected()) code = 4;
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  CheckSumLaunch(0, 2);  // and the parent's pool still works
}

// fork() waits for a launch running on another thread, so the child never inherits a pool
// caught in the middle of one.
TEST_F(ThreadPoolTest, ForkWhileAnotherThreadLaunches) {
  threading::SetNumThreads(2);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  // The launcher thread allocates nothing while it loops: a fork that catches another thread
  // inside malloc is only safe with glibc's allocator, not with every sanitizer's.
  SumJob shared_job(1000, 8);
  std::thread launcher([&] {
    while (!stop.load()) {
      if (TVMBackendParallelLaunch(SumTask, &shared_job, 0) != 0) failures++;
    }
  });
  std::string problems;
  for (int i = 0; i < 10 && problems.empty(); ++i) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
      problems = "fork failed";
      break;
    }
    if (pid == 0) {
      alarm(30);
      SumJob job(1000, 8);
      int code = TVMBackendParallelLaunch(SumTask, &job, 0) == 0 ? 0 : 2;
      if (job.partial[0] + job.partial[1] != job.Expected()) code = 3;
      _exit(code);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
      problems = "waitpid failed";
    } else if (!WIFEXITED(status)) {
      problems = "child killed by signal " + std::to_string(WTERMSIG(status));
    } else if (WEXITSTATUS(status) != 0) {
      problems = "child exited with " + std::to_string(WEXITSTATUS(status));
    }
  }
  stop.store(true);
  launcher.join();
  EXPECT_EQ(problems, "");
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(ThreadPoolTest, VerboseModeLogsTheConfigurationWhenThePoolStarts) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(30);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    setenv("EMBER_VERBOSE", "1", 1);
    threading::SetNumThreads(2);
    SumJob job(100, 8);
    int code = TVMBackendParallelLaunch(SumTask, &job, 0);
    code |= TVMBackendParallelLaunch(SumTask, &job, 0);  // no second line: the pool runs
    _exit(code == 0 ? 0 : 2);
  }
  close(fds[1]);
  std::string log;
  char buf[256];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) log.append(buf, n);
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(log.find("ember thread pool: 2 threads (set through the API)"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("thread pool"), log.rfind("thread pool")) << "logged more than once:\n" << log;
}

TEST_F(ThreadPoolTest, ThreadCountFollowsApiThenEnvironmentThenCores) {
  const int cores = static_cast<int>(threading::GetCpuTopology().all.size());
  ASSERT_GE(cores, 1);
  unsetenv("EMBER_NUM_THREADS");
  unsetenv("TVM_NUM_THREADS");
  threading::SetNumThreads(0);
  EXPECT_EQ(threading::NumThreads(), cores);

  setenv("TVM_NUM_THREADS", "3", 1);
  threading::SetNumThreads(0);
  EXPECT_EQ(threading::NumThreads(), 3);
  setenv("EMBER_NUM_THREADS", "5", 1);
  threading::SetNumThreads(0);
  EXPECT_EQ(threading::NumThreads(), 5);  // EMBER_ wins over TVM_
  EXPECT_NE(threading::Describe().find("EMBER_NUM_THREADS=5"), std::string::npos)
      << threading::Describe();
  CheckSumLaunch(0, 5);

  threading::SetNumThreads(4);  // the API wins over the environment
  EXPECT_EQ(threading::NumThreads(), 4);
  CheckSumLaunch(0, 4);

  setenv("EMBER_NUM_THREADS", "lots", 1);
  unsetenv("TVM_NUM_THREADS");
  threading::SetNumThreads(0);
  EXPECT_EQ(threading::NumThreads(), cores);  // junk is ignored (with a warning)
  setenv("EMBER_NUM_THREADS", "0", 1);
  threading::SetNumThreads(0);
  EXPECT_EQ(threading::NumThreads(), cores);
  unsetenv("EMBER_NUM_THREADS");
}

TEST_F(ThreadPoolTest, ConfigThreadpoolGlobalIsTheApiTwin) {
  using ember::runtime::Registry;
  const auto* config = Registry::Get("runtime.config_threadpool");
  const auto* num_threads = Registry::Get("runtime.NumThreads");
  ASSERT_NE(config, nullptr);
  ASSERT_NE(num_threads, nullptr);
  (*config)(0, 3);
  EXPECT_EQ(threading::NumThreads(), 3);
  EXPECT_EQ((*num_threads)().As<int>(), 3);
  CheckSumLaunch(0, 3);
  EXPECT_THROW((*config)(5, 2), ember::runtime::Error);

  // The same through the C ABI, as Python calls it.
  TVMFunctionHandle handle = nullptr;
  ASSERT_EQ(TVMFuncGetGlobal("runtime.config_threadpool", &handle), 0);
  ASSERT_NE(handle, nullptr);
  TVMValue args[2];
  int codes[2] = {kTVMArgInt, kTVMArgInt};
  TVMValue ret;
  int ret_code = 0;
  args[0].v_int64 = static_cast<int>(AffinityMode::kBig);
  args[1].v_int64 = 2;
  EXPECT_EQ(TVMFuncCall(handle, args, codes, 2, &ret, &ret_code), 0) << TVMGetLastError();
  EXPECT_EQ(threading::GetAffinityMode(), AffinityMode::kBig);
  EXPECT_EQ(threading::NumThreads(), 2);
  args[1].v_int64 = -4;
  EXPECT_EQ(TVMFuncCall(handle, args, codes, 2, &ret, &ret_code), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("got -4"), std::string::npos) << TVMGetLastError();
  EXPECT_EQ(TVMFuncFree(handle), 0);
}

TEST_F(ThreadPoolTest, BadConfigurationIsRejected) {
  using ember::runtime::Error;
  EXPECT_THROW(threading::SetNumThreads(-1), Error);
  EXPECT_THROW(threading::SetNumThreads(threading::kMaxThreads + 1), Error);
  EXPECT_THROW(threading::Configure(static_cast<AffinityMode>(7), 2), Error);
  EXPECT_THROW(threading::SetSpinMicros(-5), Error);
  try {
    threading::SetNumThreads(-1);
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("got -1"), std::string::npos) << e.what();
  }
}

TEST_F(ThreadPoolTest, ReconfiguringInsideATaskIsAnError) {
  threading::SetNumThreads(2);
  std::atomic<int> threw{0};
  auto task = [](int, TVMParallelGroupEnv*, void* cdata) {
    try {
      threading::SetNumThreads(3);
    } catch (const std::exception&) {
      static_cast<std::atomic<int>*>(cdata)->fetch_add(1);
    }
    return 0;
  };
  ASSERT_EQ(TVMBackendParallelLaunch(task, &threw, 0), 0);
  EXPECT_EQ(threw.load(), 2);
  EXPECT_EQ(threading::NumThreads(), 2);
}

TEST_F(ThreadPoolTest, AffinityModesRun) {
  const auto& topo = threading::GetCpuTopology();
  for (AffinityMode mode : {AffinityMode::kBig, AffinityMode::kLittle, AffinityMode::kAll}) {
    threading::Configure(mode, 0);
    EXPECT_EQ(threading::GetAffinityMode(), mode);
    const size_t expect = mode == AffinityMode::kBig      ? topo.big.size()
                          : mode == AffinityMode::kLittle ? topo.little.size()
                                                          : topo.all.size();
    EXPECT_EQ(threading::NumThreads(), static_cast<int>(expect));
    CheckSumLaunch(0, threading::NumThreads());
    threading::Configure(mode, 3);  // more threads than cores of that kind is allowed
    CheckSumLaunch(0, 3);
  }
}

// A fake /sys/devices/system/cpu with the given max frequencies (0 = no cpufreq directory).
std::string FakeSysfs(const std::string& name, const std::vector<long>& khz) {
  std::string root = ::testing::TempDir() + "ember_sysfs_" + name + "_" + std::to_string(getpid());
  mkdir(root.c_str(), 0755);
  for (size_t cpu = 0; cpu < khz.size(); ++cpu) {
    std::string dir = root + "/cpu" + std::to_string(cpu);
    mkdir(dir.c_str(), 0755);
    if (khz[cpu] == 0) continue;
    mkdir((dir + "/cpufreq").c_str(), 0755);
    std::ofstream(dir + "/cpufreq/cpuinfo_max_freq") << khz[cpu] << "\n";
  }
  return root;
}

TEST(CpuTopology, SplitsBigAndLittleByMaxFrequency) {
  // Prime + big + little clusters: little = the slowest, big = all the others.
  auto root = FakeSysfs("three", {1800000, 1800000, 2400000, 2400000, 3000000});
  auto topo = threading::ReadCpuTopology(root, {4, 0, 1, 2, 3});
  EXPECT_TRUE(topo.has_frequencies);
  EXPECT_EQ(topo.all, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(topo.little, (std::vector<int>{0, 1}));
  EXPECT_EQ(topo.big, (std::vector<int>{2, 3, 4}));
  // Only the cores the process may use count.
  topo = threading::ReadCpuTopology(root, {0, 2});
  EXPECT_EQ(topo.little, (std::vector<int>{0}));
  EXPECT_EQ(topo.big, (std::vector<int>{2}));
}

TEST(CpuTopology, AlikeOrUnknownCoresAreBothBigAndLittle) {
  auto same = threading::ReadCpuTopology(FakeSysfs("same", {2000000, 2000000}), {0, 1});
  EXPECT_TRUE(same.has_frequencies);
  EXPECT_EQ(same.big, (std::vector<int>{0, 1}));
  EXPECT_EQ(same.little, (std::vector<int>{0, 1}));
  auto unknown = threading::ReadCpuTopology(FakeSysfs("none", {2000000, 0}), {0, 1});
  EXPECT_FALSE(unknown.has_frequencies);
  EXPECT_EQ(unknown.big, (std::vector<int>{0, 1}));
  EXPECT_EQ(unknown.little, (std::vector<int>{0, 1}));
}

// The spin rule itself, on a fake clock: what the pool decides, whatever the machine is doing.
TEST(SpinBudget, DuringARunAWaitSpinsTheRunBudgetFromItsStart) {
  threading::sync::SpinBudget budget;
  budget.runs_in_progress = 1;
  budget.spin_ns = 20'000;
  budget.run_spin_ns = 2'000'000;
  EXPECT_TRUE(threading::sync::KeepSpinning(budget, 1'000, 1'000));
  EXPECT_TRUE(threading::sync::KeepSpinning(budget, 1'000, 1'000 + 1'999'999));
  EXPECT_FALSE(threading::sync::KeepSpinning(budget, 1'000, 1'000 + 2'000'000));
}

TEST(SpinBudget, OutsideARunAWaitSpinsTheIdleBudgetFromTheLaterOfItsStartAndTheRunEnd) {
  threading::sync::SpinBudget budget;
  budget.spin_ns = 20'000;
  budget.run_spin_ns = 2'000'000;
  budget.last_run_end_ns = 500'000;
  // The wait began before the run ended: the idle budget counts from the end.
  EXPECT_TRUE(threading::sync::KeepSpinning(budget, 100'000, 519'999));
  EXPECT_FALSE(threading::sync::KeepSpinning(budget, 100'000, 520'000));
  // The wait began after it: from its own start.
  EXPECT_TRUE(threading::sync::KeepSpinning(budget, 900'000, 919'999));
  EXPECT_FALSE(threading::sync::KeepSpinning(budget, 900'000, 920'000));
  // A clock read before the recorded end (another thread stored it) still spins.
  EXPECT_TRUE(threading::sync::KeepSpinning(budget, 100'000, 400'000));
  budget.spin_ns = 0;
  EXPECT_FALSE(threading::sync::KeepSpinning(budget, 900'000, 900'001));
}

// Polls until every worker of an n-thread pool is parked on its futex. The deadline only bounds a
// hang (a worker that never parks); a healthy pool parks within microseconds of the spin budget,
// however slowly the machine or an emulator runs, so this checks state, not speed.
bool AllWorkersPark(int nthreads) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (threading::NumParkedWorkers() != nthreads - 1) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Parked workers sleep in the kernel, so an idle process holds no core.
TEST_F(ThreadPoolTest, IdleWorkersParkOnTheirFutexAfterLaunches) {
  threading::SetNumThreads(2);
  EXPECT_EQ(threading::NumParkedWorkers(), 0) << "no pool before the first launch";
  for (int i = 0; i < 1000; ++i) {
    SumJob job(256, 64);
    ASSERT_EQ(TVMBackendParallelLaunch(SumTask, &job, 0), 0);
  }
  EXPECT_TRUE(AllWorkersPark(2)) << threading::NumParkedWorkers() << " of 1 worker parked";
  CheckSumLaunch(0, 2);  // and a parked worker wakes for the next launch
}

// During a run the workers stay awake between launches; once it ends they park. A barrier launch
// proves the worker ran (so it is spinning, not still waking) before the state is read.
TEST_F(ThreadPoolTest, WorkersSpinDuringARunAndParkAfterIt) {
  threading::SetNumThreads(2);
  threading::SetSpinMicros(0);
  threading::SetRunSpinMicros(threading::kMaxSpinMicros);
  int parked_during_run = -1;
  {
    threading::RunScope run;
    // A worker parks no sooner than kMaxSpinMicros (1 s) after its task; a read that came later
    // than half of that (a descheduled test thread) says nothing, so it is taken again.
    for (int attempt = 0; attempt < 20 && parked_during_run < 0; ++attempt) {
      BarrierState s(2);
      ASSERT_EQ(TVMBackendParallelLaunch(BarrierTask, &s, 0), 0) << TVMGetLastError();
      const auto returned = std::chrono::steady_clock::now();
      const int parked = threading::NumParkedWorkers();
      if (std::chrono::steady_clock::now() - returned < std::chrono::milliseconds(500)) {
        parked_during_run = parked;
      }
    }
  }
  const bool parked_after = AllWorkersPark(2);
  threading::SetSpinMicros(threading::kDefaultSpinMicros);
  threading::SetRunSpinMicros(threading::kDefaultRunSpinMicros);
  EXPECT_EQ(parked_during_run, 0) << "the worker parked during the run (-1: never read in time)";
  EXPECT_TRUE(parked_after) << "the worker kept spinning after the run";
  EXPECT_THROW(threading::SetRunSpinMicros(-1), ember::runtime::Error);
  EXPECT_THROW(threading::SetRunSpinMicros(threading::kMaxSpinMicros + 1), ember::runtime::Error);
}

// Prints the spin times the runtime started with and exits (run in a re-executed child).
void ReportSpinTimesAndExit() {
  std::fprintf(stderr, "spin %d run %d late %d\n", threading::SpinMicros(),
               threading::RunSpinMicros(), threading::LateBackoffMillis());
  std::exit(0);
}

// The spin times are read when the runtime loads: a "threadsafe" death test re-executes this
// binary, so the child starts with the environment set here.
TEST(ThreadPoolEnvironment, SpinTimesComeFromTheEnvironment) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv("EMBER_THREAD_SPIN_US", "7", 1);
  setenv("EMBER_THREAD_RUN_SPIN_US", "300", 1);
  setenv("EMBER_THREAD_LATE_BACKOFF_MS", "0", 1);
  EXPECT_EXIT(ReportSpinTimesAndExit(), ::testing::ExitedWithCode(0), "spin 7 run 300 late 0");
  setenv("EMBER_THREAD_SPIN_US", "soon", 1);
  setenv("EMBER_THREAD_RUN_SPIN_US", "-1", 1);
  setenv("EMBER_THREAD_LATE_BACKOFF_MS", "60001", 1);
  EXPECT_EXIT(ReportSpinTimesAndExit(), ::testing::ExitedWithCode(0),
              "ignoring EMBER_THREAD_SPIN_US=\"soon\": expected an integer in \\[0, 1000000\\]"
              ".*EMBER_THREAD_RUN_SPIN_US=\"-1\".*EMBER_THREAD_LATE_BACKOFF_MS=\"60001\""
              ".*spin 20 run 2000 late 1000");
  unsetenv("EMBER_THREAD_SPIN_US");
  unsetenv("EMBER_THREAD_RUN_SPIN_US");
  unsetenv("EMBER_THREAD_LATE_BACKOFF_MS");
}

// ---------------------------------------------------------------------------------------------
// Late workers (runtime/late_worker.h).

using threading::LateWorker;
using threading::LateWorkerLimits;
constexpr uint64_t kMs = 1'000'000;

TEST(LateWorker, AWorkerWithinTheLaunchersBusyTimeAndSlackIsOnTime) {
  LateWorkerLimits limits;
  LateWorker w;
  EXPECT_FALSE(w.Record(limits, 100 * kMs, 2 * kMs, 2 * kMs + limits.slack_ns));
  EXPECT_TRUE(w.Available(100 * kMs));
  EXPECT_EQ(w.times_late(), 0u);
}

TEST(LateWorker, ALateWorkerSitsOutTwiceAsLongEachTimeUpToTheCap) {
  LateWorkerLimits limits;
  limits.max_backoff_ns = 35 * kMs;
  LateWorker w;
  uint64_t now = 1000 * kMs;
  EXPECT_TRUE(w.Record(limits, now, 1 * kMs, 5 * kMs));
  EXPECT_EQ(w.BenchedUntil(), now + 10 * kMs);
  EXPECT_FALSE(w.Available(now + 10 * kMs - 1));
  EXPECT_TRUE(w.Available(now + 10 * kMs));
  now += 20 * kMs;
  EXPECT_TRUE(w.Record(limits, now, 0, 1 * kMs));
  EXPECT_EQ(w.BenchedUntil(), now + 20 * kMs);
  now += 30 * kMs;
  EXPECT_TRUE(w.Record(limits, now, 0, 1 * kMs));
  EXPECT_EQ(w.BenchedUntil(), now + 35 * kMs) << "40 ms capped at 35";
  EXPECT_EQ(w.times_late(), 3u);
}

TEST(LateWorker, ASeriesOfOnTimeLaunchesForgetsTheRecord) {
  LateWorkerLimits limits;
  LateWorker w;
  uint64_t now = 1000 * kMs;
  EXPECT_TRUE(w.Record(limits, now, 0, 1 * kMs));
  EXPECT_TRUE(w.Record(limits, now, 0, 1 * kMs));
  EXPECT_EQ(w.BenchedUntil(), now + 20 * kMs);
  now += 100 * kMs;
  for (uint32_t i = 0; i + 1 < limits.on_time_to_forget; ++i) w.Record(limits, now, kMs, 0);
  EXPECT_TRUE(w.Record(limits, now, 0, 1 * kMs)) << "one short of forgetting: the back-off doubles";
  EXPECT_EQ(w.BenchedUntil(), now + 40 * kMs);
  for (uint32_t i = 0; i < limits.on_time_to_forget; ++i) w.Record(limits, now, kMs, 0);
  EXPECT_TRUE(w.Record(limits, now, 0, 1 * kMs));
  EXPECT_EQ(w.BenchedUntil(), now + 10 * kMs) << "forgotten: back to the first back-off";
}

TEST(LateWorker, ZeroCapTurnsThePolicyOff) {
  LateWorkerLimits limits;
  limits.max_backoff_ns = 0;
  LateWorker w;
  EXPECT_FALSE(w.Record(limits, 5 * kMs, 0, 1000 * kMs));
  EXPECT_TRUE(w.Available(5 * kMs));
}

// Task 1 runs on the worker for `worker_ms`; task 0 waits until task 1 has started (so the worker,
// not the caller, takes it), up to a second.
struct SlowWorkerJob {
  int worker_ms = 0;
  std::atomic<bool> task1_started{false};
  std::atomic<bool> task1_on_worker{false};
  std::thread::id caller = std::this_thread::get_id();
};

int SlowWorkerTask(int task_id, TVMParallelGroupEnv*, void* cdata) {
  auto* job = static_cast<SlowWorkerJob*>(cdata);
  if (task_id == 0) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!job->task1_started.load() && std::chrono::steady_clock::now() < give_up) {
    }
    return 0;
  }
  job->task1_on_worker.store(std::this_thread::get_id() != job->caller);
  job->task1_started.store(true);
  if (job->task1_on_worker.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(job->worker_ms));
  }
  return 0;
}

// Launches SlowWorkerTask until the worker ran task 1 (it may miss a post on a loaded machine).
bool LaunchWithTheWorker(int worker_ms) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    SlowWorkerJob job;
    job.worker_ms = worker_ms;
    if (TVMBackendParallelLaunch(SlowWorkerTask, &job, 0) != 0) return false;
    if (job.task1_on_worker.load()) return true;
  }
  return false;
}

// Launches until the pool counts the worker late, the worker ending 50, 100, 200, then 400 ms
// after the caller. A worker counts as late only past the caller's own busy time and slack, and
// on a loaded machine (qemu beside other jobs) the caller waiting for a worker woken late can be
// busy for tens of milliseconds itself.
bool MakeTheWorkerLate() {
  for (int ms = 50; ms <= 400; ms *= 2) {
    if (!LaunchWithTheWorker(ms)) return false;
    if (threading::TimesWorkersWereLate() > 0) return true;
  }
  return false;
}

// A worker that ends well after the caller sits out the next launches (they run on the caller
// alone, num_task 1), and after its back-off it takes tasks again.
TEST_F(ThreadPoolTest, ALateWorkerSitsOutLaunchesThenComesBack) {
  threading::SetNumThreads(2);
  threading::SetLateBackoffMillis(threading::kDefaultLateBackoffMillis);
  ASSERT_TRUE(MakeTheWorkerLate());
  const auto late_at = std::chrono::steady_clock::now();
  EXPECT_EQ(threading::TimesWorkersWereLate(), 1u);
  SumJob job(10007, 4);
  ASSERT_EQ(TVMBackendParallelLaunch(SumTask, &job, 0), 0) << TVMGetLastError();
  int64_t total = 0;
  for (int t = 0; t < job.seen_num_task.load(); ++t) total += job.partial[t];
  EXPECT_EQ(total, job.Expected());
  // The first back-off is 10 ms; a test thread descheduled that long has nothing to check here.
  if (std::chrono::steady_clock::now() - late_at < std::chrono::milliseconds(10)) {
    EXPECT_EQ(job.seen_num_task.load(), 1) << "the late worker took part";
  }
  // A launch that asks for its tasks gets every worker: these two meet at a barrier.
  BarrierState barrier(2);
  ASSERT_EQ(TVMBackendParallelLaunch(BarrierTask, &barrier, 2), 0) << TVMGetLastError();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(LaunchWithTheWorker(0)) << "the worker did not come back after its back-off";
}

TEST_F(ThreadPoolTest, WithTheBackOffOffALateWorkerKeepsItsTasks) {
  threading::SetNumThreads(2);
  ASSERT_EQ(threading::LateBackoffMillis(), 0);
  ASSERT_TRUE(LaunchWithTheWorker(30));
  EXPECT_EQ(threading::TimesWorkersWereLate(), 0u);
  EXPECT_TRUE(LaunchWithTheWorker(0));
  EXPECT_THROW(threading::SetLateBackoffMillis(-1), ember::runtime::Error);
  EXPECT_THROW(threading::SetLateBackoffMillis(threading::kMaxLateBackoffMillis + 1),
               ember::runtime::Error);
}

TEST(RunOnce, RunsTheInitialiserOnceAcrossThreads) {
  void* handle = nullptr;
  std::atomic<int> calls{0};
  auto init = [](void* cdata) {
    static_cast<std::atomic<int>*>(cdata)->fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return 0;
  };
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      if (TVMBackendRunOnce(&handle, init, &calls, 0) != 0) failures++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(TVMBackendRunOnce(&handle, init, &calls, 0), 0);
  EXPECT_EQ(calls.load(), 1);
}

TEST(RunOnce, AFailedInitialiserIsRetried) {
  void* handle = nullptr;
  int calls = 0;
  auto init = [](void* cdata) { return ++*static_cast<int*>(cdata) == 1 ? -1 : 0; };
  EXPECT_EQ(TVMBackendRunOnce(&handle, init, &calls, 0), -1);
  EXPECT_EQ(TVMBackendRunOnce(&handle, init, &calls, 0), 0);
  EXPECT_EQ(TVMBackendRunOnce(&handle, init, &calls, 0), 0);
  EXPECT_EQ(calls, 2);
}

}  // namespace
