/*!
 * \file ember/runtime/half_float.h
 * \brief IEEE 754 binary16 (ONNX float16) to and from float32, on bit patterns: the compiler
 * widens float16 constants with it, and on 32-bit ARM the runtime answers the conversion calls
 * LLVM's kernels make with it (half_libcalls.cc).
 */
#ifndef EMBER_RUNTIME_HALF_FLOAT_H_
#define EMBER_RUNTIME_HALF_FLOAT_H_

#include <cstdint>
#include <cstring>

namespace ember::runtime {

/*! \brief The float32 bit pattern of a binary16 one (exact: every half is a float). */
inline uint32_t HalfBitsToFloatBits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return sign | 0x7f800000u | (mantissa << 13);            // infinity, NaN
  if (exponent != 0) return sign | ((exponent + 112) << 23) | (mantissa << 13);  // 15 -> 127
  if (mantissa == 0) return sign;                                                // signed zero
  uint32_t e = 113;  // subnormal, 2^-14 * 0.mantissa: normalize
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --e;
  }
  return sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
}

/*!
 * \brief The binary16 bit pattern nearest a float32 one, ties to even (IEEE's default rounding):
 * magnitudes from 65520 up become infinity, below 2^-14 subnormal halves, at or below 2^-25 zero;
 * a NaN stays a (quiet) NaN with the top of its payload.
 */
inline uint16_t FloatBitsToHalfBits(uint32_t f) {
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t magnitude = f & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu);  // NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // 65520 (half-way past 65504) and up
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent >= -14) {  // a normal half: drop 13 mantissa bits, rounding
    uint32_t h = (static_cast<uint32_t>(exponent + 15) << 10) | ((magnitude >> 13) & 0x3ffu);
    const uint32_t dropped = magnitude & 0x1fffu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (h & 1u) != 0)) ++h;  // may carry: exact
    return static_cast<uint16_t>(sign | h);
  }
  if (exponent < -25) return static_cast<uint16_t>(sign);  // below half of the least subnormal
  // A subnormal half holds round(value * 2^24); value * 2^24 = significand * 2^(exponent + 1).
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const int shift = -(exponent + 1);  // 14 .. 24
  uint32_t h = significand >> shift;
  const uint32_t dropped = significand & ((1u << shift) - 1), half_way = 1u << (shift - 1);
  if (dropped > half_way || (dropped == half_way && (h & 1u) != 0)) ++h;  // 0x400: least normal
  return static_cast<uint16_t>(sign | h);
}

/*! \brief The float32 of a binary16 bit pattern. */
inline float HalfToFloat(uint16_t h) {
  const uint32_t bits = HalfBitsToFloatBits(h);
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/*! \brief The binary16 bit pattern nearest f (ties to even). */
inline uint16_t FloatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return FloatBitsToHalfBits(bits);
}

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_HALF_FLOAT_H_
