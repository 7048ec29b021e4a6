// Host constant folds (OpDef::fold) of the reductions shape math uses (a product of dims, a sum
// of sizes). Canonical form: sorted, deduplicated `axes` and `keepdims`.
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>
#include <cmath>

#include "ops/fold_util.h"

namespace ember::compiler::ops {
namespace {

using Combine = double (*)(double acc, double v);

// Accumulates in double; integer inputs other than int32/int64 (and bool) are left unfolded.
FFold ReduceFold(double init, Combine combine) {
  return
      [init, combine](const Node& n, const FoldInputs& in, const FoldTypes& outs) -> FoldOutputs {
        if (in.size() != 1) return {};
        const HostTensor& x = *in[0];
        if (!IsFloat(x.type.dtype) && x.type.dtype != kInt64 && x.type.dtype != kInt32) return {};
        auto out = std::make_shared<HostTensor>(outs.at(0));
        std::vector<double> acc(static_cast<size_t>(out->NumElements()), init);
        std::vector<int64_t> keep_shape = x.type.shape;
        for (int64_t a : n.GetInts("axes")) keep_shape[a] = 1;
        for (int64_t i = 0; i < x.NumElements(); ++i) {
          auto c = Unravel(i, x.type.shape);
          int64_t o = 0;
          for (size_t d = 0; d < c.size(); ++d)
            o = o * keep_shape[d] + (keep_shape[d] == 1 ? 0 : c[d]);
          double& r = acc[static_cast<size_t>(o)];
          r = combine(r, x.GetAsDouble(i));
        }
        for (size_t i = 0; i < acc.size(); ++i) out->SetFromDouble(static_cast<int64_t>(i), acc[i]);
        return {out};
      };
}

const bool kRegistered = [] {
  auto reg = [](const char* op, double init, Combine combine) {
    OpRegistry::Global()->Mutable(op).set_fold(ReduceFold(init, combine));
  };
  reg("ReduceProd", 1.0, [](double r, double v) { return r * v; });
  reg("ReduceSum", 0.0, [](double r, double v) { return r + v; });
  reg("ReduceMax", -INFINITY, [](double r, double v) { return std::max(r, v); });
  reg("ReduceMin", INFINITY, [](double r, double v) { return std::min(r, v); });
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
