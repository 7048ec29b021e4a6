// Peak FP32 throughput of this CPU: independent multiply-add chains in every vector ISA the CPU
// runs (chosen when compiling, by architecture, and when running, by CPU features), reported as
// the GFLOP/s counter (an FMA counts as 2 FLOPs per lane). The fastest threads:1 line is the
// single-core peak that bench/conv_gflops.py compares the convolution kernels against.
//
//   build/bin/bench_peak                          # each ISA at 1 thread and one thread per CPU
//   build/bin/bench_peak --benchmark_format=json  # what conv_gflops.py reads
//
// Each kernel keeps its accumulators in registers for the whole loop (inline asm on x86-64, a
// register-operand barrier around the NEON intrinsics on ARM), enough of them to cover the FMA
// latency on two pipes: `objdump -d --no-show-raw-insn -C build/bin/bench_peak` shows inner loops
// made only of FMAs and the loop counter, no loads, stores or spills.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#if defined(__aarch64__) || defined(__arm__)
#define EMBER_PEAK_NEON 1
#include <arm_neon.h>
#endif
#if defined(__arm__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_NEON
#define HWCAP_NEON (1 << 12)
#endif
#ifndef HWCAP_VFPv4
#define HWCAP_VFPv4 (1 << 16)
#endif
#endif

namespace {

/*! \brief One throughput kernel: run(iters) executes iters blocks of flops_per_iter FLOPs. */
struct Kernel {
  const char* isa;  // benchmark name part and label
  double flops_per_iter;
  void (*run)(int64_t iters);
};

// Multiplicands: acc += kA * kB stays far from overflow and from denormals for any run length.
alignas(64) const float kA[1] = {1.0f};
alignas(64) const float kB[1] = {1.0e-7f};

#if defined(__x86_64__)

#define EMBER_FMA_ZMM(i) "vfmadd231ps %%zmm30, %%zmm31, %%zmm" #i "\n\t"
#define EMBER_FMA_YMM(i) "vfmadd231ps %%ymm14, %%ymm15, %%ymm" #i "\n\t"
#define EMBER_ZERO_ZMM(i) "vpxord %%zmm" #i ", %%zmm" #i ", %%zmm" #i "\n\t"
#define EMBER_ZERO_XMM(i) "vxorps %%xmm" #i ", %%xmm" #i ", %%xmm" #i "\n\t"

// 16 zmm accumulators x 16 lanes: 512 FLOPs per iteration.
__attribute__((target("avx512f"))) void FmaAvx512(int64_t iters) {
  asm volatile(
      "vbroadcastss %[a], %%zmm30\n\t"
      "vbroadcastss %[b], %%zmm31\n\t"                                         //
      EMBER_ZERO_ZMM(0) EMBER_ZERO_ZMM(1) EMBER_ZERO_ZMM(2) EMBER_ZERO_ZMM(3)  //
      EMBER_ZERO_ZMM(4) EMBER_ZERO_ZMM(5) EMBER_ZERO_ZMM(6) EMBER_ZERO_ZMM(7)  //
      EMBER_ZERO_ZMM(8) EMBER_ZERO_ZMM(9) EMBER_ZERO_ZMM(10) EMBER_ZERO_ZMM(11) EMBER_ZERO_ZMM(12)
          EMBER_ZERO_ZMM(13) EMBER_ZERO_ZMM(14) EMBER_ZERO_ZMM(15)  //
      ".p2align 5\n"
      "1:\n\t"                                                             //
      EMBER_FMA_ZMM(0) EMBER_FMA_ZMM(1) EMBER_FMA_ZMM(2) EMBER_FMA_ZMM(3)  //
      EMBER_FMA_ZMM(4) EMBER_FMA_ZMM(5) EMBER_FMA_ZMM(6) EMBER_FMA_ZMM(7)  //
      EMBER_FMA_ZMM(8) EMBER_FMA_ZMM(9) EMBER_FMA_ZMM(10) EMBER_FMA_ZMM(11) EMBER_FMA_ZMM(12)
          EMBER_FMA_ZMM(13) EMBER_FMA_ZMM(14) EMBER_FMA_ZMM(15)  //
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : [n] "+r"(iters)
      : [a] "m"(kA[0]), [b] "m"(kB[0])
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm30", "xmm31");
}

// 12 ymm accumulators x 8 lanes: 192 FLOPs per iteration (4-cycle latency x 2 pipes needs 8).
__attribute__((target("avx2,fma"))) void FmaAvx2(int64_t iters) {
  asm volatile(
      "vbroadcastss %[a], %%ymm14\n\t"
      "vbroadcastss %[b], %%ymm15\n\t"                                           //
      EMBER_ZERO_XMM(0) EMBER_ZERO_XMM(1) EMBER_ZERO_XMM(2) EMBER_ZERO_XMM(3)    //
      EMBER_ZERO_XMM(4) EMBER_ZERO_XMM(5) EMBER_ZERO_XMM(6) EMBER_ZERO_XMM(7)    //
      EMBER_ZERO_XMM(8) EMBER_ZERO_XMM(9) EMBER_ZERO_XMM(10) EMBER_ZERO_XMM(11)  //
      ".p2align 5\n"
      "1:\n\t"                                                               //
      EMBER_FMA_YMM(0) EMBER_FMA_YMM(1) EMBER_FMA_YMM(2) EMBER_FMA_YMM(3)    //
      EMBER_FMA_YMM(4) EMBER_FMA_YMM(5) EMBER_FMA_YMM(6) EMBER_FMA_YMM(7)    //
      EMBER_FMA_YMM(8) EMBER_FMA_YMM(9) EMBER_FMA_YMM(10) EMBER_FMA_YMM(11)  //
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : [n] "+r"(iters)
      : [a] "m"(kA[0]), [b] "m"(kB[0])
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm10", "xmm11", "xmm14", "xmm15");
}

// SSE has no FMA: 6 mulps chains and 6 addps chains x 4 lanes, 48 FLOPs per iteration.
void MulAddSse(int64_t iters) {
  asm volatile(
      "movss %[a], %%xmm14\n\t"
      "shufps $0, %%xmm14, %%xmm14\n\t"
      "movss %[b], %%xmm15\n\t"
      "shufps $0, %%xmm15, %%xmm15\n\t"
      "movaps %%xmm14, %%xmm0\n\t"
      "movaps %%xmm14, %%xmm1\n\t"
      "movaps %%xmm14, %%xmm2\n\t"
      "movaps %%xmm14, %%xmm3\n\t"
      "movaps %%xmm14, %%xmm4\n\t"
      "movaps %%xmm14, %%xmm5\n\t"
      "xorps %%xmm6, %%xmm6\n\t"
      "xorps %%xmm7, %%xmm7\n\t"
      "xorps %%xmm8, %%xmm8\n\t"
      "xorps %%xmm9, %%xmm9\n\t"
      "xorps %%xmm10, %%xmm10\n\t"
      "xorps %%xmm11, %%xmm11\n\t"
      ".p2align 5\n"
      "1:\n\t"
      "mulps %%xmm14, %%xmm0\n\t"
      "addps %%xmm15, %%xmm6\n\t"
      "mulps %%xmm14, %%xmm1\n\t"
      "addps %%xmm15, %%xmm7\n\t"
      "mulps %%xmm14, %%xmm2\n\t"
      "addps %%xmm15, %%xmm8\n\t"
      "mulps %%xmm14, %%xmm3\n\t"
      "addps %%xmm15, %%xmm9\n\t"
      "mulps %%xmm14, %%xmm4\n\t"
      "addps %%xmm15, %%xmm10\n\t"
      "mulps %%xmm14, %%xmm5\n\t"
      "addps %%xmm15, %%xmm11\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      : [n] "+r"(iters)
      : [a] "m"(kA[0]), [b] "m"(kB[0])
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm10", "xmm11", "xmm14", "xmm15");
}

#undef EMBER_FMA_ZMM
#undef EMBER_FMA_YMM
#undef EMBER_ZERO_ZMM
#undef EMBER_ZERO_XMM

#endif  // __x86_64__

#if defined(EMBER_PEAK_NEON)

// Named accumulators (an array would live on the stack). The empty asm names every accumulator as
// a register operand it may change: the compiler keeps them all in vector registers, cannot merge
// the (otherwise identical) chains and emits no loads or stores inside the loop. The sum at the
// end keeps the results alive.
#define EMBER_NEON_STEP4(op, x, y, z, w) \
  x = op(x, a, b);                       \
  y = op(y, a, b);                       \
  z = op(z, a, b);                       \
  w = op(w, a, b)
#define EMBER_NEON_KERNEL12(name, op, attr)                                                   \
  attr void name(int64_t iters) {                                                             \
    float32x4_t a = vdupq_n_f32(kA[0]), b = vdupq_n_f32(kB[0]);                               \
    float32x4_t c0 = vdupq_n_f32(0.0f), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, \
                c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;                                \
    for (int64_t i = 0; i < iters; ++i) {                                                     \
      EMBER_NEON_STEP4(op, c0, c1, c2, c3);                                                   \
      EMBER_NEON_STEP4(op, c4, c5, c6, c7);                                                   \
      EMBER_NEON_STEP4(op, c8, c9, c10, c11);                                                 \
      asm volatile(""                                                                         \
                   : "+w"(c0), "+w"(c1), "+w"(c2), "+w"(c3), "+w"(c4), "+w"(c5), "+w"(c6),    \
                     "+w"(c7), "+w"(c8), "+w"(c9), "+w"(c10), "+w"(c11), "+w"(a), "+w"(b));   \
    }                                                                                         \
    float32x4_t s = vaddq_f32(vaddq_f32(vaddq_f32(c0, c1), vaddq_f32(c2, c3)),                \
                              vaddq_f32(vaddq_f32(c4, c5), vaddq_f32(c6, c7)));               \
    s = vaddq_f32(s, vaddq_f32(vaddq_f32(c8, c9), vaddq_f32(c10, c11)));                      \
    benchmark::DoNotOptimize(vgetq_lane_f32(s, 0));                                           \
  }

#if defined(__aarch64__)
// 16 accumulators x 4 lanes: 128 FLOPs per iteration (32 vector registers; 2 hold a and b).
void FmaNeon(int64_t iters) {
  float32x4_t a = vdupq_n_f32(kA[0]), b = vdupq_n_f32(kB[0]);
  float32x4_t c0 = vdupq_n_f32(0.0f), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0,
              c8 = c0, c9 = c0, c10 = c0, c11 = c0, c12 = c0, c13 = c0, c14 = c0, c15 = c0;
  for (int64_t i = 0; i < iters; ++i) {
    EMBER_NEON_STEP4(vfmaq_f32, c0, c1, c2, c3);
    EMBER_NEON_STEP4(vfmaq_f32, c4, c5, c6, c7);
    EMBER_NEON_STEP4(vfmaq_f32, c8, c9, c10, c11);
    EMBER_NEON_STEP4(vfmaq_f32, c12, c13, c14, c15);
    // Two statements: an asm takes at most 30 operands and "+w" counts twice.
    asm volatile(""
                 : "+w"(c0), "+w"(c1), "+w"(c2), "+w"(c3), "+w"(c4), "+w"(c5), "+w"(c6), "+w"(c7),
                   "+w"(a), "+w"(b));
    asm volatile(""
                 : "+w"(c8), "+w"(c9), "+w"(c10), "+w"(c11), "+w"(c12), "+w"(c13), "+w"(c14),
                   "+w"(c15));
  }
  float32x4_t s = vaddq_f32(vaddq_f32(vaddq_f32(c0, c1), vaddq_f32(c2, c3)),
                            vaddq_f32(vaddq_f32(c4, c5), vaddq_f32(c6, c7)));
  float32x4_t t = vaddq_f32(vaddq_f32(vaddq_f32(c8, c9), vaddq_f32(c10, c11)),
                            vaddq_f32(vaddq_f32(c12, c13), vaddq_f32(c14, c15)));
  benchmark::DoNotOptimize(vgetq_lane_f32(vaddq_f32(s, t), 0));
}
constexpr double kNeonFmaFlops = 16 * 4 * 2;
#else
// armv7 has 16 q registers: 12 accumulators x 4 lanes plus a and b, 96 FLOPs per iteration.
// vfmaq_f32 needs VFPv4 (Cortex-A7/A15 and later); older cores get vmlaq_f32 (not fused, the
// same count of FLOPs). The target attributes let a default (VFPv3-D16) armhf build carry both.
EMBER_NEON_KERNEL12(FmaNeon, vfmaq_f32, __attribute__((target("fpu=neon-vfpv4"))))
EMBER_NEON_KERNEL12(MlaNeon, vmlaq_f32, __attribute__((target("fpu=neon"))))
constexpr double kNeonFmaFlops = 12 * 4 * 2;
#endif
#undef EMBER_NEON_KERNEL12
#undef EMBER_NEON_STEP4

#endif  // EMBER_PEAK_NEON

// Any CPU: 8 multiply-add chains in plain C++, 16 FLOPs per iteration. a and b are read through
// volatile so that x * 1 + b cannot be simplified to x + b; the compiler may still vectorize or
// fuse the chains, which does not change the FLOP count.
void MulAddScalar(int64_t iters) {
  volatile float va = kA[0], vb = kB[0];
  const float a = va, b = vb;
  float c0 = 0, c1 = 1, c2 = 2, c3 = 3, c4 = 4, c5 = 5, c6 = 6, c7 = 7;
  for (int64_t i = 0; i < iters; ++i) {
    c0 = c0 * a + b;
    c1 = c1 * a + b;
    c2 = c2 * a + b;
    c3 = c3 * a + b;
    c4 = c4 * a + b;
    c5 = c5 * a + b;
    c6 = c6 * a + b;
    c7 = c7 * a + b;
  }
  benchmark::DoNotOptimize(((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7)));
}

/*! \brief The kernels this CPU can run, widest first. */
std::vector<Kernel> SupportedKernels() {
  std::vector<Kernel> k;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) k.push_back({"avx512f", 16 * 16 * 2, FmaAvx512});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    k.push_back({"avx2_fma", 12 * 8 * 2, FmaAvx2});
  }
  k.push_back({"sse", 12 * 4, MulAddSse});
#elif defined(__aarch64__)
  k.push_back({"neon_fma", kNeonFmaFlops, FmaNeon});
#elif defined(EMBER_PEAK_NEON)
#if defined(__linux__)
  unsigned long hw = getauxval(AT_HWCAP);
  bool neon = (hw & HWCAP_NEON) != 0, vfpv4 = (hw & HWCAP_VFPv4) != 0;
#else
  bool neon = true, vfpv4 = false;
#endif
  if (neon && vfpv4) k.push_back({"neon_fma", kNeonFmaFlops, FmaNeon});
  if (neon) k.push_back({"neon_mla", kNeonFmaFlops, MlaNeon});
#endif
  k.push_back({"scalar", 8 * 2, MulAddScalar});
  return k;
}

void BM_PeakFp32(benchmark::State& state, Kernel k) {
  // About 0.1-1 ms per call at tens of GFLOP/s: timer overhead is negligible, and the loop count
  // is far below anything that could overflow the accumulators.
  const int64_t iters = int64_t{1} << 16;
  for (auto _ : state) k.run(iters);
  double flops =
      k.flops_per_iter * static_cast<double>(iters) * static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsRate);
  state.counters["flops_per_iter"] =
      benchmark::Counter(k.flops_per_iter, benchmark::Counter::kAvgThreads);
  state.SetLabel(k.isa);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  // Threads(1), timed in CPU time, is the single-core peak: a busy machine takes the core away
  // for a while but does not slow it down while it runs. ThreadPerCpu() runs one copy on every
  // CPU and is timed in wall-clock time: GFLOP/s is then the sum over the threads and is only the
  // machine's peak when nothing else runs.
  for (const Kernel& k : SupportedKernels()) {
    std::string name = std::string("BM_PeakFp32/") + k.isa;
    benchmark::RegisterBenchmark(name.c_str(), BM_PeakFp32, k)->Threads(1);
    benchmark::RegisterBenchmark(name.c_str(), BM_PeakFp32, k)->ThreadPerCpu()->UseRealTime();
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
