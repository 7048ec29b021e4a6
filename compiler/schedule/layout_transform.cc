// A LayoutTransform between NCHW and NCHW[x]c as register transposes.
//
// The two layouts hold the same tile differently: x consecutive pixels of an NCHW[x]c plane are x
// vectors of the x channels (one pixel each), the same tile of NCHW is x vectors of x pixels (one
// channel each). The default schedule writes one layout's vectors a lane at a time from the
// other's (a gather per vector: ~2 cycles per float on AVX-512); this one loads a tile's x
// vectors, transposes them in registers (log2(x) rounds of x interleaving shuffles, one
// instruction each) and stores x vectors. A plane whose size is not a multiple of x ends in a
// tile that overlaps the one before it (the copy is idempotent). Planes smaller than x and blocks
// wider than the target's vectors stay with the default schedule. The group's elementwise
// epilogue, if any, is applied in registers when the output is the blocked one; an NCHW output
// may be reshaped in the group (a Flatten). A group may start with a Cast to float32 (a float16
// model widens each tensor as the next node reads it): the tile's loads widen.
#include <ember/compiler/ir/layout.h>

#include <string>
#include <vector>

#include "epilogue.h"
#include "schedule.h"
#include "tuning.h"

namespace ember::compiler::schedule {
namespace {

using te::Expr;

// The rows of an x-by-x tile (x vectors of x lanes) transposed: lane k of result c is lane c
// of rows[k]. Each round pairs row i with row i + x/2 and interleaves their low halves into one
// result and their high halves into the next; log2(x) rounds transpose the tile.
std::vector<Expr> Transposed(std::vector<Expr> rows) {
  const int x = static_cast<int>(rows.size());
  std::vector<int> low, high;
  for (int k = 0; k < x / 2; ++k) {
    low.insert(low.end(), {k, x + k});
    high.insert(high.end(), {x / 2 + k, x + x / 2 + k});
  }
  for (int done = 1; done < x; done *= 2) {  // log2(x) rounds
    std::vector<Expr> next(x);
    for (int i = 0; i < x / 2; ++i) {
      next[2 * i] = te::Shuffle(rows[i], rows[i + x / 2], low);
      next[2 * i + 1] = te::Shuffle(rows[i], rows[i + x / 2], high);
    }
    rows = std::move(next);
  }
  return rows;
}

// Whether every node after the group's `first` only reshapes its input.
bool OnlyReshapedAfter(const FusedGroup& group, size_t first) {
  for (size_t k = first + 1; k < group.nodes.size(); ++k) {
    const std::string& op = group.nodes[k]->op;
    if (op != "Reshape" && op != "Flatten" && op != "Squeeze" && op != "Unsqueeze") return false;
  }
  return true;
}

// Where the group's transform is: its first node, or its second after a Cast to float32 that only
// the transform reads (a float16 model keeps its tensors in float16 and widens them as the next
// node reads them, so a transform often starts its group with one). -1 when it is neither.
int TransformIndex(const FusedGroup& group) {
  const Node* first = group.nodes[0];
  if (first->op == "LayoutTransform") return 0;
  if (first->op != "Cast" || group.nodes.size() < 2 || first->inputs.size() != 1) return -1;
  const Graph& g = *group.graph;
  const Node* lt = group.nodes[1];
  const DLDataType from = g.value(first->inputs[0]).type.dtype;
  const bool converts = from == kFloat16 || from == kInt8 || from == kUInt8 || from == kInt32;
  if (lt->op != "LayoutTransform" || lt->inputs.size() != 1 || lt->inputs[0] != first->outputs[0] ||
      !converts || g.value(first->outputs[0]).type.dtype != kFloat32 ||
      !IsGroupInput(group, first->inputs[0])) {
    return -1;
  }
  return 1;
}

}  // namespace

bool TryLayoutTransform(const FusedGroup& group, const lower::ScheduleOptions& opts,
                        lower::LoweredFunc* out) {
  if (opts.target == nullptr || group.nodes.empty() || group.outputs.size() != 1) return false;
  const int lt_index = TransformIndex(group);
  if (lt_index < 0 || group.nodes[lt_index]->inputs.size() != 1) return false;
  const Node& lt = *group.nodes[lt_index];
  const Node* cast = lt_index == 1 ? group.nodes[0] : nullptr;
  // What the tile's loads read: the transform's input, or the Cast's before it.
  const int loaded = cast != nullptr ? cast->inputs[0] : lt.inputs[0];
  const int64_t src = LayoutBlock(lt.GetString(kSrcLayoutAttr, "NCHW"));
  const int64_t dst = LayoutBlock(lt.GetString(kDstLayoutAttr, "NCHW"));
  const bool to_blocked = src == 0;
  const int64_t x = to_blocked ? dst : src;
  if ((src != 0) == (dst != 0) || (x != 4 && x != 8 && x != 16)) return false;
  if (x > FloatLanes(ClassifyTarget(*opts.target))) return false;
  const Graph& g = *group.graph;
  const TensorType& in = g.value(lt.inputs[0]).type;
  const std::vector<int64_t>& nchw = to_blocked ? in.shape : g.value(lt.outputs[0]).type.shape;
  if (in.dtype != kFloat32 || nchw.size() != 4 || nchw[1] % x != 0) return false;
  const int64_t plane = nchw[2] * nchw[3], images = nchw[0] * nchw[1] / x;
  if (plane < x) return false;
  // Past the transform only the blocked side's epilogue runs in registers, a pixel's channels
  // being one of its vectors; the NCHW side may only be reshaped (a Flatten before a Gemm): the
  // elements keep their order.
  if (!to_blocked && !OnlyReshapedAfter(group, lt_index)) return false;

  const int lanes = static_cast<int>(x);
  lower::LoweredFunc f;
  lower::Buffer xb, unused;
  EpilogueAt at;
  if (to_blocked) {
    const AnchorOperands operands{loaded, loaded, -1, nullptr};
    if (!BuildEpilogueAt(group, lt, operands, &f, &xb, &unused, &at)) return false;
    if (!EpilogueVectorizes(at, lanes)) return false;
  } else {
    f = GroupFunction(group);
    xb = GroupInputBuffer(group, f, loaded);
    if (!xb) return false;
  }
  const lower::Buffer yb = f.args.back().buffer;

  // One task per tile: (image n * C/x + cb, x consecutive pixels of its plane from q0).
  const int64_t tiles = (plane + x - 1) / x;
  Expr t = te::MakeVar("t");
  Expr image = te::FloorDiv(t, Expr(tiles));
  Expr q0 = te::Min(te::FloorMod(t, Expr(tiles)) * x, Expr(plane - x));
  // Offsets of the tile's x vectors: one pixel's channels each (blocked), one channel's pixels
  // each (NCHW).
  auto pixel_vector = [&](int64_t p) { return (image * plane + q0 + p) * x; };
  auto channel_vector = [&](int64_t c) { return (image * x + c) * plane + q0; };
  std::vector<Expr> rows;
  for (int64_t k = 0; k < x; ++k) {
    Expr row = lower::VectorLoad(xb, to_blocked ? channel_vector(k) : pixel_vector(k), lanes);
    rows.push_back(cast != nullptr ? te::Cast(te::WithLanes(te::Float(32), lanes), row) : row);
  }
  const std::vector<Expr> columns = Transposed(rows);
  std::vector<lower::Stmt> stores;
  const int64_t blocks = nchw[1] / x;
  for (int64_t k = 0; k < x; ++k) {
    if (!to_blocked) {
      stores.push_back(lower::Store(yb, channel_vector(k), columns[k]));
      continue;
    }
    Expr q = q0 + k;
    Expr value = EpilogueOnBlockVector(
        at, te::FloorDiv(image, Expr(blocks)), te::FloorMod(image, Expr(blocks)),
        te::FloorDiv(q, Expr(nchw[3])), te::FloorMod(q, Expr(nchw[3])), columns[k], lanes);
    if (!value.defined()) return false;
    stores.push_back(lower::Store(yb, pixel_vector(k), value));
  }
  const bool par =
      opts.parallel && images * tiles > 1 && images * plane * x >= opts.parallel_min_work;
  f.body = lower::For(t, images * tiles, par ? lower::ForKind::kParallel : lower::ForKind::kSerial,
                      lower::Seq(stores));
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
