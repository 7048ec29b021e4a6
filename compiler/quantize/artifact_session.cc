// ArtifactSession (see artifact_session.h).
#include "quantize/artifact_session.h"

#include <ember/runtime/graph_executor.h>

#include <stdexcept>

namespace ember {
namespace compiler {

struct ArtifactSession::Impl {
  runtime::Module executor;
  runtime::PackedFunc set_input, run, get_output;
  int num_outputs = 0;
};

ArtifactSession::ArtifactSession(const std::string& dir) : impl_(std::make_unique<Impl>()) {
  using runtime::kCPU;
  impl_->executor = runtime::LoadArtifact(dir).GetFunction(runtime::kDefaultModuleName)(kCPU);
  impl_->set_input = impl_->executor.GetFunction("set_input");
  impl_->run = impl_->executor.GetFunction("run");
  impl_->get_output = impl_->executor.GetFunction("get_output");
  impl_->num_outputs = impl_->executor.GetFunction("get_num_outputs")();
}

ArtifactSession::~ArtifactSession() = default;

void ArtifactSession::SetInput(const std::string& name, DLDataType dtype,
                               const std::vector<int64_t>& shape,
                               const std::vector<uint8_t>& bytes) {
  runtime::NDArray a = runtime::NDArray::Empty(runtime::ShapeTuple(shape), dtype, runtime::kCPU);
  a.CopyFromBytes(bytes.data(), bytes.size());
  impl_->set_input(name, a);
}

void ArtifactSession::Run() { impl_->run(); }

int ArtifactSession::NumOutputs() const { return impl_->num_outputs; }

std::vector<float> ArtifactSession::Output(int i) const {
  runtime::NDArray y = impl_->get_output(i);
  if (y->dtype.code != kDLFloat || y->dtype.bits != 32 || y->dtype.lanes != 1) {
    throw std::runtime_error("output " + std::to_string(i) + " is " +
                             runtime::DLDataTypeToString(y->dtype) + ", not float32");
  }
  const float* p = static_cast<const float*>(y->data);
  return std::vector<float>(p, p + y.NumElements());
}

}  // namespace compiler
}  // namespace ember
