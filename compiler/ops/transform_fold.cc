// Host constant folds (OpDef::fold) of the data-movement ops, in canonical attribute form: the
// shape subgraphs of exported models (Shape -> Gather -> Concat -> Reshape) fold through them.
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>

#include "ir/shape_util.h"
#include "ops/fold_util.h"

namespace ember::compiler::ops {
namespace {

// The output's bytes are the input's (Reshape, Flatten, Squeeze, Unsqueeze, Identity).
FoldOutputs SameBytes(const HostTensor& x, const FoldTypes& outs) {
  auto out = std::make_shared<HostTensor>(outs.at(0));
  out->data = x.data;
  return {out};
}

FoldOutputs CopyFold(const Node&, const FoldInputs& in, const FoldTypes& outs) {
  if (in.size() != 1) return {};
  return SameBytes(*in[0], outs);
}

// Inference Dropout is Identity whatever its ratio inputs; a wanted mask output is not folded.
FoldOutputs DropoutFold(const Node&, const FoldInputs& in, const FoldTypes& outs) {
  if (outs.size() > 1) return {};
  return SameBytes(*in.at(0), outs);
}

// Fills out with elements of x picked by index math (Expand, Transpose, Slice, Tile).
using FillFn = void (*)(const Node& n, const HostTensor& x, HostTensor* out);

FFold IndexedCopyFold(FillFn fill) {
  return [fill](const Node& n, const FoldInputs& in, const FoldTypes& outs) -> FoldOutputs {
    if (in.size() != 1) return {};
    auto out = std::make_shared<HostTensor>(outs.at(0));
    fill(n, *in[0], out.get());
    return {out};
  };
}

void ExpandInto(const Node&, const HostTensor& x, HostTensor* out) {
  CopyElements(x, out, [&](int64_t i) { return BroadcastIndex(i, out->type.shape, x.type.shape); });
}

void TransposeInto(const Node& n, const HostTensor& x, HostTensor* out) {
  auto perm = n.GetInts("perm");
  auto st = Strides(x.type.shape);
  CopyElements(x, out, [&](int64_t i) {
    auto c = Unravel(i, out->type.shape);
    int64_t s = 0;
    for (size_t d = 0; d < c.size(); ++d) s += c[d] * st[perm[d]];
    return s;
  });
}

void SliceInto(const Node& n, const HostTensor& x, HostTensor* out) {
  auto starts = n.GetInts("starts"), steps = n.GetInts("steps");
  auto st = Strides(x.type.shape);
  CopyElements(x, out, [&](int64_t i) {
    auto c = Unravel(i, out->type.shape);
    int64_t s = 0;
    for (size_t d = 0; d < c.size(); ++d) s += (starts[d] + c[d] * steps[d]) * st[d];
    return s;
  });
}

void TileInto(const Node&, const HostTensor& x, HostTensor* out) {
  auto st = Strides(x.type.shape);
  CopyElements(x, out, [&](int64_t i) {
    auto c = Unravel(i, out->type.shape);
    int64_t s = 0;
    for (size_t d = 0; d < c.size(); ++d) s += (c[d] % x.type.shape[d]) * st[d];
    return s;
  });
}

// Split in canonical form (axis, split sizes): output k is the k-th run of slices on the axis.
FoldOutputs SplitFold(const Node& n, const FoldInputs& in, const FoldTypes& outs) {
  if (in.size() != 1) return {};
  const HostTensor& x = *in[0];
  const int64_t axis = n.GetInt("axis");
  const int64_t es = DTypeBytes(x.type.dtype);
  int64_t outer = 1, inner = es;
  for (int64_t d = 0; d < axis; ++d) outer *= x.type.shape[d];
  for (int64_t d = axis + 1; d < x.type.ndim(); ++d) inner *= x.type.shape[d];
  const int64_t row = x.type.shape[axis] * inner;
  int64_t offset = 0;
  FoldOutputs parts;
  for (const TensorType& t : outs) {
    auto part = std::make_shared<HostTensor>(t);
    part->data.resize(static_cast<size_t>(t.ByteSize()));
    const int64_t bytes = t.shape[axis] * inner;
    for (int64_t o = 0; o < outer && bytes > 0; ++o) {
      std::memcpy(part->data.data() + o * bytes, x.data.data() + o * row + offset,
                  static_cast<size_t>(bytes));
    }
    offset += bytes;
    parts.push_back(part);
  }
  return parts;
}

// A lone input is not copied: Simplify forwards it.
FoldOutputs ConcatFold(const Node& n, const FoldInputs& in, const FoldTypes& outs) {
  if (in.size() < 2) return {};
  auto out = std::make_shared<HostTensor>(outs.at(0));
  int64_t axis = n.GetInt("axis");
  int64_t es = DTypeBytes(out->type.dtype);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out->type.shape[d];
  int64_t pos = 0;
  int64_t out_row = out->NumElements() / std::max<int64_t>(outer, 1) * es;
  for (const auto& t : in) {
    int64_t row = outer ? t->NumElements() / std::max<int64_t>(outer, 1) * es : 0;
    if (row == 0) continue;  // an empty input: nothing to copy, and its data() may be null
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(out->data.data() + o * out_row + pos, t->data.data() + o * row,
                  static_cast<size_t>(row));
    }
    pos += row;
  }
  return {out};
}

FoldOutputs GatherFold(const Node& n, const FoldInputs& in, const FoldTypes& outs) {
  if (in.size() != 2) return {};
  const HostTensor& x = *in[0];
  const HostTensor& idx = *in[1];
  auto out = std::make_shared<HostTensor>(outs.at(0));
  int64_t axis = n.GetInt("axis");
  int64_t dim = x.type.shape[axis];
  auto st = Strides(x.type.shape);
  int64_t ir = idx.type.ndim();
  CopyElements(x, out.get(), [&](int64_t i) {
    auto c = Unravel(i, out->type.shape);
    std::vector<int64_t> ic(c.begin() + axis, c.begin() + axis + ir);
    int64_t flat = 0;
    for (int64_t d = 0; d < ir; ++d) flat = flat * idx.type.shape[d] + ic[d];
    int64_t k = idx.GetAsInt(flat);
    if (k < 0) k += dim;
    if (k < 0 || k >= dim) NodeError(n, "index " + std::to_string(k) + " out of range");
    int64_t s = 0;
    for (int64_t d = 0; d < axis; ++d) s += c[d] * st[d];
    s += k * st[axis];
    for (int64_t d = axis + 1; d < x.type.ndim(); ++d) s += c[d - 1 + ir] * st[d];
    return s;
  });
  return {out};
}

const bool kRegistered = [] {
  auto reg = [](const char* op, FFold fn) { OpRegistry::Global()->Mutable(op).set_fold(fn); };
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) {
    reg(op, CopyFold);
  }
  reg("Dropout", DropoutFold);
  reg("Expand", IndexedCopyFold(ExpandInto));
  reg("Transpose", IndexedCopyFold(TransposeInto));
  reg("Slice", IndexedCopyFold(SliceInto));
  reg("Tile", IndexedCopyFold(TileInto));
  reg("Split", SplitFold);
  reg("Concat", ConcatFold);
  reg("Gather", GatherFold);
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
