// ComputeFloat16InFloat32: float16 convolutions, dense products and pools run on the float32
// kernels, between Casts. Ember computes float16 in float32 anyway and rounds each node's result
// to float16 (compiler/lower/), so a float32 node whose result is cast to float16 computes the
// same values; what changes is the kernel: the scheduled float32 ones instead of the default
// lowering (IS-Net fp16 spent nearly all its time in default-lowered float16 convs). Constant
// operands (weights) are widened here, once.
#include <ember/compiler/transform.h>
#include <ember/runtime/half_float.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember {
namespace compiler {
namespace {

// Ops with scheduled float32 kernels (compiler/schedule/); MatMul becomes a Gemm where its weight
// is constant (CanonicalizeDense).
bool HasFloat32Kernels(const std::string& op) {
  for (const char* k : {"Conv", "ConvTranspose", "Gemm", "MatMul", "MaxPool", "AveragePool",
                        "GlobalAveragePool", "GlobalMaxPool"}) {
    if (op == k) return true;
  }
  return false;
}

bool IsFloat16(const TensorType& t) { return t.dtype == kFloat16; }

Node CastNode(const std::string& name, int from, int to, DLDataType dtype) {
  return Node{"Cast",
              name,
              {{"to", int64_t{dtype == kFloat16 ? 10 : 1}}, {"__dtype", DTypeToString(dtype)}},
              {from},
              {to}};
}

HostTensorPtr Widened(const HostTensor& c) {
  auto wide = std::make_shared<HostTensor>(TensorType{c.type.shape, kFloat32});
  const uint16_t* half = c.Data<uint16_t>();
  float* f = wide->Data<float>();
  for (int64_t i = 0; i < c.NumElements(); ++i) f[i] = runtime::HalfToFloat(half[i]);
  return wide;
}

// Input `id` of `node` as float32: a widened constant, or the result of a Cast node appended to
// `out` (one per value, shared by its readers).
int Float32Input(Graph* graph, int id, std::vector<Node>* out, std::vector<int>* widened) {
  int& wide = (*widened)[static_cast<size_t>(id)];
  if (wide >= 0) return wide;
  const Value& v = graph->value(id);
  const std::string name = graph->UniqueName(v.name + "_f32");
  if (v.is_constant()) {
    wide = graph->AddConstant(name, Widened(*v.constant));
  } else {
    wide = graph->AddValue(name, TensorType{v.type.shape, kFloat32});
    out->push_back(CastNode(name, id, wide, kFloat32));
  }
  return wide;
}

}  // namespace

void ComputeFloat16InFloat32(Graph* graph) {
  std::vector<Node> nodes = std::move(graph->nodes());
  graph->nodes().clear();
  std::vector<Node>& out = graph->nodes();
  std::vector<int> widened(graph->values().size(), -1);
  for (Node& n : nodes) {
    if (!HasFloat32Kernels(n.op) || n.outputs.empty() || n.outputs[0] == kAbsentValue ||
        !IsFloat16(graph->value(n.outputs[0]).type)) {
      out.push_back(std::move(n));
      continue;
    }
    for (int& in : n.inputs) {
      if (in != kAbsentValue && IsFloat16(graph->value(in).type)) {
        in = Float32Input(graph, in, &out, &widened);
        widened.resize(graph->values().size(), -1);
      }
    }
    const int half = n.outputs[0];
    const std::string name = graph->UniqueName(graph->value(half).name + "_f32");
    n.outputs[0] = graph->AddValue(name, TensorType{graph->value(half).type.shape, kFloat32});
    widened.resize(graph->values().size(), -1);
    const Node narrow = CastNode(name + "_to_f16", n.outputs[0], half, kFloat16);
    out.push_back(std::move(n));
    out.push_back(narrow);
  }
}

}  // namespace compiler
}  // namespace ember
