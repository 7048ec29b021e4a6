/*!
 * \file ember/compiler/target.h
 * \brief Code-generation target: "llvm [-mtriple=T] [-mcpu=C] [-mattr=A]".
 */
#ifndef EMBER_COMPILER_TARGET_H_
#define EMBER_COMPILER_TARGET_H_

#include <string>

namespace ember::compiler {

struct Target {
  std::string triple;    // e.g. x86_64-pc-linux-gnu, aarch64-linux-gnu, armv7a-linux-gnueabihf
  std::string cpu;       // e.g. skylake, cortex-a72, generic
  std::string features;  // LLVM feature string, e.g. "+neon,+avx2"
  bool is_host = false;
  /*! \brief Widest float SIMD register in bits (128 for NEON/SSE, 256 AVX2, 512 AVX-512). */
  int vector_bits = 128;
  /*! \brief Widest register an 8-bit dot-product instruction (four byte products added to each
   * int32 lane) runs on: 512 with AVX-512 VNNI (vpdpbusd), 256 with AVX-VNNI, 128 on aarch64 with
   * dotprod (sdot) or i8mm, 0 without (the int8 conv kernels need it or the next one; see
   * compiler/schedule/). */
  int int8_dot_bits = 0;
  /*! \brief That dot multiplies unsigned by signed bytes (vpdpbusd, Arm i8mm's usdot); without it
   * only signed by signed (Arm sdot), so the kernel reads the unsigned data flipped to signed. */
  bool int8_dot_u8s8 = false;
  /*! \brief Widest register of the u8 x s8 multiply that sums pairs of products saturated to int16
   * (x86 vpmaddubsw): 512 with AVX-512BW, 256 with AVX2, else 0 (te::DotU8S8Pairs). */
  int int8_pair_bits = 0;
  /*! \brief Widest register on which an s8 x s8 dot is made of widening byte multiplies and
   * pairwise widening adds (NEON smull + sadalp: four instructions per 16 products, exact for any
   * bytes): 128 on NEON targets without a dot instruction (Cortex-A53, A72, ARMv7), else 0. */
  int int8_widening_bits = 0;
  /*! \brief Pointer size in bits (32 on armv7). */
  int pointer_bits = 64;

  /*! \brief Parses a target string; throws std::runtime_error listing the valid forms. */
  static Target Parse(const std::string& spec);
  /*! \brief The machine emberc runs on (triple, CPU name and features from LLVM). */
  static Target Host();
  /*! \brief The canonical string form. */
  std::string str() const;
};

}  // namespace ember::compiler

#endif  // EMBER_COMPILER_TARGET_H_
