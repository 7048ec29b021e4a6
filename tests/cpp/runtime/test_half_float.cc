// float16 <-> float32 (ember/runtime/half_float.h) against definitions of their own: every half
// widened and compared with mantissa * 2^exponent, and floats across the whole range (ties,
// overflow, subnormals, NaN) narrowed and compared with the nearest half found by search. On
// 32-bit ARM, the conversion calls the runtime exports for LLVM's kernels (half_libcalls.cc) give
// the same bits.
#include <ember/runtime/half_float.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__arm__)
extern "C" uint32_t __gnu_h2f_ieee(uint32_t h);
extern "C" uint32_t __gnu_f2h_ieee(uint32_t f);
#endif

namespace ember::runtime {
namespace {

// The value of a finite half from its fields.
double HalfValue(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return (h & 0x8000) != 0 ? -magnitude : magnitude;
}

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// The half nearest the finite float f, ties to the even bit pattern; halves and floats are exact
// in double, so are their differences here.
uint16_t NearestHalf(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double m = std::fabs(static_cast<double>(f));
  if (m >= 65520.0) return sign | 0x7c00;  // past half-way from 65504 to 2^16: infinity
  // Positive finite halves (0x0000 .. 0x7bff) increase with their bits: the last one <= m.
  uint16_t lo = 0, hi = 0x7bff;
  while (lo < hi) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (HalfValue(mid) <= m) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  if (lo == 0x7bff) return sign | lo;  // in [65504, 65520)
  const double below = m - HalfValue(lo), above = HalfValue(lo + 1) - m;
  const bool up = above < below || (above == below && (lo & 1) != 0);
  return static_cast<uint16_t>(sign | (up ? lo + 1 : lo));
}

TEST(HalfFloat, EveryHalfWidensExactly) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    const int exponent = (h >> 10) & 0x1f;
    if (exponent == 0x1f) {
      EXPECT_EQ((h & 0x3ff) != 0, std::isnan(f)) << std::hex << h;
      if ((h & 0x3ff) == 0) {
        EXPECT_TRUE(std::isinf(f)) << std::hex << h;
      }
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), HalfValue(static_cast<uint16_t>(h))) << std::hex << h;
    EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;  // -0 too
    EXPECT_EQ(FloatToHalf(f), h) << "round trip of 0x" << std::hex << h;
  }
}

TEST(HalfFloat, FloatsNarrowToTheNearestHalfTiesToEven) {
  std::vector<uint32_t> bits;
  // A stride through every float pattern, both signs.
  for (uint64_t b = 0; b <= 0xffffffffull; b += 4093) bits.push_back(static_cast<uint32_t>(b));
  // Each positive half, the ties half-way to the next one, and a float either side of each tie.
  for (uint16_t h = 0; h < 0x7bff; ++h) {
    const float tie = static_cast<float>((HalfValue(h) + HalfValue(h + 1)) / 2);
    uint32_t t;
    std::memcpy(&t, &tie, sizeof(t));
    for (uint32_t b : {t - 1, t, t + 1}) bits.insert(bits.end(), {b, b | 0x80000000u});
  }
  // Around the largest half, infinity's threshold, the least subnormal and half of it.
  for (float f : {65504.f, 65519.996f, 65520.f, 65536.f, 1e30f, 5.9604645e-8f, 2.9802322e-8f,
                  2.9802326e-8f, 2.9802319e-8f, 6.1035156e-5f, 6.1035153e-5f, 0.f}) {
    uint32_t b;
    std::memcpy(&b, &f, sizeof(b));
    bits.insert(bits.end(), {b, b | 0x80000000u});
  }
  int bad = 0;
  for (uint32_t b : bits) {
    const float f = FromBits(b);
    const uint16_t got = FloatBitsToHalfBits(b);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(got))) << std::hex << b;
      continue;
    }
    const uint16_t want = std::isinf(f) ? (b >> 16 & 0x8000) | 0x7c00 : NearestHalf(f);
    if (got != want && ++bad <= 5) {
      ADD_FAILURE() << "float 0x" << std::hex << b << " (" << f << "): 0x" << got << ", expected 0x"
                    << want;
    }
  }
  EXPECT_EQ(bad, 0) << "of " << bits.size() << " floats";
}

#if defined(__arm__)
// The calls LLVM's ARM kernels make (soft-float convention: bits in r0) are these conversions.
TEST(HalfFloat, TheArmConversionCallsAreTheRuntimes) {
  for (uint32_t h = 0; h <= 0xffff; h += 7) EXPECT_EQ(__gnu_h2f_ieee(h), HalfBitsToFloatBits(h));
  for (uint64_t b = 0; b <= 0xffffffffull; b += 65521) {
    EXPECT_EQ(__gnu_f2h_ieee(static_cast<uint32_t>(b)),
              FloatBitsToHalfBits(static_cast<uint32_t>(b)));
  }
}
#endif

}  // namespace
}  // namespace ember::runtime
