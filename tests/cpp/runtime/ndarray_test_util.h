// Small helpers the runtime tests share: float NDArrays from and to vectors, and the message of
// the ember::runtime::Error a call throws.
#ifndef EMBER_TESTS_CPP_RUNTIME_NDARRAY_TEST_UTIL_H_
#define EMBER_TESTS_CPP_RUNTIME_NDARRAY_TEST_UTIL_H_

#include <ember/runtime/logging.h>
#include <ember/runtime/ndarray.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ember::runtime::test_util {

inline NDArray Floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  NDArray a = NDArray::Empty(ShapeTuple(std::move(shape)), kFloat32, kCPU);
  a.CopyFromBytes(values.data(), values.size() * sizeof(float));
  return a;
}

inline std::vector<float> Values(const NDArray& a) {
  std::vector<float> v(static_cast<size_t>(a.NumElements()));
  a.CopyToBytes(v.data(), v.size() * sizeof(float));
  return v;
}

/*! \brief The message of the Error \p f throws, or "(no error)". */
inline std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace ember::runtime::test_util

#endif  // EMBER_TESTS_CPP_RUNTIME_NDARRAY_TEST_UTIL_H_
