// Loop rules (OpDef::loop_kernel) of the ops whose outputs depend on each other or on the order
// of their updates, so that no compute rule over te tensors can say them: CumSum and CumProd
// (scans), TopK (a selection), ScatterElements, ScatterND, TensorScatter and MaxUnpool (updates
// in order, duplicates reduced) and Det (an elimination). Each writes its loops over flat buffers;
// indices read at run time are checked before the body. The image samplers are in
// loop_kernels_sampling.cc.
#include <limits>
#include <string>
#include <vector>

#include "ember/compiler/lower.h"
#include "loop_kernel_util.h"
#include "op_common.h"

namespace ember::compiler::ops {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::ForKind;
using lower::Stmt;

// A shape seen around one axis: [outer][n][inner].
struct AroundAxis {
  int64_t outer = 1, n = 1, inner = 1;
};

AroundAxis Around(const std::vector<int64_t>& shape, int64_t axis) {
  AroundAxis a;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    const int64_t e = shape[static_cast<size_t>(d)];
    (d < axis ? a.outer : d == axis ? a.n : a.inner) *= e;
  }
  return a;
}

// A running sum or product along the axis: y[..., j, ...] = x[..., 0, ...] op ... op x[..., j, ...]
// (exclusive: up to j - 1, the first being the identity; reverse: from the end). Each step combines
// one row with the row before it, so the inner axes run as vectors.
Stmt Cumulative(const Node& n, const Buffer& x, const Buffer& y, int64_t identity,
                Expr (*combine)(Expr, Expr)) {
  const AroundAxis a = Around(InputType(n, 0).shape, n.GetInt("axis"));
  const bool exclusive = n.GetInt("exclusive") != 0, reverse = n.GetInt("reverse") != 0;
  Expr o = te::MakeVar("o"), j = te::MakeVar("j"), i = te::MakeVar("i");
  auto at = [&](const Expr& step) {  // flat index of step `step` of the scan, in scan order
    Expr pos = reverse ? Expr(a.n - 1) - step : step;
    return (o * a.n + pos) * a.inner + i;
  };
  Expr first_value = exclusive ? te::Const(y->dtype, identity) : BufferLoad(x, at(Expr(0)));
  std::vector<Stmt> row{
      lower::For(i, a.inner, ForKind::kVectorized, lower::Store(y, at(Expr(0)), first_value))};
  if (a.n > 1) {
    Expr step = j + 1;
    Expr next = BufferLoad(x, at(exclusive ? j : step));
    row.push_back(
        lower::For(j, a.n - 1, ForKind::kSerial,
                   lower::For(i, a.inner, ForKind::kVectorized,
                              lower::Store(y, at(step), combine(BufferLoad(y, at(j)), next)))));
  }
  return lower::For(o, a.outer, RowsLoop(a.outer, a.outer * a.n * a.inner), lower::Seq(row));
}

Stmt CumSum(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
            lower::LoweredFunc*) {
  return Cumulative(n, in.at(0), out.at(0), 0, [](Expr a, Expr b) { return a + b; });
}

Stmt CumProd(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
             lower::LoweredFunc*) {
  return Cumulative(n, in.at(0), out.at(0), 1, [](Expr a, Expr b) { return a * b; });
}

// The k largest (or smallest) along the axis, best first, ties to the lower index: each element
// in turn is inserted into the output row kept sorted, when it beats the row's last.
Stmt TopK(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
          lower::LoweredFunc*) {
  const Buffer &x = in.at(0), &values = out.at(0), &indices = out.at(1);
  const int64_t axis = n.GetInt("axis"), k = n.GetInt("k");
  const bool largest = n.GetInt("largest") != 0;
  const AroundAxis a = Around(InputType(n, 0).shape, axis);
  Expr row = te::MakeVar("row"), j = te::MakeVar("j"), r = te::MakeVar("r");
  Expr o = te::FloorDiv(row, Expr(a.inner)), i = te::FloorMod(row, Expr(a.inner));
  auto x_at = [&](const Expr& step) { return (o * a.n + step) * a.inner + i; };
  auto out_at = [&](const Expr& slot) { return (o * k + slot) * a.inner + i; };
  auto better = [&](const Expr& p, const Expr& q) { return largest ? p > q : p < q; };
  Expr v = BufferLoad(x, x_at(j));
  Expr held = te::Min(j, Expr(k));  // values the row holds before element j
  // Walking the slots from the last: m moves down one where v beats it, and v lands in the first
  // slot it beats (or the first free one) once the slot before holds a better or equal value.
  Expr m = Expr(k - 1) - r;
  Expr beats = (m < held) && better(v, BufferLoad(values, out_at(m)));
  Expr lands = (m <= held) && ((m == held) || beats) &&
               ((m == 0) || !better(v, BufferLoad(values, out_at(te::Max(m - 1, Expr(0))))));
  Stmt shift =
      lower::If(beats && (m + 1 < k),
                lower::Seq({lower::Store(values, out_at(m + 1), BufferLoad(values, out_at(m))),
                            lower::Store(indices, out_at(m + 1), BufferLoad(indices, out_at(m)))}));
  Stmt land =
      lower::If(lands, lower::Seq({lower::Store(values, out_at(m), v),
                                   lower::Store(indices, out_at(m), te::Cast(indices->dtype, j))}));
  Stmt insert = lower::If((j < k) || better(v, BufferLoad(values, out_at(Expr(k - 1)))),
                          lower::For(r, k, ForKind::kSerial, lower::Seq({shift, land})));
  const int64_t rows = a.outer * a.inner;
  return lower::For(row, rows, RowsLoop(rows, rows * a.n),
                    lower::For(j, a.n, ForKind::kSerial, insert));
}

// out[pos] = reduction(out[pos], update), in the updates' order, over a copy of the data.
Expr Reduced(const Node& n, const Expr& old, const Expr& update) {
  const std::string r = n.GetString("reduction");
  if (r == "add") return old + update;
  if (r == "mul") return old * update;
  if (r == "max") return te::Max(old, update);
  if (r == "min") return te::Min(old, update);
  return update;
}

Stmt CopyData(const Buffer& data, const Buffer& out) {
  Expr e = te::MakeVar("e");
  return lower::For(e, out->size, ForKind::kVectorized, lower::Store(out, e, BufferLoad(data, e)));
}

// ScatterElements: update u goes to the data position of u with the axis replaced by indices[u].
Stmt ScatterElements(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
                     lower::LoweredFunc*) {
  const Buffer &data = in.at(0), &indices = in.at(1), &updates = in.at(2), &y = out.at(0);
  const std::vector<int64_t>& dshape = InputType(n, 0).shape;
  const std::vector<int64_t>& ushape = InputType(n, 1).shape;
  const int64_t axis = n.GetInt("axis"), extent = dshape.at(static_cast<size_t>(axis));
  // One loop per axis of the updates; flat indices of the update and of its place in the data.
  std::vector<Expr> vars;
  Expr u = 0, pos = 0;
  for (size_t d = 0; d < ushape.size(); ++d) {
    vars.push_back(te::MakeVar("u" + std::to_string(d)));
    u = u * ushape[d] + vars.back();
  }
  for (size_t d = 0; d < ushape.size(); ++d) {
    Expr at =
        static_cast<int64_t>(d) == axis ? IndexFromEnd(BufferLoad(indices, u), extent) : vars[d];
    pos = pos * dshape[d] + at;
  }
  Stmt body = lower::Store(y, pos, Reduced(n, BufferLoad(y, pos), BufferLoad(updates, u)));
  for (size_t d = ushape.size(); d-- > 0;)
    body = lower::For(vars[d], ushape[d], ForKind::kSerial, body);
  return lower::Seq(
      {CheckInput(n, 1, indices, IndicesIntoAxis(dshape, axis)), CopyData(data, y), body});
}

// ScatterND: tuple t of indices addresses a slice of data past its first k axes; update slice t
// goes there.
Stmt ScatterND(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
               lower::LoweredFunc*) {
  const Buffer &data = in.at(0), &indices = in.at(1), &updates = in.at(2), &y = out.at(0);
  const std::vector<int64_t>& dshape = InputType(n, 0).shape;
  const int64_t k = InputType(n, 1).shape.back();
  const int64_t tuples = indices->size / k;
  int64_t slice = 1;
  for (size_t d = static_cast<size_t>(k); d < dshape.size(); ++d) slice *= dshape[d];
  std::vector<Stmt> body{};
  Expr t = te::MakeVar("t"), s = te::MakeVar("s");
  Expr offset = 0;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t extent = dshape[static_cast<size_t>(j)];
    body.push_back(CheckInput(n, 1, indices, IndicesIntoAxis(dshape, j, j, k)));
    offset = offset * extent + IndexFromEnd(BufferLoad(indices, t * k + j), extent);
  }
  Expr pos = offset * slice + s;
  body.push_back(CopyData(data, y));
  // Within a slice the positions are distinct, so its elements run as vectors; the slices run in
  // order, as duplicates must.
  body.push_back(lower::For(
      t, tuples, ForKind::kSerial,
      lower::For(s, slice, ForKind::kVectorized,
                 lower::Store(
                     y, pos, Reduced(n, BufferLoad(y, pos), BufferLoad(updates, t * slice + s))))));
  return lower::Seq(body);
}

// TensorScatter's write_indices: where each batch's update starts along the cache's axis of
// `length`; linear mode needs the `rows` written to fit from there, circular mode wraps them.
RunTimeIndexRange WritePositions(int64_t length, int64_t rows, bool circular) {
  RunTimeIndexRange r;
  r.extent = circular ? std::numeric_limits<int64_t>::max() : length - rows + 1;
  r.non_negative = true;
  r.input = "write_indices";
  r.what = circular ? std::string("a negative write index")
                    : "a write index outside 0.." + std::to_string(length - rows) + " (the " +
                          std::to_string(rows) + " updated positions must fit the cache's " +
                          std::to_string(length) + ")";
  return r;
}

// TensorScatter (opset 24): the cache copied, then row s of the update, for each index of the
// axes before `axis` (the first being the batch b), written at position write_indices[b] + s
// along the axis (modulo its length in circular mode). Rows of one prefix never collide.
Stmt TensorScatter(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
                   lower::LoweredFunc*) {
  const Buffer &cache = in.at(0), &update = in.at(1), &y = out.at(0);
  const std::vector<int64_t>& shape = InputType(n, 0).shape;
  const int64_t axis = n.GetInt("axis"), rows = InputType(n, 1).shape.at(static_cast<size_t>(axis));
  const bool circular = n.GetString("mode") == "circular";
  const AroundAxis c = Around(shape, axis);
  std::vector<Stmt> body;
  Expr o = te::MakeVar("o"), s = te::MakeVar("s"), i = te::MakeVar("i");
  Expr start = 0;
  if (in.size() > 2) {
    body.push_back(CheckInput(n, 2, in[2], WritePositions(c.n, rows, circular)));
    start = te::Cast(te::Index(), BufferLoad(in[2], te::FloorDiv(o, c.outer / shape[0])));
  }
  body.push_back(CopyData(cache, y));
  if (rows > 0 && c.inner > 0) {
    Expr pos = circular ? te::FloorMod(te::FloorMod(start, Expr(c.n)) + s, Expr(c.n)) : start + s;
    Stmt write = lower::Store(y, (o * c.n + pos) * c.inner + i,
                              BufferLoad(update, (o * rows + s) * c.inner + i));
    body.push_back(lower::For(o, c.outer, RowsLoop(c.outer, c.outer * rows * c.inner),
                              lower::For(s, rows, ForKind::kSerial,
                                         lower::For(i, c.inner, ForKind::kVectorized, write))));
  }
  return lower::Seq(body);
}

// Det: each trailing M x M matrix reduced to upper-triangular form on a copy (a workspace) by
// Gaussian elimination with partial pivoting; the determinant is the product of the pivots,
// negated at each row swap (0 once a column has no pivot). The matrices run one after another.
Stmt Det(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
         lower::LoweredFunc* f) {
  const Buffer &x = in.at(0), &y = out.at(0);
  const int64_t m = InputType(n, 0).shape.back(), square = m * m;
  const te::DataType t = x->dtype, index = te::Index();
  auto buffer = [&](const char* suffix, te::DataType dtype, int64_t size, lower::BufferScope s) {
    Buffer b = lower::NewBuffer(n.name + suffix, dtype, size, s);
    (s == lower::BufferScope::kLocal ? f->locals : f->workspaces).push_back(b);
    return b;
  };
  const Buffer a = buffer("_rows", t, square, lower::BufferScope::kWorkspace);
  const Buffer det = buffer("_det", t, 1, lower::BufferScope::kLocal);
  const Buffer best = buffer("_best", t, 1, lower::BufferScope::kLocal);
  const Buffer held = buffer("_held", t, 1, lower::BufferScope::kLocal);
  const Buffer pivot_row = buffer("_pivot_row", index, 1, lower::BufferScope::kLocal);
  Expr b = te::MakeVar("b"), e = te::MakeVar("e"), k = te::MakeVar("k"), i = te::MakeVar("i"),
       j = te::MakeVar("j");
  auto at = [&](const Expr& row, const Expr& col) { return BufferLoad(a, row * m + col); };
  auto set = [&](const Buffer& s, const Expr& v) { return lower::Store(s, Expr(0), v); };
  auto get = [&](const Buffer& s) { return BufferLoad(s, Expr(0)); };
  // The row at or below k whose entry in column k is largest in magnitude.
  Stmt choose = lower::Seq(
      {set(pivot_row, k), set(best, te::Abs(at(k, k))),
       lower::For(i, m, ForKind::kSerial,
                  lower::If(i > k && te::Abs(at(i, k)) > get(best),
                            lower::Seq({set(pivot_row, i), set(best, te::Abs(at(i, k)))})))});
  Expr p = get(pivot_row);
  Stmt swap = lower::If(
      p != k,
      lower::Seq({lower::For(j, m, ForKind::kSerial,
                             lower::Seq({set(held, at(k, j)), lower::Store(a, k * m + j, at(p, j)),
                                         lower::Store(a, p * m + j, get(held))})),
                  set(det, te::Const(t, 0) - get(det))}));
  // Rows below k lose their multiple of row k (held: the multiplier).
  Stmt eliminate = lower::If(
      at(k, k) != te::Const(t, 0),
      lower::For(
          i, m, ForKind::kSerial,
          lower::If(
              i > k,
              lower::Seq(
                  {set(held, at(i, k) / at(k, k)),
                   lower::For(j, m, ForKind::kSerial,
                              lower::If(j > k, lower::Store(a, i * m + j,
                                                            at(i, j) - get(held) * at(k, j))))}))));
  Stmt matrix = lower::Seq(
      {lower::For(e, square, ForKind::kSerial, lower::Store(a, e, BufferLoad(x, b * square + e))),
       set(det, te::Const(t, 1)),
       lower::For(k, m, ForKind::kSerial,
                  lower::Seq({choose, swap, set(det, get(det) * at(k, k)), eliminate})),
       lower::Store(y, b, get(det))});
  return lower::For(b, y->size, ForKind::kSerial, matrix);
}

// MaxPool's indices: flat positions in the unpooled shape, from 0.
RunTimeIndexRange UnpoolPositions(const std::vector<int64_t>& indexed, int64_t positions) {
  RunTimeIndexRange r;
  r.extent = positions;
  r.non_negative = true;
  r.input = "indices";
  r.what = "a position outside 0.." + std::to_string(positions - 1) + " (the unpooled " +
           ShapeToString(indexed) + ")";
  return r;
}

// MaxUnpool: zeros, and each input value at the output position its index names: MaxPool's
// Indices, flat over the unpooled shape ("indexed_shape"), which a larger output pads at the end
// of each axis. A later value wins where two indices name the same position.
Stmt MaxUnpool(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
               lower::LoweredFunc*) {
  const Buffer &x = in.at(0), &at = in.at(1), &y = out.at(0);
  const std::vector<int64_t> indexed = n.GetInts("indexed_shape");
  const std::vector<int64_t>& shape = GraphScope::Current()->value(n.outputs.at(0)).type.shape;
  int64_t positions = 1;
  for (int64_t d : indexed) positions *= d;
  Expr e = te::MakeVar("e"), k = te::MakeVar("k");
  // The flat index in the indexed shape, re-laid in the output's.
  Expr rest = te::Cast(te::Index(), BufferLoad(at, k)), pos = 0;
  int64_t stride = 1;
  for (size_t d = indexed.size(); d-- > 0;) {
    pos = pos + te::FloorMod(rest, Expr(indexed[d])) * stride;
    rest = te::FloorDiv(rest, Expr(indexed[d]));
    stride *= shape[d];
  }
  return lower::Seq(
      {CheckInput(n, 1, at, UnpoolPositions(indexed, positions)),
       lower::For(e, y->size, ForKind::kVectorized, lower::Store(y, e, te::Const(y->dtype, 0))),
       lower::For(k, x->size, ForKind::kSerial, lower::Store(y, pos, BufferLoad(x, k)))});
}

const bool kRegistered = [] {
  RegisterLoopKernel("CumSum", CumSum);
  RegisterLoopKernel("CumProd", CumProd);
  RegisterLoopKernel("TopK", TopK);
  RegisterLoopKernel("ScatterElements", ScatterElements);
  RegisterLoopKernel("ScatterND", ScatterND);
  RegisterLoopKernel("TensorScatter", TensorScatter);
  RegisterLoopKernel("MaxUnpool", MaxUnpool);
  RegisterLoopKernel("Det", Det);
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
