// The ending both example apps share: the five largest entries of a float32 output, one a line as
// "RANK: index I score S" (tests/cross/check_bundle_static.py and the cpp_deploy test read it).
#ifndef EMBER_APPS_PRINT_TOP5_H_
#define EMBER_APPS_PRINT_TOP5_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

inline void PrintTop5(const float* y, int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  size_t k = std::min<size_t>(5, order.size());
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int64_t a, int64_t b) { return y[a] > y[b]; });
  for (size_t i = 0; i < k; ++i) {
    std::printf("%zu: index %lld score %.6f\n", i + 1, static_cast<long long>(order[i]),
                y[order[i]]);
  }
}

#endif  // EMBER_APPS_PRINT_TOP5_H_
