// Loop rules (OpDef::loop_kernel) of the ops whose outputs depend on each other or on the order
// of their updates, so that no compute rule over te tensors can say them: CumSum and CumProd
// (scans), TopK (a selection), ScatterElements and ScatterND (updates in order, duplicates
// reduced). Each writes its loops over flat buffers; indices read at run time are checked before
// the body.
#include <limits>
#include <string>
#include <vector>

#include "ember/compiler/lower.h"
#include "ir/shape_util.h"
#include "op_common.h"

namespace ember::compiler::ops {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::ForKind;
using lower::Stmt;

// A loop nest does at least this many element updates before its rows run in parallel.
constexpr int64_t kParallelWork = int64_t{1} << 15;

ForKind RowsLoop(int64_t rows, int64_t work) {
  return rows > 1 && work >= kParallelWork ? ForKind::kParallel : ForKind::kSerial;
}

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

// The check, before the kernel's loops, that input `i` (held in `indices`) lies in `range`.
Stmt CheckInput(const Node& n, size_t i, const Buffer& indices, const RunTimeIndexRange& range) {
  const std::string& name = GraphScope::Current()->value(n.inputs.at(i)).name;
  return lower::CheckIndices(indices, indices->size, range.extent,
                             RunTimeIndexMessage(n, range, name), range.first, range.step,
                             range.non_negative);
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

// Col2Im: row (c, k) of the columns holds, at sliding position l, the value at offset k of the
// block (block_shape, row-major) placed at l; each is added to the image pixel it covers, those
// in the padding dropped. Image planes run in parallel.
Stmt Col2Im(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
            lower::LoweredFunc*) {
  const Buffer &x = in.at(0), &y = out.at(0);
  const std::vector<int64_t> image = n.GetInts("image_shape"), block = n.GetInts("block_shape"),
                             d = n.GetInts("dilations"), p = n.GetInts("pads"),
                             s = n.GetInts("strides");
  const size_t r = image.size();
  int64_t blocks = 1, pixels = 1;
  for (size_t i = 0; i < r; ++i) {
    blocks *= block[i];
    pixels *= image[i];
  }
  const int64_t positions = InputType(n, 0).shape.at(2), planes = y->size / pixels;
  Expr plane = te::MakeVar("plane"), k = te::MakeVar("k"), l = te::MakeVar("l");
  Expr inside = te::Const(te::Bool(), 1), at = 0, k_rest = k, l_rest = l;
  for (size_t i = r; i-- > 0;) {  // the last axis varies fastest in both k and l
    const int64_t slides = (image[i] + p[i] + p[r + i] - d[i] * (block[i] - 1) - 1) / s[i] + 1;
    Expr pos = te::FloorMod(l_rest, Expr(slides)) * s[i] - p[i] +
               te::FloorMod(k_rest, Expr(block[i])) * d[i];
    k_rest = te::FloorDiv(k_rest, Expr(block[i]));
    l_rest = te::FloorDiv(l_rest, Expr(slides));
    inside = inside && pos >= Expr(0) && pos < Expr(image[i]);
    int64_t stride = 1;
    for (size_t j = i + 1; j < r; ++j) stride *= image[j];
    at = at + pos * stride;
  }
  Expr target = plane * pixels + at;
  Stmt add = lower::If(
      inside,
      lower::Store(y, target,
                   BufferLoad(y, target) + BufferLoad(x, (plane * blocks + k) * positions + l)));
  Expr e = te::MakeVar("e");
  return lower::Seq(
      {lower::For(e, y->size, ForKind::kVectorized, lower::Store(y, e, te::Const(y->dtype, 0))),
       lower::For(plane, planes, RowsLoop(planes, x->size),
                  lower::For(k, blocks, ForKind::kSerial,
                             lower::For(l, positions, ForKind::kSerial, add)))});
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

// RoiAlign's batch_indices: images of the batch.
RunTimeIndexRange BatchImages(int64_t images) {
  RunTimeIndexRange r;
  r.extent = images;
  r.non_negative = true;
  r.input = "batch_indices";
  r.what = "an image outside 0.." + std::to_string(images - 1) + " (the batch)";
  return r;
}

// RoiAlign: output bin (ph, pw) of roi r is the mean (or max) of a grid of bilinear samples of
// channel c of the roi's image, as Mask R-CNN defines them: a sample more than a pixel outside the
// map weighs 0, one past the last row or column reads it; max mode keeps the largest of each
// sample's four weighted corners (ONNX's reference and ORT). The grid is sampling_ratio on a side,
// or with sampling_ratio 0 ceil(bin size) for each roi, a number known only at run time: then
// the loops cover a window of 2 * size + 3 samples from the first within a pixel of the map (the
// samples are at least half a pixel apart, so none that reads the map is left out) and the rest
// count as the zeros they are. rois run in parallel.
Stmt RoiAlign(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
              lower::LoweredFunc* f) {
  const Buffer &x = in.at(0), &rois = in.at(1), &images = in.at(2), &y = out.at(0);
  const std::vector<int64_t>& xs = InputType(n, 0).shape;
  const int64_t channels = xs[1], h = xs[2], w = xs[3], count = rois->size / 4;
  const int64_t oh = n.GetInt("output_height"), ow = n.GetInt("output_width");
  const int64_t ratio = n.GetInt("sampling_ratio");
  const bool adaptive = ratio == 0, max = n.GetString("mode") == "max";
  const bool half = n.GetInt("half_pixel") != 0;
  const te::DataType t = x->dtype;
  auto c_ = [&](double v) { return te::Const(t, v); };
  auto as_t = [&](const Expr& i) { return Expr(te::Cast(t, i)); };
  Expr r = te::MakeVar("r"), c = te::MakeVar("c"), ph = te::MakeVar("ph"), pw = te::MakeVar("pw"),
       iy = te::MakeVar("iy"), ix = te::MakeVar("ix");
  auto local = [&](const char* suffix) {
    Buffer b = lower::NewBuffer(n.name + suffix, t, 1, lower::BufferScope::kLocal);
    f->locals.push_back(b);
    return b;
  };
  const Buffer acc = local("_acc"), seen = local("_seen");
  auto corner = [&](int k) {
    return BufferLoad(rois, r * 4 + k) * c_(n.GetFloat("spatial_scale")) - c_(half ? 0.5 : 0.0);
  };
  // One side of the bins (k = 1: rows, 0: columns): the sample coordinate of loop variable i,
  // whether i is one of the grid's, and the grid's size.
  struct Side {
    Expr coordinate, taken, grid;
  };
  auto side = [&](int k, const Expr& bin_index, const Expr& i, int64_t bins) {
    Expr extent = corner(k + 2) - corner(k);
    if (!half) extent = te::Select(extent > c_(1), extent, c_(1));
    const Expr bin = extent / c_(static_cast<double>(bins));
    const Expr grid = adaptive ? te::Ceil(bin) : c_(static_cast<double>(ratio));
    const Expr start = corner(k) + as_t(bin_index) * bin;
    Expr first = c_(0);
    if (adaptive) {  // the first sample at or past -1: (first + 0.5) * bin / grid >= -1 - start
      const Expr f = te::Ceil((c_(-1) - start) * grid / bin - c_(0.5));
      first = te::Select(f > c_(0), f, c_(0));  // NaN (an empty roi) too
    }
    const Expr at = first + as_t(i);
    return Side{start + (at + c_(0.5)) * bin / grid, at < grid, grid};
  };
  const Side rows = side(1, ph, iy, oh), cols = side(0, pw, ix, ow);
  const Expr sy = rows.coordinate, sx = cols.coordinate;
  const Expr outside = sy < c_(-1) || sy > c_(static_cast<double>(h)) || sx < c_(-1) ||
                       sx > c_(static_cast<double>(w));
  // Clamped into the map whatever the roi (NaN and infinities too), so the loads stay inside.
  auto clamp = [&](const Expr& v, int64_t size) {
    const Expr low = te::Select(v > c_(0), v, c_(0));
    return te::Select(low < c_(static_cast<double>(size - 1)), low,
                      c_(static_cast<double>(size - 1)));
  };
  const Expr yc = clamp(sy, h), xc = clamp(sx, w);
  const Expr y0 = te::Floor(yc), x0 = te::Floor(xc);
  const Expr ly = yc - y0, lx = xc - x0;  // 0 on the last row and column
  const Expr keep = te::Select(outside, c_(0), c_(1));
  const Expr plane = (Expr(te::Cast(te::Index(), BufferLoad(images, r))) * channels + c) * h;
  auto pixel = [&](const Expr& row, const Expr& col, int64_t dy, int64_t dx) {
    Expr yy = te::Min(te::Cast(te::Index(), row) + dy, Expr(h - 1));
    Expr xx = te::Min(te::Cast(te::Index(), col) + dx, Expr(w - 1));
    return BufferLoad(x, (plane + yy) * w + xx);
  };
  const Expr w1 = (c_(1) - ly) * (c_(1) - lx) * keep, w2 = (c_(1) - ly) * lx * keep,
             w3 = ly * (c_(1) - lx) * keep, w4 = ly * lx * keep;
  const Expr v1 = w1 * pixel(y0, x0, 0, 0), v2 = w2 * pixel(y0, x0, 0, 1),
             v3 = w3 * pixel(y0, x0, 1, 0), v4 = w4 * pixel(y0, x0, 1, 1);
  const Expr sample = max ? te::Max(te::Max(te::Max(v1, v2), v3), v4) : v1 + v2 + v3 + v4;
  const Expr so_far = BufferLoad(acc, Expr(0)), visited = BufferLoad(seen, Expr(0));
  Stmt add =
      lower::Seq({lower::Store(acc, Expr(0), max ? te::Max(so_far, sample) : so_far + sample),
                  lower::Store(seen, Expr(0), visited + c_(1))});
  // Past the grid's end a row (or column) of the window is skipped whole, before any sampling.
  auto window = [&](int64_t span_h, int64_t span_w) {
    auto within = [&](const Expr& taken, Stmt body) {
      return adaptive ? lower::If(taken, body) : body;
    };
    return lower::For(
        iy, span_h, ForKind::kSerial,
        within(rows.taken, lower::For(ix, span_w, ForKind::kSerial, within(cols.taken, add))));
  };
  // A box inside the map has grids of at most ceil((size + 1) / bins) a side: those take a window
  // that size (all their samples), larger ones the window that covers the map.
  const int64_t fit_h = CeilDiv(h + 1, oh) + 1, fit_w = CeilDiv(w + 1, ow) + 1;
  const int64_t span_h = adaptive ? 2 * h + 3 : ratio, span_w = adaptive ? 2 * w + 3 : ratio;
  Stmt samples = !adaptive ? window(ratio, ratio)
                           : lower::If(rows.grid <= c_(static_cast<double>(fit_h)) &&
                                           cols.grid <= c_(static_cast<double>(fit_w)),
                                       window(std::min(fit_h, span_h), std::min(fit_w, span_w)),
                                       window(span_h, span_w));
  // ORT and ONNX divide by the grid's size, at least 1; max over a grid with samples past the
  // window includes their zeros, and an empty grid gives 0.
  const Expr total = rows.grid * cols.grid;
  const Expr result = max ? te::Select(total < c_(1), c_(0),
                                       te::Select(visited < total, te::Max(so_far, c_(0)), so_far))
                          : so_far / te::Select(total > c_(1), total, c_(1));
  Stmt bin = lower::Seq({lower::Store(acc, Expr(0), max ? te::MinValue(t) : c_(0)),
                         lower::Store(seen, Expr(0), c_(0)), samples,
                         lower::Store(y, ((r * channels + c) * oh + ph) * ow + pw, result)});
  return lower::Seq(
      {CheckInput(n, 2, images, BatchImages(xs[0])),
       lower::For(r, count, RowsLoop(count, y->size * span_h * span_w),
                  lower::For(c, channels, ForKind::kSerial,
                             lower::For(ph, oh, ForKind::kSerial,
                                        lower::For(pw, ow, ForKind::kSerial, bin))))});
}

// DeformConv's columns: row (c, tap) of image n holds, at each output position, channel c sampled
// bilinearly at the tap's place in the window plus the offset its offset group gives it there
// (times the mask, DCN v2), corners outside the image reading 0 and a sample a pixel or more
// outside it 0. Channels of all images run in parallel.
Stmt DeformableColumns(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
                       lower::LoweredFunc*) {
  const Buffer &x = in.at(0), &offset = in.at(1), &cols = out.at(0);
  const std::vector<int64_t>& xs = InputType(n, 0).shape;
  const std::vector<int64_t>& os = InputType(n, 1).shape;
  const int64_t channels = xs[1], h = xs[2], w = xs[3], oh = os[2], ow = os[3];
  const std::vector<int64_t> k = n.GetInts("kernel_shape"), s = n.GetInts("strides"),
                             d = n.GetInts("dilations"), p = n.GetInts("pads");
  const int64_t taps = k[0] * k[1], positions = oh * ow, groups = n.GetInt("offset_group");
  const te::DataType t = x->dtype;
  auto c_ = [&](double v) { return te::Const(t, v); };
  Expr nc = te::MakeVar("nc"), tap = te::MakeVar("tap"), l = te::MakeVar("l");
  const Expr image = te::FloorDiv(nc, Expr(channels)), c = te::FloorMod(nc, Expr(channels));
  const Expr group = te::FloorDiv(c, Expr(channels / groups));
  const Expr at = (image * groups + group) * taps + tap;  // this tap in the offset group
  const Expr dy = BufferLoad(offset, (at * 2) * positions + l),
             dx = BufferLoad(offset, (at * 2 + 1) * positions + l);
  const Expr sy = Expr(te::Cast(t, te::FloorDiv(l, Expr(ow)) * s[0] - p[0] +
                                       te::FloorDiv(tap, Expr(k[1])) * d[0])) +
                  dy;
  const Expr sx = Expr(te::Cast(t, te::FloorMod(l, Expr(ow)) * s[1] - p[1] +
                                       te::FloorMod(tap, Expr(k[1])) * d[1])) +
                  dx;
  // NaN and infinite offsets fail `inside` and read (0, 0) weighted by 0.
  const Expr inside = sy > c_(-1) && sy < c_(static_cast<double>(h)) && sx > c_(-1) &&
                      sx < c_(static_cast<double>(w));
  const Expr yc = te::Select(inside, sy, c_(0)), xc = te::Select(inside, sx, c_(0));
  const Expr y0 = te::Floor(yc), x0 = te::Floor(xc);
  const Expr ly = yc - y0, lx = xc - x0;
  const Expr iy = te::Cast(te::Index(), y0), ix = te::Cast(te::Index(), x0);
  const Expr plane = nc * h;
  auto corner = [&](int64_t oy, int64_t ox, const Expr& weight) {
    const Expr yy = iy + oy, xx = ix + ox;
    const Expr valid = inside && yy >= Expr(0) && yy < Expr(h) && xx >= Expr(0) && xx < Expr(w);
    const Expr ry = te::Min(te::Max(yy, Expr(0)), Expr(h - 1));
    const Expr rx = te::Min(te::Max(xx, Expr(0)), Expr(w - 1));
    return te::Select(valid, weight * BufferLoad(x, (plane + ry) * w + rx), c_(0));
  };
  Expr value = corner(0, 0, (c_(1) - ly) * (c_(1) - lx)) + corner(0, 1, (c_(1) - ly) * lx) +
               corner(1, 0, ly * (c_(1) - lx)) + corner(1, 1, ly * lx);
  if (in.size() > 2) value = value * BufferLoad(in[2], at * positions + l);
  const int64_t rows = xs[0] * channels;
  return lower::For(
      nc, rows, RowsLoop(rows, cols->size),
      lower::For(tap, taps, ForKind::kSerial,
                 lower::For(l, positions, ForKind::kSerial,
                            lower::Store(cols, (nc * taps + tap) * positions + l, value))));
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
  auto reg = [](const char* op, FLoopKernel fn) {
    OpRegistry::Global()->Mutable(op).set_loop_kernel(std::move(fn));
  };
  reg("CumSum", CumSum);
  reg("CumProd", CumProd);
  reg("TopK", TopK);
  reg("ScatterElements", ScatterElements);
  reg("ScatterND", ScatterND);
  reg("TensorScatter", TensorScatter);
  reg("MaxUnpool", MaxUnpool);
  reg("Col2Im", Col2Im);
  reg("Det", Det);
  reg("RoiAlign", RoiAlign);
  reg("DeformableColumns", DeformableColumns);
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
