// libFuzzer target: the .npy reader must refuse bad input with NpyError, never crash or
// over-allocate.
#include <ember/runtime/npy.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ember::runtime::NpyArray a = ember::runtime::ParseNpy(data, size, "fuzz.npy");
    // A parsed array must describe exactly the bytes it holds.
    size_t count = 1;
    for (int64_t d : a.shape) count *= static_cast<size_t>(d);
    size_t item = (static_cast<size_t>(a.dtype.bits) * a.dtype.lanes + 7) / 8;
    if (count * item != a.data.size()) __builtin_trap();
  } catch (const ember::runtime::NpyError&) {
  }
  return 0;
}
