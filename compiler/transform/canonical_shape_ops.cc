// Canonical forms of the ops whose result is known from shapes and constants at compile time
// (Shape, Size, ConstantOfShape, Range): their outputs become constants and the nodes vanish, so
// the shape subgraphs of exported models fold away.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

void ShapeOp(Node n, CanonicalizeContext* ctx) {
  auto s = ctx->TypeOf(n.inputs.at(0)).shape;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t b = n.GetInt("start", 0), e = n.GetInt("end", r);
  if (b < 0) b += r;
  if (e < 0) e += r;
  b = std::clamp<int64_t>(b, 0, r);
  e = std::clamp<int64_t>(e, b, r);
  ctx->SetConstOutput(n.outputs[0],
                      MakeInt64Tensor(std::vector<int64_t>(s.begin() + b, s.begin() + e)));
}

void SizeOp(Node n, CanonicalizeContext* ctx) {
  ctx->SetConstOutput(
      n.outputs[0],
      MakeScalarTensor(kInt64, static_cast<double>(ctx->TypeOf(n.inputs[0]).NumElements())));
}

void ConstantOfShapeOp(Node n, CanonicalizeContext* ctx) {
  auto shape = ctx->ConstInput(n, 0, "shape")->ToIntVector();
  HostTensorPtr v = n.HasAttr("value") ? n.GetTensor("value") : MakeScalarTensor(kFloat32, 0);
  ctx->SetFilledOutput(n, n.outputs[0], shape, *v);
}

void RangeOp(Node n, CanonicalizeContext* ctx) {
  auto s = ctx->OneValueInput(n, 0, "start"), l = ctx->OneValueInput(n, 1, "limit"),
       d = ctx->OneValueInput(n, 2, "delta");
  double a = s->GetAsDouble(0), b = l->GetAsDouble(0), c = d->GetAsDouble(0);
  if (c == 0) NodeError(n, "delta is 0");
  const double steps = std::ceil((b - a) / c);
  if (!std::isfinite(steps) || steps > static_cast<double>(kMaxFoldElements)) {
    char what[160];
    std::snprintf(what, sizeof(what), "start %g, limit %g and delta %g make %.0f elements", a, b, c,
                  steps);
    NodeUnsupported(n, std::string(what) + "; emberc computes a Range at compile time, up to " +
                           std::to_string(kMaxFoldElements) + " elements");
  }
  int64_t cnt = std::max<int64_t>(0, static_cast<int64_t>(steps));
  auto t = std::make_shared<HostTensor>(TensorType{{cnt}, s->type.dtype});
  for (int64_t i = 0; i < cnt; ++i) {
    if (s->type.dtype.code == kDLFloat) {
      t->SetFromDouble(i, a + static_cast<double>(i) * c);
    } else {
      t->SetFromInt(i, s->GetAsInt(0) + i * d->GetAsInt(0));
    }
  }
  ctx->SetConstOutput(n.outputs[0], t);
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("Shape", ShapeOp);
EMBER_REGISTER_OP_CANONICALIZE("Size", SizeOp);
EMBER_REGISTER_OP_CANONICALIZE("ConstantOfShape", ConstantOfShapeOp);
EMBER_REGISTER_OP_CANONICALIZE("Range", RangeOp);

}  // namespace compiler
}  // namespace ember
