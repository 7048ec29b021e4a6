// libFuzzer target: the params loader must refuse bad input with an Error, never crash, hang or
// make a huge allocation (-malloc_limit_mb catches the last).
#include <ember/runtime/logging.h>
#include <ember/runtime/ndarray.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto params =
        ember::runtime::LoadParams(reinterpret_cast<const char*>(data), size, "fuzz.params");
    for (const auto& kv : params) {
      if (kv.second.NBytes() > size) __builtin_trap();  // data must have come from the input
    }
  } catch (const ember::runtime::Error&) {
  }
  return 0;
}
