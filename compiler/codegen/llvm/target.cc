// Target strings: "llvm [-mtriple=T] [-mcpu=C] [-mattr=A]".
#include "ember/compiler/target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <memory>
#include <sstream>
#include <stdexcept>

namespace ember::compiler {

namespace {

constexpr const char* kValidForms =
    "valid forms: \"llvm\" (host), \"llvm -mtriple=aarch64-linux-gnu\", "
    "\"llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon\", \"llvm -mtriple=x86_64-linux-gnu\", "
    "each optionally with -mcpu=NAME and -mattr=+feat,-feat";

void InitLLVMTargets() {
  static bool done = [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
    return true;
  }();
  (void)done;
}

bool HasFeature(const std::string& features, const std::string& f) {
  std::string needle = "+" + f;
  size_t pos = 0;
  while ((pos = features.find(needle, pos)) != std::string::npos) {
    size_t end = pos + needle.size();
    if (end == features.size() || features[end] == ',') return true;
    pos = end;
  }
  return false;
}

// LLVM's view of the target's CPU with its -mattr applied; null without a CPU name.
std::unique_ptr<llvm::MCSubtargetInfo> CpuSubtarget(const Target& t) {
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (target == nullptr || t.cpu.empty()) return nullptr;
  return std::unique_ptr<llvm::MCSubtargetInfo>(
      target->createMCSubtargetInfo(t.triple, t.cpu, t.features));
}

void FillDerived(Target* t) {
  llvm::Triple triple(t->triple);
  t->pointer_bits = triple.isArch64Bit() ? 64 : 32;
  t->vector_bits = 128;
  t->int8_dot_bits = 0;
  t->int8_pair_bits = 0;
  t->int8_dot_u8s8 = false;
  t->int8_widening_bits = 0;
  if (triple.isARM() || triple.isThumb()) {
    if (HasFeature(t->features, "neon")) t->int8_widening_bits = 128;
    return;
  }
  if (!triple.isX86() && !triple.isAArch64()) return;
  // A feature named in -mattr, or implied by the CPU (-mcpu=haswell has AVX2 without saying so,
  // -mcpu=cortex-a76 dotprod) unless -mattr turned it off.
  const std::unique_ptr<llvm::MCSubtargetInfo> cpu = CpuSubtarget(*t);
  auto has = [&](const char* f) {
    return HasFeature(t->features, f) ||
           (cpu != nullptr && cpu->checkFeatures(std::string("+") + f));
  };
  if (triple.isAArch64()) {
    // ARMv8.2 dotprod: sdot (s8 x s8) on 128-bit registers; i8mm adds usdot (u8 x s8).
    if (has("dotprod") || has("i8mm")) t->int8_dot_bits = 128;
    t->int8_dot_u8s8 = has("i8mm");
    if (t->int8_dot_bits == 0) t->int8_widening_bits = 128;  // NEON is part of ARMv8-A
    return;
  }
  if (has("avx512f")) {
    t->vector_bits = 512;
  } else if (has("avx2") || has("avx")) {
    t->vector_bits = 256;
  }
  if (t->vector_bits == 512 && has("avx512vnni")) {
    t->int8_dot_bits = 512;
  } else if (t->vector_bits >= 256 && has("avxvnni")) {
    t->int8_dot_bits = 256;
  }
  t->int8_dot_u8s8 = t->int8_dot_bits > 0;  // vpdpbusd
  if (t->vector_bits == 512 && has("avx512bw")) {
    t->int8_pair_bits = 512;
  } else if (has("avx2")) {
    t->int8_pair_bits = 256;
  }
}

}  // namespace

Target Target::Host() {
  InitLLVMTargets();
  Target t;
  t.triple = llvm::sys::getDefaultTargetTriple();
  t.cpu = llvm::sys::getHostCPUName().str();
  std::string feats;
  for (auto& kv : llvm::sys::getHostCPUFeatures()) {
    if (!feats.empty()) feats += ",";
    feats += (kv.second ? "+" : "-") + kv.first().str();
  }
  t.features = feats;
  t.is_host = true;
  FillDerived(&t);
  return t;
}

Target Target::Parse(const std::string& spec) {
  InitLLVMTargets();
  std::istringstream is(spec);
  std::string word;
  std::vector<std::string> words;
  while (is >> word) words.push_back(word);
  if (words.empty() || words[0] != "llvm") {
    throw std::runtime_error("bad target \"" + spec + "\": it must start with \"llvm\"; " +
                             kValidForms);
  }
  std::string triple, cpu, attrs;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    auto take = [&](const char* key, std::string* out) {
      std::string k = std::string(key) + "=";
      if (w.rfind(k, 0) != 0) return false;
      *out = w.substr(k.size());
      if (out->empty()) {
        throw std::runtime_error("bad target \"" + spec + "\": " + key + " needs a value; " +
                                 kValidForms);
      }
      return true;
    };
    if (take("-mtriple", &triple) || take("-mcpu", &cpu) || take("-mattr", &attrs)) continue;
    throw std::runtime_error("bad target \"" + spec + "\": unknown option \"" + w + "\"; " +
                             kValidForms);
  }
  Target t;
  if (triple.empty()) {
    t = Host();
    if (!cpu.empty()) {
      t.cpu = cpu;
      t.features.clear();  // an explicit CPU means its own feature set
    }
    if (!attrs.empty()) t.features = t.features.empty() ? attrs : t.features + "," + attrs;
    t.is_host = cpu.empty() && attrs.empty();
    FillDerived(&t);
    return t;
  }
  // Normalized, so that the short forms (armv7a-linux-gnueabihf) get their OS and environment.
  llvm::Triple tr(llvm::Triple::normalize(triple));
  std::string err;
  if (llvm::TargetRegistry::lookupTarget(tr.str(), err) == nullptr ||
      tr.getArch() == llvm::Triple::UnknownArch) {
    throw std::runtime_error("bad target \"" + spec + "\": unknown triple \"" + triple + "\" (" +
                             err + "); " + kValidForms);
  }
  if (!(tr.isX86() || tr.isAArch64() || tr.isARM())) {
    throw std::runtime_error("bad target \"" + spec + "\": architecture of \"" + triple +
                             "\" is not supported (x86-64, aarch64, armv7); " + kValidForms);
  }
  t.triple = tr.str();
  t.cpu = cpu.empty() ? "generic" : cpu;
  t.features = attrs;
  if (tr.isARM() && t.features.empty()) t.features = "+neon";
  if (tr.isARM() && tr.getEnvironment() != llvm::Triple::GNUEABIHF &&
      tr.getEnvironment() != llvm::Triple::EABIHF) {
    throw std::runtime_error("bad target \"" + spec +
                             "\": 32-bit ARM needs the hard-float ABI (e.g. "
                             "armv7a-linux-gnueabihf); " +
                             kValidForms);
  }
  t.is_host = false;
  if (t.triple == llvm::sys::getDefaultTargetTriple() && cpu.empty() && attrs.empty()) {
    t = Host();
  }
  FillDerived(&t);
  if (tr.isAArch64() || tr.isARM()) t.vector_bits = 128;
  return t;
}

std::string Target::str() const {
  std::string s = "llvm -mtriple=" + triple;
  if (!cpu.empty()) s += " -mcpu=" + cpu;
  if (!features.empty() && !is_host) s += " -mattr=" + features;
  return s;
}

}  // namespace ember::compiler
