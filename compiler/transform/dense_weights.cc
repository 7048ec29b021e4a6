// CanonicalizeDense: every dense product with a constant 2-D weight becomes a Gemm that reads the
// weight as [K][N], the layout compiler/schedule/dense.cc streams row by row (a PyTorch Linear
// exports Gemm with transB = 1, a Keras Dense exports MatMul; a MatMul of an [..., K] input, as in
// a transformer, becomes Reshape - Gemm - Reshape). PackDenseWeights then stores such
// weights in the column panels the target's dense kernel tiles (kPackedDenseWidthAttr).
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/transform.h>

#include <memory>
#include <string>
#include <vector>

#include "transform/derived_constants.h"

namespace ember {
namespace compiler {
namespace {

// The constant [N][K] weight as [K][N], by the host evaluator's Transpose; null when it declines
// (a weight beyond its folding limit).
HostTensorPtr Transposed(const Value& w) {
  const Node transpose{"Transpose", w.name + "_kn", {{"perm", std::vector<int64_t>{1, 0}}}, {}, {}};
  const TensorType kn{{w.type.shape[1], w.type.shape[0]}, w.type.dtype};
  std::vector<HostTensorPtr> out;
  if (!HostEvaluate(transpose, {w.constant}, {kn}, &out)) return nullptr;
  return out.at(0);
}

// [K][N] -> panels of `width` columns [N/width][K][width], then the rest [K][N % width].
HostTensorPtr PackPanels(const HostTensor& w, int64_t width) {
  const int64_t k = w.type.shape[0], n = w.type.shape[1];
  const int64_t full = n / width * width, rest = n - full;
  auto packed = std::make_shared<HostTensor>(w.type);
  const float* src = w.Data<float>();
  float* dst = packed->Data<float>();
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      const int64_t at =
          c < full ? ((c / width) * k + r) * width + c % width : full * k + r * rest + (c - full);
      dst[at] = src[r * n + c];
    }
  }
  return packed;
}

bool IsConstantMatrix(const Graph& g, int id) {
  const Value& v = g.value(id);
  return v.is_constant() && v.type.dtype == kFloat32 && v.type.shape.size() == 2;
}

// n as a Gemm reading its constant weight as [K][N] (n: a MatMul or Gemm with a 2-D input).
void AsGemmKN(Graph* graph, DerivedConstants* derived, Node* n, bool matmul) {
  if (matmul) {
    n->op = "Gemm";
    n->attrs["alpha"] = 1.0;
    n->attrs["beta"] = 1.0;
    n->attrs["transA"] = int64_t{0};
    n->attrs["transB"] = int64_t{0};
  } else if (n->GetInt("transB", 0) != 0) {
    const int kn = derived->Get(n->inputs[1], "_kn", "",
                                [&] { return Transposed(graph->value(n->inputs[1])); });
    if (kn < 0) return;  // stays transB = 1, for the default lowering
    n->inputs[1] = kn;
    n->attrs["transB"] = int64_t{0};
  }
}

// A MatMul of an [..., K] input and a constant [K][N] weight as Reshape to [rows][K], the Gemm,
// and Reshape back to [..., N] (a transformer's projections: every leading index is a row).
void EmitBatchedAsGemm(Graph* graph, DerivedConstants* derived, Node n) {
  const TensorType a = graph->value(n.inputs[0]).type, y = graph->value(n.outputs[0]).type;
  const int64_t k = a.shape.back(), cols = y.shape.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < a.shape.size(); ++d) rows *= a.shape[d];
  const int a2 =
      graph->AddValue(graph->UniqueName(n.name + "_rows_in"), TensorType{{rows, k}, a.dtype});
  const int y2 =
      graph->AddValue(graph->UniqueName(n.name + "_rows_out"), TensorType{{rows, cols}, y.dtype});
  graph->nodes().push_back(Node{"Reshape",
                                n.name + "_rows",
                                {{"__out_shape", std::vector<int64_t>{rows, k}}},
                                {n.inputs[0]},
                                {a2}});
  const int y_nd = n.outputs[0];
  Node gemm = std::move(n);
  gemm.inputs[0] = a2;
  gemm.outputs = {y2};
  AsGemmKN(graph, derived, &gemm, true);
  const std::string name = gemm.name;
  graph->nodes().push_back(std::move(gemm));
  graph->nodes().push_back(
      Node{"Reshape", name + "_unrows", {{"__out_shape", y.shape}}, {y2}, {y_nd}});
}

}  // namespace

void CanonicalizeDense(Graph* graph) {
  std::vector<Node> nodes = std::move(graph->nodes());
  graph->nodes().clear();
  DerivedConstants derived(graph);
  for (Node& n : nodes) {
    const bool matmul = n.op == "MatMul";
    const bool dense =
        (matmul || n.op == "Gemm") && n.inputs.size() >= 2 && IsConstantMatrix(*graph, n.inputs[1]);
    const size_t rank = dense ? graph->value(n.inputs[0]).type.shape.size() : 0;
    if (dense && rank == 2) {
      AsGemmKN(graph, &derived, &n, matmul);
    } else if (dense && rank > 2 && matmul) {
      EmitBatchedAsGemm(graph, &derived, std::move(n));
      continue;
    }
    graph->nodes().push_back(std::move(n));
  }
  EliminateDeadCode(graph);
}

void PackDenseWeights(Graph* graph) {
  DerivedConstants derived(graph);
  for (Node& n : graph->nodes()) {
    if (n.op != "Gemm" || n.HasAttr(kPackedDenseWidthAttr) || n.inputs.size() < 2) continue;
    if (n.GetInt("transA", 0) != 0 || n.GetInt("transB", 0) != 0) continue;
    if (!IsConstantMatrix(*graph, n.inputs[1])) continue;
    const int64_t width = KernelPlan::Of(n).dense_panel;
    if (width <= 1) continue;
    const int w = n.inputs[1];
    n.inputs[1] = derived.Get(w, "_panels", std::to_string(width),
                              [&] { return PackPanels(*graph->value(w).constant, width); });
    n.attrs[kPackedDenseWidthAttr] = width;
  }
  EliminateDeadCode(graph);
}

}  // namespace compiler
}  // namespace ember
