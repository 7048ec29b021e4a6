// IEEE 754 binary16 (ONNX float16) to float32, for the host's reading of float16 constants.
#ifndef EMBER_COMPILER_IR_HALF_FLOAT_H_
#define EMBER_COMPILER_IR_HALF_FLOAT_H_

#include <cstdint>
#include <cstring>

namespace ember {
namespace compiler {

/*! \brief The float32 of a binary16 bit pattern (exact: every half is a float). */
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {  // infinity, NaN
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {  // normal: rebias 15 -> 127
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {  // signed zero
    bits = sign;
  } else {  // subnormal: normalize, 2^-14 * 0.mantissa
    uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_HALF_FLOAT_H_
