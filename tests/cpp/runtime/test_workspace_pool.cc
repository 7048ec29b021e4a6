// Per-thread workspace pool behind TVMBackendAllocWorkspace / TVMBackendFreeWorkspace.
#include <dlpack/dlpack.h>
#include <ember/runtime/c_backend_api.h>
#include <ember/runtime/threading.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace threading = ember::runtime::threading;

void* Alloc(uint64_t nbytes) { return TVMBackendAllocWorkspace(kDLCPU, 0, nbytes, kDLFloat, 32); }
int Free(void* p) { return TVMBackendFreeWorkspace(kDLCPU, 0, p); }

bool Aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % threading::kWorkspaceAlignment == 0;
}

TEST(WorkspacePool, BlocksAreAlignedAndWritable) {
  std::vector<void*> blocks;
  for (uint64_t n :
       {0ull, 1ull, 3ull, 63ull, 64ull, 65ull, 1000ull, 4096ull, 4097ull, 1ull << 20}) {
    void* p = Alloc(n);
    ASSERT_NE(p, nullptr) << n << " bytes: " << TVMGetLastError();
    EXPECT_TRUE(Aligned(p)) << n << " bytes at " << p;
    std::memset(p, 0xab, n);  // the sanitizer build checks the block really is that large
    blocks.push_back(p);
  }
  for (size_t i = blocks.size(); i-- > 0;) ASSERT_EQ(Free(blocks[i]), 0) << TVMGetLastError();
}

TEST(WorkspacePool, FreedBlocksAreReused) {
  void* a = Alloc(10000);
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(Free(a), 0);
  void* b = Alloc(10000);
  EXPECT_EQ(a, b);
  void* c = Alloc(9000);  // rounds to the same pages while `b` is taken: a new block
  EXPECT_NE(c, b);
  ASSERT_EQ(Free(c), 0);
  ASSERT_EQ(Free(b), 0);
}

// The kernel pattern: nested scratch buffers taken and returned in stack order, every call.
void KernelLikeCall() {
  void* a = Alloc(1 << 16);
  void* b = Alloc(3000);
  void* c = Alloc(200);
  ASSERT_TRUE(a && b && c);
  std::memset(c, 1, 200);
  ASSERT_EQ(Free(c), 0);
  void* d = Alloc(5000);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(Free(d), 0);
  ASSERT_EQ(Free(b), 0);
  ASSERT_EQ(Free(a), 0);
}

TEST(WorkspacePool, SteadyStateDoesNotAllocate) {
  KernelLikeCall();  // warm-up
  KernelLikeCall();
  const threading::WorkspaceStats warm = threading::GetWorkspaceStats();
  EXPECT_GT(warm.system_allocations, 0u);
  EXPECT_EQ(warm.blocks_in_use, 0u);
  for (int i = 0; i < 1000; ++i) {
    KernelLikeCall();
    if (HasFatalFailure()) return;
  }
  const threading::WorkspaceStats after = threading::GetWorkspaceStats();
  EXPECT_EQ(after.system_allocations, warm.system_allocations);
  EXPECT_EQ(after.bytes_reserved, warm.bytes_reserved);
  EXPECT_EQ(after.blocks_free, warm.blocks_free);
}

TEST(WorkspacePool, OutOfOrderFreesWork) {
  void* a = Alloc(100);
  void* b = Alloc(200);
  void* c = Alloc(300);
  EXPECT_EQ(Free(a), 0);
  EXPECT_EQ(Free(c), 0);
  EXPECT_EQ(Free(b), 0);
  EXPECT_EQ(threading::GetWorkspaceStats().blocks_in_use, 0u);
}

TEST(WorkspacePool, GrowingRequestsKeepTheBlockCountBounded) {
  const uint64_t free_before = threading::GetWorkspaceStats().blocks_free;
  for (uint64_t n = 4096; n <= (1u << 22); n *= 2) {
    void* p = Alloc(n);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(Free(p), 0);
  }
  // Each too-large request replaces the largest free block instead of adding one.
  EXPECT_LE(threading::GetWorkspaceStats().blocks_free, free_before + 1);
}

TEST(WorkspacePool, AbsurdSizeIsAnErrorNotACrash) {
  EXPECT_EQ(Alloc(1ull << 62), nullptr);
  const std::string msg = TVMGetLastError();
  EXPECT_NE(msg.find("4611686018427387904 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("physical memory"), std::string::npos) << msg;
  EXPECT_EQ(Alloc(UINT64_MAX), nullptr);
}

TEST(WorkspacePool, FreeingAForeignPointerIsAnError) {
  int x = 0;
  EXPECT_EQ(Free(&x), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("not allocated by this thread"), std::string::npos);
  void* p = Alloc(64);
  ASSERT_EQ(Free(p), 0);
  EXPECT_EQ(Free(p), -1);  // double free
  EXPECT_EQ(Free(nullptr), 0);
}

TEST(WorkspacePool, OtherDevicesAreRejected) {
  EXPECT_EQ(TVMBackendAllocWorkspace(kDLCUDA, 0, 64, kDLFloat, 32), nullptr);
  EXPECT_NE(std::string(TVMGetLastError()).find("device type 2"), std::string::npos);
  EXPECT_EQ(TVMBackendFreeWorkspace(kDLCUDA, 0, nullptr), -1);
}

TEST(WorkspacePool, EachThreadHasItsOwnPool) {
  void* mine = Alloc(128);
  ASSERT_NE(mine, nullptr);
  const uint64_t my_in_use = threading::GetWorkspaceStats().blocks_in_use;
  int other_free_rc = 0;
  uint64_t other_in_use_before = 99;
  std::thread other([&] {
    other_in_use_before = threading::GetWorkspaceStats().blocks_in_use;
    other_free_rc = Free(mine);  // not this thread's block
    void* p = Alloc(128);
    if (p == mine) other_free_rc = 42;
    Alloc(256);  // never freed: reclaimed when the thread exits (the ASan build checks)
    Free(p);
  });
  other.join();
  EXPECT_EQ(other_in_use_before, 0u);
  EXPECT_EQ(other_free_rc, -1);
  EXPECT_EQ(threading::GetWorkspaceStats().blocks_in_use, my_in_use);
  EXPECT_EQ(Free(mine), 0);
}

}  // namespace
