// CanonicalizeDense: every dense product with a constant 2-D weight becomes a Gemm that reads the
// weight as [K][N], the layout compiler/schedule/dense.cc streams row by row (a PyTorch Linear
// exports Gemm with transB = 1, a Keras Dense exports MatMul).
#include <ember/compiler/transform.h>

#include <memory>

namespace ember {
namespace compiler {
namespace {

// [N][K] -> [K][N].
HostTensorPtr Transposed(const HostTensor& w) {
  const int64_t rows = w.type.shape[0], cols = w.type.shape[1];
  auto t = std::make_shared<HostTensor>(TensorType{{cols, rows}, w.type.dtype});
  const float* src = w.Data<float>();
  float* dst = t->Data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  }
  return t;
}

bool IsConstantMatrix(const Graph& g, int id) {
  const Value& v = g.value(id);
  return v.is_constant() && v.type.dtype == kFloat32 && v.type.shape.size() == 2;
}

}  // namespace

void CanonicalizeDense(Graph* graph) {
  for (Node& n : graph->nodes()) {
    const bool matmul = n.op == "MatMul";
    if (!matmul && n.op != "Gemm") continue;
    if (n.inputs.size() < 2 || !IsConstantMatrix(*graph, n.inputs[1])) continue;
    if (graph->value(n.inputs[0]).type.shape.size() != 2) continue;
    if (matmul) {
      n.op = "Gemm";
      n.attrs["alpha"] = 1.0;
      n.attrs["beta"] = 1.0;
      n.attrs["transA"] = int64_t{0};
      n.attrs["transB"] = int64_t{0};
    } else if (n.GetInt("transB", 0) != 0) {
      const Value& w = graph->value(n.inputs[1]);
      n.inputs[1] = graph->AddConstant(graph->UniqueName(w.name + "_kn"), Transposed(*w.constant));
      n.attrs["transB"] = int64_t{0};
    }
  }
  EliminateDeadCode(graph);
}

}  // namespace compiler
}  // namespace ember
