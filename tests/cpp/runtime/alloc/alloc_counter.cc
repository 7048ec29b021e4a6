#include "alloc_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local bool g_count_allocs = false;
thread_local int64_t g_allocs = 0;
}  // namespace

namespace ember::testing {
AllocCounter::AllocCounter() {
  g_allocs = 0;
  g_count_allocs = true;
}
AllocCounter::~AllocCounter() { g_count_allocs = false; }
int64_t AllocCounter::count() const { return g_allocs; }
}  // namespace ember::testing

// GCC cannot see that these replace the global pair, and flags free() of "new" memory.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  if (g_count_allocs) ++g_allocs;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  if (g_count_allocs) ++g_allocs;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
