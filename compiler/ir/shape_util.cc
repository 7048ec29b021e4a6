#include "ir/shape_util.h"

namespace ember {
namespace compiler {

void NodeError(const Node& node, const std::string& msg) {
  throw CompileError(node.Describe() + ": " + msg);
}
void NodeUnsupported(const Node& node, const std::string& msg) {
  throw UnsupportedError(node.Describe() + ": " + msg);
}

std::vector<int64_t> BroadcastShapes(const Node& node, const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      NodeError(node, "shapes " + ShapeToString(a) + " and " + ShapeToString(b) +
                          " cannot be broadcast together");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

void CheckConvRanks(const Node& node, const TensorType& x, const TensorType& w) {
  if (x.ndim() < 3 || w.ndim() != x.ndim()) {
    NodeError(node,
              "expected X and W of equal rank >= 3, got " + x.ToString() + " and " + w.ToString());
  }
  // An empty W would be divided by (its input channels, its taps) where an integer conv's
  // expansion sizes its reduction (SIGFPE for W [1,0,2,2]).
  if (w.NumElements() == 0) NodeError(node, "W " + w.ToString() + " is empty");
}

}  // namespace

void CheckConvOperands(const Node& node, const TensorType& x, const TensorType& w, int64_t group) {
  CheckConvRanks(node, x, w);
  if (x.shape[1] != w.shape[1] * group) {
    NodeError(node, "input channels " + std::to_string(x.shape[1]) + " != W channels " +
                        std::to_string(w.shape[1]) + " * group " + std::to_string(group));
  }
}

void CheckConvTransposeOperands(const Node& node, const TensorType& x, const TensorType& w,
                                int64_t group) {
  CheckConvRanks(node, x, w);
  // W is [C, M / group, k...]: its first dim is X's channels, which the groups split evenly.
  if (x.shape[1] != w.shape[0]) {
    NodeError(node, "input channels " + std::to_string(x.shape[1]) + " != W's first dim " +
                        std::to_string(w.shape[0]) + " (W " + w.ToString() + ")");
  }
  if (group < 1 || x.shape[1] % group != 0) {
    NodeError(node, "input channels " + std::to_string(x.shape[1]) + " do not split into group " +
                        std::to_string(group));
  }
}

int64_t NormalizeAxis(const Node& node, int64_t axis, int64_t rank, const char* what) {
  // A scalar has no axis to name (its callers index the shape with the result: a Split of a
  // scalar read shape[0] of an empty shape, SIGSEGV), as ONNX Runtime refuses one too.
  if (axis < -rank || axis >= rank) {
    NodeError(node, std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                        std::to_string(rank) +
                        (rank == 0 ? " (a scalar has no axes)"
                                   : "; valid: " + std::to_string(-rank) + ".." +
                                         std::to_string(rank - 1)));
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace compiler
}  // namespace ember
