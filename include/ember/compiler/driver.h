/*!
 * \file ember/compiler/driver.h
 * \brief The whole pipeline: ONNX file -> OUTDIR/{graph.json, lib.so, params.bin}.
 */
#ifndef EMBER_COMPILER_DRIVER_H_
#define EMBER_COMPILER_DRIVER_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

struct CompileOptions {
  std::string model_path;
  std::string out_dir;
  std::string target;  // "" or "llvm ..." ; empty means the host
  int opt_level = 3;
  std::map<std::string, std::vector<int64_t>> input_shapes;
  bool system_lib = false;
  std::string dump_dir;  // --dump-ir: graph after each pass, as .txt and .dot
  bool verbose = false;  // -v: pass timings and memory figures on `log`
  std::ostream* log = nullptr;
};

struct CompileStats {
  int num_nodes = 0;    // after passes
  int num_kernels = 0;  // fused groups
  int64_t activation_bytes = 0;
  int64_t activation_bytes_no_reuse = 0;
  int64_t params_bytes = 0;
  double total_ms = 0;
};

/*! \brief Name of the library file for the options (lib.so, or lib.o with system_lib). */
std::string LibraryFileName(bool system_lib);

/*! \brief Runs the pipeline; throws CompileError (or std::runtime_error from code generation). */
CompileStats Compile(const CompileOptions& options);

/*! \brief Parses "name=1,3;other=2" (';'-separated --input-shape specs, may be empty). */
std::map<std::string, std::vector<int64_t>> ParseInputShapeList(const std::string& specs);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_DRIVER_H_
