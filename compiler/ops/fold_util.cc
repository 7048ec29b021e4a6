#include "ops/fold_util.h"

namespace ember::compiler::ops {

std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

std::vector<int64_t> Unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> c(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    c[d] = flat % shape[d];
    flat /= shape[d];
  }
  return c;
}

int64_t BroadcastIndex(int64_t flat, const std::vector<int64_t>& out_shape,
                       const std::vector<int64_t>& in_shape) {
  int64_t idx = 0, stride = 1;
  size_t off = out_shape.size() - in_shape.size();
  for (int64_t d = static_cast<int64_t>(out_shape.size()) - 1; d >= 0; --d) {
    int64_t c = flat % out_shape[d];
    flat /= out_shape[d];
    if (static_cast<size_t>(d) >= off) {
      int64_t n = in_shape[d - off];
      if (n != 1) idx += c * stride;
      stride *= n;
    }
  }
  return idx;
}

}  // namespace ember::compiler::ops
