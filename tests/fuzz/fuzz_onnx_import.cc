// libFuzzer target: emberc's ONNX import path (parse, validate, check, convert, infer shapes) must
// refuse a bad model with a CompileError, never crash (inside libonnx included), hang or make a
// huge allocation. Seeds are small valid models, so mutations reach the attribute checks.
#include <ember/compiler/ir/tensor_type.h>
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>

#include "frontend/onnx/onnx_model_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (size > static_cast<size_t>(INT32_MAX)) return 0;
  if (!model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph()) return 0;
  try {
    ember::compiler::PrepareOnnxModel(&model, "fuzz.onnx", {});
  } catch (const ember::compiler::CompileError&) {
  }
  return 0;
}
