// The values of a float32 ONNX tensor (layout in onnx_float_values.h).
#include "frontend/onnx/onnx_float_values.h"

#include <ember/compiler/ir/tensor_type.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace ember {
namespace compiler {

std::vector<float> Float32Values(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto::FLOAT) {
    throw CompileError("tensor '" + t.name() + "' must be float32, got ONNX element type " +
                       std::to_string(t.data_type()));
  }
  const bool raw = t.has_raw_data();
  const int64_t held = raw ? static_cast<int64_t>(t.raw_data().size() / sizeof(float))
                           : int64_t{t.float_data_size()};
  // The dims' product, stopped as soon as it passes what the payload holds (so it cannot overflow).
  int64_t n = 1;
  bool fits = !raw || t.raw_data().size() % sizeof(float) == 0;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d != 0 && n > held / d)) fits = false;
    if (!fits) break;
    n *= d;
  }
  if (!fits || n != held) {
    std::string dims;
    for (int64_t d : t.dims()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    throw CompileError(
        "tensor '" + t.name() + "' holds " +
        (raw ? std::to_string(t.raw_data().size()) + " bytes" : std::to_string(held) + " values") +
        ", its dims [" + dims + "] say otherwise (float32)");
  }
  if (!raw) return {t.float_data().begin(), t.float_data().end()};
  std::vector<float> v(static_cast<size_t>(n));
  if (n != 0) std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
  return v;
}

}  // namespace compiler
}  // namespace ember
