/*!
 * \file ember/compiler/frontend.h
 * \brief ONNX import: model file -> canonical graph IR with static shapes.
 */
#ifndef EMBER_COMPILER_FRONTEND_H_
#define EMBER_COMPILER_FRONTEND_H_

#include <ember/compiler/ir/graph.h>
#include <ember/compiler/strategy.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*! \brief Lowest and highest ai.onnx opset imported without the version converter. */
constexpr int64_t kMinImportOpset = 7;
constexpr int64_t kMaxImportOpset = 26;
/*! \brief Opset older models are converted to. */
constexpr int64_t kConvertTargetOpset = 13;

struct ImportOptions {
  /*! \brief Static shapes for inputs with dynamic dims (--input-shape NAME=d0,d1,...). */
  std::map<std::string, std::vector<int64_t>> input_shapes;
  /*! \brief Inputs fixed at compile time (--bind NAME=VALUE): NAME -> comma-separated values,
   *  one per element of the input, or one for all. The input becomes a constant (folding takes
   *  an If on it) and leaves the artifact's inputs. */
  std::map<std::string, std::string> bindings;
  /*! \brief When set, notes for `emberc -v` (QDQ patterns fused into integer ops). */
  std::ostream* log = nullptr;
  /*! \brief The target's kernel strategy, which canonicalization asks where a form exists only
   *  for some kernels (see Canonicalize); null: target-independent forms. */
  const KernelStrategy* strategy = nullptr;
};

/*!
 * \brief Loads, checks, (converts,) shape-infers and imports an ONNX file, then canonicalizes it
 * (constant inputs become attributes, shape math is folded; see ir/canonical_ops.h).
 * Throws CompileError (UnsupportedError for unsupported ops) naming file, node, op and opset.
 */
Graph ImportOnnxFile(const std::string& path, const ImportOptions& options);
/*! \brief Same, from serialized ModelProto bytes; `source` names it in errors. */
Graph ImportOnnxBytes(const std::string& bytes, const std::string& source,
                      const ImportOptions& options);

/*! \brief Parses "NAME=VALUE" (--bind); throws CompileError on bad syntax. */
std::pair<std::string, std::string> ParseBinding(const std::string& spec);

/*! \brief Parses "NAME=1,3,224,224"; throws CompileError on bad syntax. */
std::pair<std::string, std::vector<int64_t>> ParseInputShape(const std::string& spec);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_FRONTEND_H_
