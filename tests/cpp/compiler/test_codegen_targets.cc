// Target parsing, cross-target libraries (ELF machine of the output), and --system-lib objects.
#include <ember/compiler/target.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "kernel_test_util.h"

namespace ember::compiler {
namespace {

using testing::KernelGraph;

constexpr uint16_t kEMX86_64 = 62;
constexpr uint16_t kEMAArch64 = 183;
constexpr uint16_t kEMArm = 40;

struct ElfInfo {
  bool ok = false;
  int elf_class = 0;  // 1 = 32-bit, 2 = 64-bit
  uint16_t type = 0;  // 1 = REL, 3 = DYN
  uint16_t machine = 0;
  uint32_t flags = 0;  // ARM: EF_ARM_ABI_FLOAT_HARD = 0x400
};

ElfInfo ReadElf(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> h(64);
  f.read(h.data(), 64);
  ElfInfo e;
  if (f.gcount() < 52 || std::memcmp(h.data(),
                                     "\x7f"
                                     "ELF",
                                     4) != 0)
    return e;
  e.ok = true;
  e.elf_class = h[4];
  std::memcpy(&e.type, h.data() + 16, 2);
  std::memcpy(&e.machine, h.data() + 18, 2);
  std::memcpy(&e.flags, h.data() + (e.elf_class == 1 ? 36 : 48), 4);
  return e;
}

KernelGraph SmallGraph() {
  KernelGraph kg;
  int a = kg.Input("a", {4, 64});
  int b = kg.Input("b", {64});
  int s = kg.Add("Add", {a, b}, {TensorType{{4, 64}, kFloat32}})[0];
  kg.Add("Sigmoid", {s}, {TensorType{{4, 64}, kFloat32}});
  return kg;
}

std::string TempPath(const std::string& name) {
  return "/tmp/ember_codegen_target_" + std::to_string(getpid()) + "_" + name;
}

TEST(Target, ParsesValidFormsAndRejectsBadOnesListingValidForms) {
  Target host = Target::Parse("llvm");
  EXPECT_TRUE(host.is_host);
  EXPECT_FALSE(host.triple.empty());
  Target arm = Target::Parse("llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon");
  EXPECT_EQ(arm.pointer_bits, 32);
  EXPECT_EQ(arm.features, "+neon");
  Target a64 = Target::Parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
  EXPECT_EQ(a64.cpu, "cortex-a72");
  EXPECT_EQ(a64.pointer_bits, 64);
  for (const char* bad : {"cuda", "llvm -mtriple=", "llvm -mfoo=bar", "llvm -mtriple=nonsense-xyz",
                          "llvm -mtriple=armv7a-linux-gnueabi"}) {
    try {
      Target::Parse(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("valid forms"), std::string::npos) << e.what();
    }
  }
}

// The schedules pick their vector width from vector_bits: a CPU name implies its features.
TEST(Target, VectorWidthFollowsTheCpuAndTheFeatures) {
  struct Case {
    const char* spec;
    int bits;
  };
  for (const Case& c :
       {Case{"llvm -mtriple=x86_64-linux-gnu", 128}, Case{"llvm -mcpu=x86-64", 128},
        Case{"llvm -mcpu=haswell", 256}, Case{"llvm -mtriple=x86_64-linux-gnu -mcpu=haswell", 256},
        Case{"llvm -mcpu=skylake-avx512", 512},
        Case{"llvm -mcpu=skylake-avx512 -mattr=-avx512f", 256},
        Case{"llvm -mcpu=x86-64 -mattr=+avx2", 256},
        Case{"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72", 128}}) {
    EXPECT_EQ(Target::Parse(c.spec).vector_bits, c.bits) << c.spec;
  }
}

// The 8-bit dot product the fastest int8 kernels use: named in -mattr, implied by the CPU or the
// architecture version (dotprod is part of ARMv8.4), and off where -mattr turns it off; NEON
// without it makes the dot from widening multiplies (x86 without it has vpmaddubsw instead).
TEST(Target, Int8DotFollowsTheCpuAndTheFeatures) {
  struct Case {
    const char* spec;
    int bits;
    bool u8s8;
    int widening_bits;
  };
  for (const Case& c :
       {Case{"llvm -mcpu=cascadelake", 512, true, 0},
        Case{"llvm -mcpu=skylake-avx512", 0, false, 0},
        Case{"llvm -mtriple=aarch64-linux-gnu", 0, false, 128},
        Case{"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72", 0, false, 128},
        Case{"llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod", 128, false, 0},
        Case{"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76", 128, false, 0},
        Case{"llvm -mtriple=aarch64-linux-gnu -mattr=+v8.4a", 128, false, 0},
        Case{"llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod,+i8mm", 128, true, 0},
        Case{"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76 -mattr=-dotprod", 0, false, 128},
        Case{"llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon", 0, false, 128},
        Case{"llvm -mtriple=armv7a-linux-gnueabihf -mattr=-neon", 0, false, 0}}) {
    const Target t = Target::Parse(c.spec);
    EXPECT_EQ(t.int8_dot_bits, c.bits) << c.spec;
    EXPECT_EQ(t.int8_dot_u8s8, c.u8s8) << c.spec;
    EXPECT_EQ(t.int8_widening_bits, c.widening_bits) << c.spec;
  }
}

TEST(CodegenTargets, CrossLibrariesHaveTheTargetsElfMachine) {
  KernelGraph kg = SmallGraph();
  std::vector<FusedGroup> groups = {kg.Group("add_sigmoid", {kg.graph.nodes().back().outputs[0]})};
  struct Case {
    const char* spec;
    uint16_t machine;
    int elf_class;
  };
  for (Case c : {Case{"llvm -mtriple=aarch64-linux-gnu", kEMAArch64, 2},
                 Case{"llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon", kEMArm, 1},
                 Case{"llvm -mtriple=x86_64-linux-gnu", kEMX86_64, 2}}) {
    std::string out = TempPath("lib.so");
    BuildKernelLibrary(groups, Target::Parse(c.spec), out, BuildOptions());
    ElfInfo e = ReadElf(out);
    EXPECT_TRUE(e.ok) << c.spec;
    EXPECT_EQ(e.type, 3) << c.spec;  // ET_DYN
    EXPECT_EQ(e.machine, c.machine) << c.spec;
    EXPECT_EQ(e.elf_class, c.elf_class) << c.spec;
    if (c.machine == kEMArm) {
      EXPECT_TRUE(e.flags & 0x400) << "armv7 must use the hard-float ABI";
    }
    std::remove(out.c_str());
  }
}

TEST(CodegenTargets, SystemLibObjectRegistersItsFunctions) {
  KernelGraph kg = SmallGraph();
  std::vector<FusedGroup> groups = {kg.Group("syslib_fn", {kg.graph.nodes().back().outputs[0]})};
  BuildOptions opts;
  opts.system_lib = true;
  std::string out = TempPath("lib.o");
  BuildKernelLibrary(groups, Target::Host(), out, opts);
  ElfInfo e = ReadElf(out);
  EXPECT_TRUE(e.ok);
  EXPECT_EQ(e.type, 1);  // ET_REL
  std::ifstream f(out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("TVMBackendRegisterSystemLibSymbol"), std::string::npos);
  EXPECT_NE(bytes.find(".init_array"), std::string::npos);
  EXPECT_NE(bytes.find("syslib_fn"), std::string::npos);
  std::remove(out.c_str());
  // and as an archive
  std::string ar = TempPath("lib.a");
  BuildKernelLibrary(groups, Target::Host(), ar, opts);
  std::ifstream fa(ar, std::ios::binary);
  char magic[8] = {};
  fa.read(magic, 8);
  EXPECT_EQ(std::string(magic, 8), "!<arch>\n");
  std::remove(ar.c_str());
}

// The kernels' LLVM IR for `target`, before optimisation, of Clip(x, lo, hi).
std::string ClipIr(const char* target, double lo, double hi) {
  KernelGraph kg;
  int x = kg.Input("x", {4, 64});
  int y = kg.Add("Clip", {x}, {TensorType{{4, 64}, kFloat32}}, {{"min", lo}, {"max", hi}})[0];
  std::vector<FusedGroup> groups = {kg.Group("clip", {y})};
  BuildOptions opts;
  opts.dump_dir = TempPath("ir");
  std::filesystem::create_directories(opts.dump_dir);
  BuildKernelLibrary(groups, Target::Parse(target), TempPath("clip.so"), opts);
  std::ifstream f(opts.dump_dir + "/kernels.ll");
  std::string ir((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(opts.dump_dir);
  std::remove(TempPath("clip.so").c_str());
  return ir;
}

// Max/Min against a constant are one fmax/fmin on AArch64 where that is exactly the compare and
// select (NaN in x propagates; the zero whose sign the two differ on keeps the select), and the
// select everywhere else.
TEST(CodegenTargets, FloatMaxMinAgainstAConstantAreFmaxFminOnAArch64Only) {
  const char* a64 = "llvm -mtriple=aarch64-linux-gnu";
  std::string clip = ClipIr(a64, 0.0, 6.0);
  EXPECT_NE(clip.find("@llvm.maximum"), std::string::npos);
  EXPECT_NE(clip.find("@llvm.minimum"), std::string::npos);
  std::string zeros = ClipIr(a64, -0.0, 0.0);  // max(x, -0), min(x, +0)
  EXPECT_EQ(zeros.find("@llvm.maximum"), std::string::npos);
  EXPECT_EQ(zeros.find("@llvm.minimum"), std::string::npos);
  for (const char* other :
       {"llvm -mtriple=x86_64-linux-gnu", "llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon"}) {
    std::string ir = ClipIr(other, 0.0, 6.0);
    EXPECT_EQ(ir.find("@llvm.maximum"), std::string::npos) << other;
    EXPECT_NE(ir.find("fcmp"), std::string::npos) << other;
  }
}

TEST(CodegenTargets, UnsupportedOpNamesNodeAndOp) {
  KernelGraph kg;
  int a = kg.Input("a", {4});
  kg.Add("NoSuchOpForEmber", {a}, {TensorType{{4}, kFloat32}});
  std::vector<FusedGroup> groups = {kg.Group("bad", {kg.graph.nodes().back().outputs[0]})};
  try {
    BuildKernelLibrary(groups, Target::Host(), TempPath("bad.so"), BuildOptions());
    ADD_FAILURE() << "no error";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchOpForEmber"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember::compiler
