/*!
 * \file ember/compiler/codegen.h
 * \brief Kernel library build: fused groups -> LLVM -> lib.so (or a system-lib object).
 */
#ifndef EMBER_COMPILER_CODEGEN_H_
#define EMBER_COMPILER_CODEGEN_H_

#include <set>
#include <string>
#include <vector>

#include "ember/compiler/target.h"

namespace ember::compiler {

struct FusedGroup;
namespace autotune {
class TuningLog;
}  // namespace autotune
namespace lower {
class GroupScheduler;
}  // namespace lower

struct BuildOptions {
  /*! \brief Emit a static-link object whose initialiser registers each kernel through
   * TVMBackendRegisterSystemLibSymbol, instead of a shared library. */
  bool system_lib = false;
  int opt_level = 3;     // 0..3, LLVM pass pipeline level
  std::string dump_dir;  // if set: writes <group>.loop.txt, module .ll there
  bool verbose = false;
  /*! \brief Threads that optimise and emit kernels (--jobs); 0: one per hardware thread. The
   * library's bytes do not depend on it. */
  int jobs = 0;
  /*! \brief Tuned schedule parameters to use (compiler/autotune/tuning_log.h); may be null. */
  const autotune::TuningLog* tuning_log = nullptr;
  /*! \brief The hand-written kernels groups are offered to (the driver's strategy); null: the
   * default schedule for every group. */
  const lower::GroupScheduler* scheduler = nullptr;
  /*! \brief The ld.lld that links the kernels (the driver takes $EMBER_LLD); empty: the one
   * CMake found when the compiler was built. */
  std::string linker;
  /*! \brief The groups (by func_name) whose float arithmetic runs exactly as written, each
   * operation rounded (no reassociation, no fused multiply-add, libm's exp): those whose values
   * reach a rounding at run time, where one ulp moves a quantized value by a whole step (the
   * driver decides; see Compile). */
  std::set<std::string> exact_float_groups;
};

/*!
 * \brief Compiles every group into one exported packed function named group.func_name, and
 * writes the library to out_path (lib.so, or an object/archive when opts.system_lib).
 * Throws std::runtime_error naming the group and node on unsupported ops or link failures.
 */
/*! \brief jobs, or the number of hardware threads when jobs is 0. */
int ResolveJobs(int jobs);

void BuildKernelLibrary(const std::vector<FusedGroup>& groups, const Target& target,
                        const std::string& out_path, const BuildOptions& opts);

}  // namespace ember::compiler

#endif  // EMBER_COMPILER_CODEGEN_H_
