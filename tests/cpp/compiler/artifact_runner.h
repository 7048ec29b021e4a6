// Runs an artifact directory through the runtime's graph executor for compiler tests whose
// translation units include the compiler's te headers, which cannot share one with the runtime's
// graph_executor.h (both declare operator== on DLDataType).
#ifndef EMBER_TESTS_CPP_COMPILER_ARTIFACT_RUNNER_H_
#define EMBER_TESTS_CPP_COMPILER_ARTIFACT_RUNNER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ember::compiler::testing {

struct FloatInput {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/*! \brief Loads `dir`, sets each float32 input by name, runs once and returns every output's
 * float32 values in output order. */
std::vector<std::vector<float>> RunArtifact(const std::string& dir,
                                            const std::vector<FloatInput>& inputs);

}  // namespace ember::compiler::testing

#endif  // EMBER_TESTS_CPP_COMPILER_ARTIFACT_RUNNER_H_
