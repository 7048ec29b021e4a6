// The float16 conversions LLVM's 32-bit ARM code calls. Without the fp16 extension (which not
// every ARMv7 core has), the backend widens and narrows halves through __gnu_h2f_ieee and
// __gnu_f2h_ieee. Only libgcc's static archive defines them, so a kernel library (lib.so) that
// reads or writes float16 would fail to load with "undefined symbol"; the runtime exports them and
// the loader binds the library's calls to these. Both use the base (soft-float) procedure call
// standard on every ARM ABI: floats travel as their bits in r0, which these signatures say.
#if defined(__arm__)

#include <ember/runtime/half_float.h>

#include <cstdint>

extern "C" {

uint32_t __gnu_h2f_ieee(uint32_t h) {
  return ember::runtime::HalfBitsToFloatBits(static_cast<uint16_t>(h));
}

uint32_t __gnu_f2h_ieee(uint32_t f) { return ember::runtime::FloatBitsToHalfBits(f); }

}  // extern "C"

#endif  // defined(__arm__)
