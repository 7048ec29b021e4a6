// FoldBatchNorm: inference BatchNormalization y = (x - mean) * s + beta, s = gamma/sqrt(var+eps),
// folded into the weights of the Conv/Gemm producing x, else rewritten as Mul + Add.
#include <ember/compiler/transform.h>

#include <cmath>

#include "transform/fold_into_conv.h"

namespace ember {
namespace compiler {
namespace {

struct BnParams {
  std::vector<double> scale, shift;  // y = x * scale + shift, per channel
};

bool GetBn(const Graph& g, const Node& bn, BnParams* p) {
  for (size_t i = 1; i < 5; ++i) {
    if (!bn.HasInput(i) || !g.value(bn.inputs[i]).is_constant()) return false;
  }
  auto gamma = g.value(bn.inputs[1]).constant->ToDoubleVector();
  auto beta = g.value(bn.inputs[2]).constant->ToDoubleVector();
  auto mean = g.value(bn.inputs[3]).constant->ToDoubleVector();
  auto var = g.value(bn.inputs[4]).constant->ToDoubleVector();
  double eps = bn.GetFloat("epsilon", 1e-5);
  size_t c = gamma.size();
  if (beta.size() != c || mean.size() != c || var.size() != c) return false;
  for (size_t i = 0; i < c; ++i) {
    double s = gamma[i] / std::sqrt(var[i] + eps);
    p->scale.push_back(s);
    p->shift.push_back(beta[i] - mean[i] * s);
  }
  return true;
}

}  // namespace

void FoldBatchNorm(Graph* graph) {
  std::vector<Node> kept;
  std::vector<int> producer(graph->values().size(), -1);
  std::vector<int> uses = graph->UseCounts();
  for (Node& n : graph->nodes()) {
    BnParams p;
    if (n.op == "BatchNormalization" && GetBn(*graph, n, &p)) {
      int x = n.inputs[0];
      int prod = producer[static_cast<size_t>(x)];
      if (prod >= 0 && kept[static_cast<size_t>(prod)].op == "Conv" && uses[x] == 1 &&
          FoldChannelAffineIntoConv(graph, &kept[static_cast<size_t>(prod)], p.scale, p.shift,
                                    "_bnfold")) {
        graph->ReplaceAllUses(n.outputs[0], x);
        continue;
      }
      // Mul + Add with [C, 1, ..., 1] constants.
      const TensorType& t = graph->value(x).type;
      std::vector<int64_t> shape{static_cast<int64_t>(p.scale.size())};
      for (int64_t i = 2; i < t.ndim(); ++i) shape.push_back(1);
      auto s = std::make_shared<HostTensor>(TensorType{shape, t.dtype});
      auto b = std::make_shared<HostTensor>(TensorType{shape, t.dtype});
      for (size_t c = 0; c < p.scale.size(); ++c) {
        s->SetFromDouble(static_cast<int64_t>(c), p.scale[c]);
        b->SetFromDouble(static_cast<int64_t>(c), p.shift[c]);
      }
      int sc = graph->AddConstant(graph->UniqueName(n.name + "_scale"), s);
      int sh = graph->AddConstant(graph->UniqueName(n.name + "_shift"), b);
      int mid = graph->AddValue(graph->UniqueName(n.name + "_scaled"), t);
      producer.resize(graph->values().size(), -1);
      uses.resize(graph->values().size(), 0);
      kept.push_back(Node{"Mul", n.name + "_mul", {}, {x, sc}, {mid}});
      producer[static_cast<size_t>(mid)] = static_cast<int>(kept.size() - 1);
      kept.push_back(Node{"Add", n.name + "_add", {}, {mid, sh}, n.outputs});
      producer[static_cast<size_t>(n.outputs[0])] = static_cast<int>(kept.size() - 1);
      continue;
    }
    for (int out : n.outputs) producer[static_cast<size_t>(out)] = static_cast<int>(kept.size());
    kept.push_back(std::move(n));
  }
  graph->nodes() = std::move(kept);
}

}  // namespace compiler
}  // namespace ember
