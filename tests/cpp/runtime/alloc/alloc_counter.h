// Counts heap allocations made by the current thread, for the tests that prove a hot path (a
// PackedFunc call, GraphExecutor::run) allocates nothing. alloc_counter.cc replaces the global
// operator new, so these tests live in a binary of their own (ember_alloc_tests).
#ifndef EMBER_TESTS_CPP_RUNTIME_ALLOC_ALLOC_COUNTER_H_
#define EMBER_TESTS_CPP_RUNTIME_ALLOC_ALLOC_COUNTER_H_

#include <cstdint>

namespace ember::testing {

/*! \brief Counts this thread's operator new calls from construction to destruction. */
class AllocCounter {
 public:
  AllocCounter();
  ~AllocCounter();
  AllocCounter(const AllocCounter&) = delete;
  AllocCounter& operator=(const AllocCounter&) = delete;
  int64_t count() const;
};

}  // namespace ember::testing

#endif  // EMBER_TESTS_CPP_RUNTIME_ALLOC_ALLOC_COUNTER_H_
