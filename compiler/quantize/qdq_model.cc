// The ONNX rewriting of `emberc quantize` (layout in qdq_model.h).
#include "quantize/qdq_model.h"

#include <ember/compiler/ir/tensor_type.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "frontend/onnx/onnx_float_values.h"
#include "frontend/onnx/onnx_model_check.h"

namespace ember {
namespace compiler {
namespace {

bool IsDefaultDomain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

const onnx::TensorProto* FindInitializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

template <typename T>
onnx::TensorProto MakeTensor(const std::string& name, int32_t type,
                             const std::vector<int64_t>& dims, const std::vector<T>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
  return t;
}

// A float initializer's value as the only reader of it would see it, or nothing.
bool ScalarInitializer(const onnx::GraphProto& g, const std::string& name, float* out) {
  const onnx::TensorProto* t = FindInitializer(g, name);
  if (t == nullptr || t->data_type() != onnx::TensorProto::FLOAT) return false;
  std::vector<float> v = Float32Values(*t);
  if (v.size() != 1) return false;
  *out = v[0];
  return true;
}

const onnx::AttributeProto* Attr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
int64_t IntAttr(const onnx::NodeProto& n, const char* name, int64_t dflt) {
  const auto* a = Attr(n, name);
  return a != nullptr ? a->i() : dflt;
}
float FloatAttr(const onnx::NodeProto& n, const char* name, float dflt) {
  const auto* a = Attr(n, name);
  return a != nullptr ? a->f() : dflt;
}

// Readers of each tensor (node indices) and the graph outputs.
struct Uses {
  std::unordered_map<std::string, std::vector<int>> readers;
  std::unordered_set<std::string> graph_outputs;
  explicit Uses(const onnx::GraphProto& g) {
    for (int i = 0; i < g.node_size(); ++i) {
      for (const auto& in : g.node(i).input()) {
        if (!in.empty()) readers[in].push_back(i);
      }
    }
    for (const auto& o : g.output()) graph_outputs.insert(o.name());
  }
  // The node reading `t` when it is t's only use.
  int SoleReader(const std::string& t) const {
    auto it = readers.find(t);
    if (graph_outputs.count(t) || it == readers.end() || it->second.size() != 1) return -1;
    return it->second[0];
  }
};

bool IsQuantizedOp(const std::string& op) {
  static const char* kOps[] = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                               "QLinearConv",    "QLinearMatMul",    "ConvInteger",
                               "MatMulInteger"};
  for (const char* o : kOps) {
    if (op == o) return true;
  }
  return false;
}

std::string ElemTypeName(int32_t t) {
  return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t));
}

// Folds y = BN(Conv(x, w, b)) into Conv(x, w', b') where the BN is the conv's only reader.
void FoldBatchNorm(onnx::GraphProto* g) {
  Uses uses(*g);
  std::unordered_set<int> dropped;
  std::unordered_set<std::string> names;
  for (const auto& t : g->initializer()) names.insert(t.name());
  auto fresh = [&](const std::string& base) {
    std::string n = base;
    for (int k = 1; names.count(n); ++k) n = base + "_" + std::to_string(k);
    names.insert(n);
    return n;
  };
  for (int i = 0; i < g->node_size(); ++i) {
    onnx::NodeProto* conv = g->mutable_node(i);
    if (conv->op_type() != "Conv" || !IsDefaultDomain(conv->domain()) || conv->input_size() < 2 ||
        conv->output_size() != 1) {
      continue;
    }
    const int bn_index = uses.SoleReader(conv->output(0));
    if (bn_index < 0) continue;
    const onnx::NodeProto& bn = g->node(bn_index);
    if (bn.op_type() != "BatchNormalization" || bn.input_size() != 5 || bn.output_size() != 1 ||
        IntAttr(bn, "training_mode", 0) != 0) {
      continue;
    }
    const onnx::TensorProto* w = FindInitializer(*g, conv->input(1));
    const onnx::TensorProto* b = conv->input_size() > 2 && !conv->input(2).empty()
                                     ? FindInitializer(*g, conv->input(2))
                                     : nullptr;
    const onnx::TensorProto* p[4];
    bool ok = w != nullptr && w->data_type() == onnx::TensorProto::FLOAT && w->dims_size() >= 3 &&
              (b != nullptr || conv->input_size() < 3 || conv->input(2).empty());
    for (int k = 0; k < 4 && ok; ++k) {
      p[k] = FindInitializer(*g, bn.input(k + 1));
      ok = p[k] != nullptr && p[k]->data_type() == onnx::TensorProto::FLOAT;
    }
    if (!ok) continue;
    const int64_t channels = w->dims(0);
    std::vector<float> scale = Float32Values(*p[0]), beta = Float32Values(*p[1]),
                       mean = Float32Values(*p[2]), var = Float32Values(*p[3]);
    std::vector<float> bias = b != nullptr ? Float32Values(*b) : std::vector<float>(channels, 0.0f);
    if (static_cast<int64_t>(scale.size()) != channels || beta.size() != scale.size() ||
        mean.size() != scale.size() || var.size() != scale.size() || bias.size() != scale.size()) {
      continue;
    }
    const double eps = FloatAttr(bn, "epsilon", 1e-5f);
    std::vector<float> weights = Float32Values(*w);
    const size_t per_channel = weights.size() / static_cast<size_t>(channels);
    for (int64_t c = 0; c < channels; ++c) {
      const double f = scale[c] / std::sqrt(static_cast<double>(var[c]) + eps);
      for (size_t k = 0; k < per_channel; ++k) {
        float& v = weights[static_cast<size_t>(c) * per_channel + k];
        v = static_cast<float>(v * f);
      }
      bias[c] = static_cast<float>((bias[c] - mean[c]) * f + beta[c]);
    }
    std::vector<int64_t> dims(w->dims().begin(), w->dims().end());
    const std::string w_name = fresh(conv->input(1) + "_bn_folded");
    const std::string b_name = fresh(bn.output(0) + "_bias");
    *g->add_initializer() = MakeTensor(w_name, onnx::TensorProto::FLOAT, dims, weights);
    *g->add_initializer() = MakeTensor(b_name, onnx::TensorProto::FLOAT, {channels}, bias);
    conv->set_input(1, w_name);
    if (conv->input_size() > 2) {
      conv->set_input(2, b_name);
    } else {
      conv->add_input(b_name);
    }
    conv->set_output(0, bn.output(0));
    dropped.insert(bn_index);
  }
  if (dropped.empty()) return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < g->node_size(); ++i) {
    if (!dropped.count(i)) *kept.Add() = g->node(i);
  }
  g->mutable_node()->Swap(&kept);
}

// Drops initializers (and their graph-input entries) that no node reads any more.
void DropUnusedInitializers(onnx::GraphProto* g) {
  std::unordered_set<std::string> used;
  for (const auto& n : g->node()) {
    for (const auto& in : n.input()) used.insert(in);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) {
        for (const auto& sn : a.g().node()) {
          for (const auto& in : sn.input()) used.insert(in);
        }
      }
    }
  }
  for (const auto& o : g->output()) used.insert(o.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  std::unordered_set<std::string> dropped;
  for (const auto& t : g->initializer()) {
    if (used.count(t.name())) {
      *kept.Add() = t;
    } else {
      dropped.insert(t.name());
    }
  }
  g->mutable_initializer()->Swap(&kept);
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (const auto& in : g->input()) {
    if (!dropped.count(in.name())) *inputs.Add() = in;
  }
  g->mutable_input()->Swap(&inputs);
}

// Ops whose every output value is one of their input's values.
bool MovesValuesOnly(const onnx::NodeProto& n) {
  static const char* kOps[] = {"MaxPool",   "Flatten",  "Reshape",      "Transpose",   "Squeeze",
                               "Unsqueeze", "Identity", "SpaceToDepth", "DepthToSpace"};
  for (const char* op : kOps) {
    if (n.op_type() == op) return true;
  }
  return false;
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      diag = up;
    }
  }
  return row[b.size()];
}

// A layer for node i, when it is a quantizable op with a constant float weight.
bool MakeLayer(const onnx::GraphProto& g, const Uses& uses, int i, QuantLayer* layer) {
  const onnx::NodeProto& n = g.node(i);
  if (!IsDefaultDomain(n.domain()) || n.input_size() < 2 || n.output_size() != 1) return false;
  const std::string& op = n.op_type();
  if (op != "Conv" && op != "MatMul" && op != "Gemm") return false;
  const onnx::TensorProto* w = FindInitializer(g, n.input(1));
  if (w == nullptr || w->data_type() != onnx::TensorProto::FLOAT || n.input(0).empty() ||
      FindInitializer(g, n.input(0)) != nullptr) {
    return false;
  }
  layer->node = n.name();
  layer->op = op;
  layer->input = n.input(0);
  layer->weight = n.input(1);
  int64_t channels = 0;
  if (op == "Conv") {
    if (w->dims_size() < 3) return false;
    layer->axis = 0;
    channels = w->dims(0);
  } else if (op == "MatMul") {
    if (w->dims_size() != 2) return false;
    layer->axis = 1;
    channels = w->dims(1);
  } else {
    if (w->dims_size() != 2 || IntAttr(n, "transA", 0) != 0 || FloatAttr(n, "alpha", 1) != 1) {
      return false;
    }
    layer->axis = IntAttr(n, "transB", 0) != 0 ? 0 : 1;
    channels = w->dims(static_cast<int>(layer->axis));
  }
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const onnx::TensorProto* b = FindInitializer(g, n.input(2));
    const bool gemm_ok = op != "Gemm" || FloatAttr(n, "beta", 1) == 1;
    if (b != nullptr && gemm_ok && b->data_type() == onnx::TensorProto::FLOAT &&
        b->dims_size() == 1 && b->dims(0) == channels) {
      layer->bias = n.input(2);  // else the bias stays float (a Gemm's C of another shape)
    }
  }
  // The quantized output: past a Relu, or a Clip(0, hi) with constant bounds, read only by it.
  layer->output = n.output(0);
  const int next = uses.SoleReader(n.output(0));
  if (next >= 0 && IsDefaultDomain(g.node(next).domain()) &&
      !uses.graph_outputs.count(g.node(next).output(0))) {
    const onnx::NodeProto& act = g.node(next);
    float lo = 0, hi = 0;
    if (act.op_type() == "Relu") {
      layer->output = act.output(0);
    } else if (act.op_type() == "Clip" && act.input_size() == 3 &&
               ScalarInitializer(g, act.input(1), &lo) && ScalarInitializer(g, act.input(2), &hi) &&
               lo == 0.0f && hi > 0.0f) {
      layer->output = act.output(0);
      layer->dropped_clip = act.name();
    }
  }
  return true;
}

}  // namespace

void PrepareFloatModel(onnx::ModelProto* model, const std::string& source) {
  onnx::GraphProto* g = model->mutable_graph();
  for (const auto& n : g->node()) {
    if (IsQuantizedOp(n.op_type()) || n.op_type().rfind("QLinear", 0) == 0) {
      throw CompileError(source + ": node '" + n.name() + "' (" + n.op_type() +
                         ") shows the model is already quantized; give the float32 model");
    }
  }
  auto check_type = [&](const std::string& what, const std::string& name, int32_t t) {
    if (t == onnx::TensorProto::FLOAT16 || t == onnx::TensorProto::DOUBLE ||
        t == onnx::TensorProto::BFLOAT16) {
      throw CompileError(source + ": " + what + " '" + name + "' is " + ElemTypeName(t) +
                         "; emberc quantize takes float32 models");
    }
  };
  for (const auto& t : g->initializer()) check_type("initializer", t.name(), t.data_type());
  bool float_input = false;
  for (const auto& in : g->input()) {
    if (!in.type().has_tensor_type() || FindInitializer(*g, in.name())) continue;
    check_type("input", in.name(), in.type().tensor_type().elem_type());
    float_input |= in.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT;
  }
  for (const auto& out : g->output()) {
    if (out.type().has_tensor_type()) {
      check_type("output", out.name(), out.type().tensor_type().elem_type());
    }
  }
  if (!float_input) {
    throw CompileError(source + ": no float32 input; emberc quantize takes float32 models");
  }
  const int64_t opset = DefaultDomainOpset(*model);
  if (opset < kQdqMinOpset) {
    try {
      *model = onnx::version_conversion::ConvertVersion(*model, static_cast<int>(kQdqMinOpset));
    } catch (const std::exception& e) {
      throw CompileError(source + ": opset " + std::to_string(opset) +
                         " is below the 13 that per-channel DequantizeLinear needs, and the "
                         "ONNX version converter could not raise it (" +
                         ConverterReason(e.what()) + "); export the model at opset 13 or later");
    }
    g = model->mutable_graph();
  }
  std::unordered_set<std::string> names;
  for (const auto& n : g->node()) names.insert(n.name());
  for (int i = 0; i < g->node_size(); ++i) {
    onnx::NodeProto* n = g->mutable_node(i);
    if (!n->name().empty()) continue;
    std::string name = n->op_type() + "_" + std::to_string(i);
    for (int k = 1; names.count(name); ++k)
      name = n->op_type() + "_" + std::to_string(i) + "_" + std::to_string(k);
    names.insert(name);
    n->set_name(name);
  }
  FoldBatchNorm(g);
  DropUnusedInitializers(g);
}

QuantPlan PlanQuantization(const onnx::ModelProto& model, const std::vector<std::string>& exclude,
                           const std::string& source) {
  const onnx::GraphProto& g = model.graph();
  QuantPlan plan;
  std::unordered_set<std::string> all_names;
  for (const auto& n : g.node()) all_names.insert(n.name());
  Uses uses(g);
  std::vector<QuantLayer> candidates;
  for (int i = 0; i < g.node_size(); ++i) {
    QuantLayer layer;
    if (MakeLayer(g, uses, i, &layer)) candidates.push_back(layer);
  }
  for (const std::string& name : exclude) {
    if (all_names.count(name)) {
      plan.excluded.insert(name);
      continue;
    }
    std::vector<std::pair<size_t, std::string>> close;
    for (const auto& n : g.node()) close.push_back({EditDistance(name, n.name()), n.name()});
    std::sort(close.begin(), close.end());
    std::string near, layers;
    for (size_t k = 0; k < close.size() && k < 5; ++k) {
      near += (k ? ", " : "") + close[k].second;
    }
    for (size_t k = 0; k < candidates.size() && k < 12; ++k) {
      layers += (k ? ", " : "") + candidates[k].node;
    }
    if (candidates.size() > 12) layers += ", ...";
    throw CompileError("--exclude: " + source + " has no node named '" + name +
                       "'; closest: " + near + "; quantizable nodes: " + layers);
  }
  std::unordered_set<std::string> activations;
  for (const QuantLayer& layer : candidates) {
    if (plan.excluded.count(layer.node)) continue;
    plan.layers.push_back(layer);
    activations.insert(layer.input);
    if (!uses.graph_outputs.count(layer.output)) activations.insert(layer.output);
  }
  if (plan.layers.empty()) {
    throw CompileError(source + ": no node to quantize (Conv, MatMul or Gemm with a constant " +
                       "float32 weight" + (plan.excluded.empty() ? "" : ", not excluded") + ")");
  }
  // Graph order: inputs first, then each node's outputs.
  auto take = [&](const std::string& t) {
    if (activations.erase(t)) plan.activations.push_back(t);
  };
  for (const auto& in : g.input()) take(in.name());
  for (const auto& n : g.node()) {
    for (const auto& out : n.output()) take(out);
  }
  const std::set<std::string> paired(plan.activations.begin(), plan.activations.end());
  for (const auto& n : g.node()) {
    if (IsDefaultDomain(n.domain()) && MovesValuesOnly(n) && n.input_size() >= 1 &&
        n.output_size() == 1 && paired.count(n.input(0)) && paired.count(n.output(0))) {
      auto root = plan.same_range_as.find(n.input(0));
      plan.same_range_as[n.output(0)] =
          root != plan.same_range_as.end() ? root->second : n.input(0);
    }
  }
  return plan;
}

onnx::ModelProto WithExtraOutputs(const onnx::ModelProto& model,
                                  const std::vector<std::string>& tensors) {
  onnx::ModelProto out = model;
  // ONNX's checker wants each output's type with its shape: take them from shape inference.
  onnx::ModelProto inferred = model;
  try {
    onnx::ShapeInferenceOptions opts;
    opts.check_type = false;
    opts.error_mode = 0;
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception&) {
    // Ember's own import reports what is wrong with the model.
  }
  std::unordered_map<std::string, const onnx::ValueInfoProto*> info;
  for (const auto& v : inferred.graph().value_info()) info[v.name()] = &v;
  std::unordered_set<std::string> have;
  for (const auto& o : model.graph().output()) have.insert(o.name());
  for (const auto& i : model.graph().input()) have.insert(i.name());
  for (const std::string& t : tensors) {
    if (!have.insert(t).second) continue;
    onnx::ValueInfoProto* v = out.mutable_graph()->add_output();
    auto it = info.find(t);
    if (it != info.end()) {
      *v = *it->second;
    } else {
      v->set_name(t);
      v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    }
  }
  return out;
}

onnx::ModelProto WriteQdqModel(const onnx::ModelProto& model, const QuantPlan& plan,
                               const std::map<std::string, std::pair<float, float>>& ranges,
                               bool per_tensor_weights) {
  onnx::ModelProto out = model;
  onnx::GraphProto* g = out.mutable_graph();
  const onnx::GraphProto& src = model.graph();
  std::unordered_set<std::string> names;
  for (const auto& t : src.initializer()) names.insert(t.name());
  for (const auto& in : src.input()) names.insert(in.name());
  for (const auto& n : src.node()) {
    names.insert(n.name());
    for (const auto& o : n.output()) names.insert(o);
  }
  auto fresh = [&](const std::string& base) {
    std::string n = base;
    for (int k = 1; names.count(n); ++k) n = base + "_" + std::to_string(k);
    names.insert(n);
    return n;
  };
  auto make_node = [&](const char* op, const std::string& base,
                       const std::vector<std::string>& inputs, const std::string& output) {
    onnx::NodeProto n;
    n.set_op_type(op);
    n.set_name(fresh(base));
    for (const auto& i : inputs) n.add_input(i);
    n.add_output(output);
    return n;
  };

  // Activation pairs: t -> Q -> DQ -> t_dequantized.
  std::map<std::string, QuantParams> act_params;
  std::map<std::string, std::vector<onnx::NodeProto>> pair_nodes;  // emitted after t's producer
  std::unordered_map<std::string, std::string> dequantized;        // t -> its DQ output
  for (const std::string& t : plan.activations) {
    const auto& r = ranges.at(t);
    const QuantParams q = ActivationQuantParams(r.first, r.second);
    act_params[t] = q;
    const std::string scale = fresh(t + "_scale"), zp = fresh(t + "_zero_point");
    *g->add_initializer() =
        MakeTensor(scale, onnx::TensorProto::FLOAT, {}, std::vector<float>{q.scale});
    *g->add_initializer() = MakeTensor(zp, onnx::TensorProto::UINT8, {},
                                       std::vector<uint8_t>{static_cast<uint8_t>(q.zero_point)});
    const std::string quantized = fresh(t + "_quantized");
    dequantized[t] = fresh(t + "_dequantized");
    pair_nodes[t].push_back(
        make_node("QuantizeLinear", t + "_QuantizeLinear", {t, scale, zp}, quantized));
    pair_nodes[t].push_back(make_node("DequantizeLinear", t + "_DequantizeLinear",
                                      {quantized, scale, zp}, dequantized[t]));
  }

  // Weights and biases, per layer; emitted just before the layer's node.
  std::unordered_map<std::string, const QuantLayer*> layer_of;
  std::unordered_set<std::string> dropped_clips;
  for (const QuantLayer& l : plan.layers) {
    layer_of[l.node] = &l;
    if (!l.dropped_clip.empty()) dropped_clips.insert(l.dropped_clip);
  }
  std::map<std::pair<std::string, int64_t>, std::pair<std::string, std::vector<QuantParams>>>
      weight_done;  // (initializer, axis) -> (DQ output, per-channel params)
  std::unordered_map<std::string, std::vector<onnx::NodeProto>> before_node;
  std::unordered_map<std::string, std::map<int, std::string>> node_inputs;  // replaced inputs
  for (const QuantLayer& l : plan.layers) {
    const onnx::TensorProto& w = *FindInitializer(src, l.weight);
    auto key = std::make_pair(l.weight, l.axis);
    auto done = weight_done.find(key);
    if (done == weight_done.end()) {
      std::vector<float> values = Float32Values(w);
      std::vector<int64_t> dims(w.dims().begin(), w.dims().end());
      const int64_t channels = dims[static_cast<size_t>(l.axis)];
      int64_t inner = 1;
      for (size_t d = static_cast<size_t>(l.axis) + 1; d < dims.size(); ++d) inner *= dims[d];
      // Element k belongs to channel (k / inner) % channels.
      auto channel_of = [&](size_t k) {
        return static_cast<int64_t>(k / static_cast<size_t>(inner)) % channels;
      };
      std::vector<float> max_abs(static_cast<size_t>(channels), 0.0f);
      for (size_t k = 0; k < values.size(); ++k) {
        float& m = max_abs[static_cast<size_t>(channel_of(k))];
        m = std::max(m, std::abs(values[k]));
      }
      if (per_tensor_weights) {
        const float all = *std::max_element(max_abs.begin(), max_abs.end());
        std::fill(max_abs.begin(), max_abs.end(), all);
      }
      std::vector<QuantParams> params;
      for (float m : max_abs) params.push_back(SymmetricWeightQuantParams(m));
      std::vector<int8_t> q(values.size());
      for (size_t k = 0; k < values.size(); ++k) {
        q[k] = static_cast<int8_t>(QuantizeValue(
            values[k], params[static_cast<size_t>(channel_of(k))], -kWeightQMax, kWeightQMax));
      }
      const std::string qname = fresh(l.weight + "_quantized");
      const std::string scale = fresh(l.weight + "_scale"), zp = fresh(l.weight + "_zero_point");
      const std::string dq = fresh(l.weight + "_dequantized");
      *g->add_initializer() = MakeTensor(qname, onnx::TensorProto::INT8, dims, q);
      onnx::NodeProto node;
      if (per_tensor_weights) {
        *g->add_initializer() =
            MakeTensor(scale, onnx::TensorProto::FLOAT, {}, std::vector<float>{params[0].scale});
        *g->add_initializer() = MakeTensor(zp, onnx::TensorProto::INT8, {}, std::vector<int8_t>{0});
        node =
            make_node("DequantizeLinear", l.weight + "_DequantizeLinear", {qname, scale, zp}, dq);
      } else {
        std::vector<float> scales;
        for (const auto& p : params) scales.push_back(p.scale);
        *g->add_initializer() = MakeTensor(scale, onnx::TensorProto::FLOAT, {channels}, scales);
        *g->add_initializer() = MakeTensor(zp, onnx::TensorProto::INT8, {channels},
                                           std::vector<int8_t>(static_cast<size_t>(channels), 0));
        node =
            make_node("DequantizeLinear", l.weight + "_DequantizeLinear", {qname, scale, zp}, dq);
        onnx::AttributeProto* axis = node.add_attribute();
        axis->set_name("axis");
        axis->set_type(onnx::AttributeProto::INT);
        axis->set_i(l.axis);
      }
      before_node[l.node].push_back(node);
      done = weight_done.emplace(key, std::make_pair(dq, params)).first;
    }
    node_inputs[l.node][1] = done->second.first;
    if (l.bias.empty()) continue;
    // int32 bias at x_scale * w_scale (per channel), zero point 0: the integer op's accumulator.
    const auto& wparams = done->second.second;
    const float x_scale = act_params.at(l.input).scale;
    std::vector<float> b = Float32Values(*FindInitializer(src, l.bias));
    std::vector<float> scales(b.size());
    std::vector<int32_t> bq(b.size());
    for (size_t c = 0; c < b.size(); ++c) {
      scales[c] = static_cast<float>(static_cast<double>(x_scale) * wparams[c].scale);
      const double v = RoundHalfToEven(static_cast<double>(b[c]) / scales[c]);
      bq[c] = static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0));
    }
    const int64_t channels = static_cast<int64_t>(b.size());
    const std::string qname = fresh(l.bias + "_quantized"), scale = fresh(l.bias + "_scale");
    const std::string zp = fresh(l.bias + "_zero_point"), dq = fresh(l.bias + "_dequantized");
    *g->add_initializer() = MakeTensor(qname, onnx::TensorProto::INT32, {channels}, bq);
    *g->add_initializer() = MakeTensor(scale, onnx::TensorProto::FLOAT, {channels}, scales);
    *g->add_initializer() =
        MakeTensor(zp, onnx::TensorProto::INT32, {channels}, std::vector<int32_t>(b.size(), 0));
    onnx::NodeProto node =
        make_node("DequantizeLinear", l.bias + "_DequantizeLinear", {qname, scale, zp}, dq);
    onnx::AttributeProto* axis = node.add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(0);
    before_node[l.node].push_back(node);
    node_inputs[l.node][2] = dq;
  }

  // The node list again: pairs of graph inputs first, then each node (its weight DQs before it,
  // its outputs' pairs after it), readers renamed to the dequantized tensors.
  std::unordered_map<std::string, std::string> clip_output;  // dropped Clip's input -> output
  for (const auto& n : src.node()) {
    if (dropped_clips.count(n.name())) clip_output[n.input(0)] = n.output(0);
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const auto& in : src.input()) {
    for (auto& n : pair_nodes[in.name()]) *nodes.Add() = n;
  }
  for (const auto& src_node : src.node()) {
    if (dropped_clips.count(src_node.name())) continue;
    for (auto& n : before_node[src_node.name()]) *nodes.Add() = n;
    onnx::NodeProto n = src_node;
    const bool excluded = plan.excluded.count(n.name()) != 0;
    for (int k = 0; k < n.input_size(); ++k) {
      auto replaced = node_inputs.find(n.name());
      if (replaced != node_inputs.end() && replaced->second.count(k)) {
        n.set_input(k, replaced->second.at(k));
      } else if (!excluded && dequantized.count(n.input(k))) {
        n.set_input(k, dequantized.at(n.input(k)));
      }
    }
    for (int k = 0; k < n.output_size(); ++k) {
      auto clip = clip_output.find(n.output(k));
      if (clip != clip_output.end()) n.set_output(k, clip->second);
    }
    *nodes.Add() = n;
    for (const auto& o : n.output()) {
      for (auto& p : pair_nodes[o]) *nodes.Add() = p;
    }
  }
  g->mutable_node()->Swap(&nodes);
  DropUnusedInitializers(g);
  return out;
}

std::string DequantizedName(const onnx::ModelProto& qdq_model, const std::string& tensor) {
  const onnx::GraphProto& g = qdq_model.graph();
  for (const auto& q : g.node()) {
    if (q.op_type() != "QuantizeLinear" || q.input(0) != tensor) continue;
    for (const auto& dq : g.node()) {
      if (dq.op_type() == "DequantizeLinear" && dq.input(0) == q.output(0)) return dq.output(0);
    }
  }
  return tensor;
}

}  // namespace compiler
}  // namespace ember
