// Import's ONNX half; the order matters: shapes are static before the validator looks, and the
// validator runs before libonnx's checker, converter and shape inference see the model.
#include "frontend/onnx/onnx_model_check.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "frontend/onnx/onnx_bind_inputs.h"
#include "frontend/onnx/onnx_external_data.h"
#include "frontend/onnx/onnx_newer_opsets.h"
#include "frontend/onnx/onnx_node_order.h"
#include "frontend/onnx/onnx_validator.h"

namespace ember {
namespace compiler {
namespace {

// Fixes the input dims from --input-shape and checks that every remaining dim is static.
void ResolveInputShapes(onnx::ModelProto* m, const std::string& source,
                        const ImportOptions& options) {
  std::unordered_map<std::string, bool> is_init;
  for (const auto& t : m->graph().initializer()) is_init[t.name()] = true;
  std::vector<std::string> names;
  for (const auto& in : m->graph().input()) {
    if (!is_init.count(in.name())) names.push_back(in.name());
  }
  for (const auto& [name, shape] : options.input_shapes) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw CompileError("--input-shape: " + source + " has no input named '" + name +
                         "'; inputs are: " + list);
    }
  }
  for (auto& in : *m->mutable_graph()->mutable_input()) {
    if (is_init.count(in.name())) continue;
    if (!in.type().has_tensor_type()) {
      throw UnsupportedError(source + ": input '" + in.name() +
                             "' is not a tensor (sequence/optional/map inputs are not supported)");
    }
    auto* tt = in.mutable_type()->mutable_tensor_type();
    auto it = options.input_shapes.find(in.name());
    if (it != options.input_shapes.end()) {
      const auto& want = it->second;
      if (tt->has_shape() && tt->shape().dim_size() != static_cast<int>(want.size())) {
        throw CompileError("--input-shape " + in.name() + ": model input has rank " +
                           std::to_string(tt->shape().dim_size()) + ", got " +
                           std::to_string(want.size()) + " dims");
      }
      for (size_t i = 0; i < want.size(); ++i) {
        if (tt->has_shape() && tt->shape().dim(static_cast<int>(i)).has_dim_value() &&
            tt->shape().dim(static_cast<int>(i)).dim_value() != want[i]) {
          throw CompileError("--input-shape " + in.name() + ": dimension " + std::to_string(i) +
                             " is fixed to " +
                             std::to_string(tt->shape().dim(static_cast<int>(i)).dim_value()) +
                             " in the model, got " + std::to_string(want[i]));
        }
      }
      tt->clear_shape();
      for (int64_t d : want) tt->mutable_shape()->add_dim()->set_dim_value(d);
      continue;
    }
    if (!tt->has_shape()) {
      throw CompileError(source + ": input '" + in.name() +
                         "' has no shape (unknown rank); pass --input-shape " + in.name() +
                         "=d0,d1,...");
    }
    for (int i = 0; i < tt->shape().dim_size(); ++i) {
      const auto& dim = tt->shape().dim(i);
      if (!dim.has_dim_value() || dim.dim_value() < 0) {
        std::string sym = dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : "";
        throw CompileError(source + ": input '" + in.name() + "' dimension " + std::to_string(i) +
                           sym + " is dynamic; pass --input-shape " + in.name() + "=d0,d1,...");
      }
    }
  }
}

}  // namespace

onnx::ModelProto ParseOnnxModel(const std::string& bytes, const std::string& source) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    throw CompileError(source + ": not a valid ONNX model (protobuf parsing failed)");
  }
  if (!model.has_graph()) throw CompileError(source + ": not a valid ONNX model (no graph)");
  return model;
}

onnx::ModelProto ReadOnnxModelFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw CompileError(path + ": is a directory; give the model's .onnx file");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CompileError(path + ": cannot open file: " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  onnx::ModelProto model = ParseOnnxModel(ss.str(), path);
  // External data is read here, from the model's directory only, before libonnx sees the model.
  LoadExternalData(&model, std::filesystem::path(path).parent_path().string(), path);
  return model;
}

int64_t DefaultDomainOpset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  }
  return 1;
}

// A model that imports no ai.onnx opset holds only ops of other domains (ONNX's training
// optimizers, ai.onnx.preview.training): name one, rather than read its opset as 1 and fail to
// convert that.
void RefuseWithoutDefaultDomain(const onnx::ModelProto& m, const std::string& source) {
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") return;
  }
  std::string what = "it has no node";
  if (m.graph().node_size() > 0) {
    const onnx::NodeProto& n = m.graph().node(0);
    const std::string node = n.name().empty() ? "#0" : "'" + n.name() + "'";
    what = "operator '" + n.op_type() + "' (node " + node + ", domain '" + n.domain() +
           "') is not supported by emberc";
  }
  throw UnsupportedError(source + ": the model imports no ai.onnx opset; " + what);
}

// The version converter reports through libonnx's asserts; users can act on the reason only.
std::string ConverterReason(const std::string& what) {
  const std::string marker = "` failed: ";
  size_t at = what.find(marker);
  if (what.find("Assertion `") == std::string::npos || at == std::string::npos) return what;
  return what.substr(at + marker.size());
}

int64_t PrepareOnnxModel(onnx::ModelProto* model, const std::string& source,
                         const ImportOptions& options, std::vector<BoundInput>* bound) {
  // libonnx's checker would resolve a location against the current directory: refuse first.
  RefuseExternalData(model, source);
  SortNodesTopologically(model->mutable_graph(), source);
  ResolveInputShapes(model, source, options);
  std::vector<BoundInput> bound_here = BindInputs(model, source, options.bindings);
  if (bound != nullptr) *bound = std::move(bound_here);
  RefuseWithoutDefaultDomain(*model, source);
  int64_t opset = DefaultDomainOpset(*model);
  if (opset > kMaxImportOpset) {
    throw UnsupportedError(
        source + ": opset " + std::to_string(opset) + " is newer than emberc reads (" +
        std::to_string(kMinImportOpset) + ".." + std::to_string(kMaxImportOpset) +
        "); export the model at opset " + std::to_string(kMaxImportOpset) + " or earlier");
  }
  // libonnx judges only what it knows; for newer models Ember checks the names and types itself.
  const bool libonnx_knows_opset = opset <= kLibonnxMaxOpset;
  if (!libonnx_knows_opset || model->ir_version() > kLibonnxIrVersion) {
    CheckNewerModel(*model, source);
  }
  ValidateOnnxModel(*model, opset, source);
  if (libonnx_knows_opset) {
    // IR 9-10 only added element types CheckNewerModel refused, so the checker's IR-8 rules hold.
    const int64_t ir_version = model->ir_version();
    model->set_ir_version(std::min(ir_version, kLibonnxIrVersion));
    try {
      onnx::checker::check_model(*model);
    } catch (const std::exception& e) {
      throw CompileError(source + ": the ONNX checker rejected the model: " + e.what());
    }
    model->set_ir_version(ir_version);
  }
  if (opset < kMinImportOpset) {
    try {
      *model =
          onnx::version_conversion::ConvertVersion(*model, static_cast<int>(kConvertTargetOpset));
    } catch (const std::exception& e) {
      throw UnsupportedError(
          source + ": opset " + std::to_string(opset) + " is outside " +
          std::to_string(kMinImportOpset) + ".." + std::to_string(kMaxImportOpset) +
          " and the ONNX version converter could not convert it to " +
          std::to_string(kConvertTargetOpset) + " (" + ConverterReason(e.what()) +
          "); export the model at opset " + std::to_string(kMinImportOpset) + " or later");
    }
    opset = kConvertTargetOpset;
  }
  // libonnx's opset-17 schemas would misread newer ops (ReduceMean-18's axes input, Split-18's
  // num_outputs), and its STFT inference is wrong; canonicalize infers every type itself, so
  // nothing is lost by skipping.
  if (opset > kLibonnxMaxOpset || !LibonnxKnowsEveryOp(model->graph(), opset)) return opset;
  try {
    onnx::ShapeInferenceOptions opts;
    opts.check_type = false;
    opts.error_mode = 0;
    onnx::shape_inference::InferShapes(*model, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception& e) {
    throw CompileError(source + ": ONNX shape inference failed: " + e.what());
  }
  return opset;
}

}  // namespace compiler
}  // namespace ember
