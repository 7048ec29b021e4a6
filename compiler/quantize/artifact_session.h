// One artifact loaded in-process by the runtime, for the quantizer's calibration and report runs.
// Its own translation unit: the runtime's graph_executor.h and the compiler's IR headers cannot
// share one (both declare operator== on DLDataType). Errors are std::runtime_error.
#ifndef EMBER_COMPILER_QUANTIZE_ARTIFACT_SESSION_H_
#define EMBER_COMPILER_QUANTIZE_ARTIFACT_SESSION_H_

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

class ArtifactSession {
 public:
  /*! \brief Loads the three-file artifact in \p dir and makes one executor on the CPU. */
  explicit ArtifactSession(const std::string& dir);
  ~ArtifactSession();
  ArtifactSession(const ArtifactSession&) = delete;
  ArtifactSession& operator=(const ArtifactSession&) = delete;

  void SetInput(const std::string& name, DLDataType dtype, const std::vector<int64_t>& shape,
                const std::vector<uint8_t>& bytes);
  void Run();
  int NumOutputs() const;
  /*! \brief Output \p i's float32 values (throws for another dtype). */
  std::vector<float> Output(int i) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_QUANTIZE_ARTIFACT_SESSION_H_
