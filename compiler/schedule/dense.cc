// Dense products, Y[M][N] = A[M][K] x W[K][N] (+ bias[N]), as CanonicalizeDense leaves them (Gemm
// with transA = transB = 0, alpha = beta = 1), followed by elementwise epilogue nodes; and batched
// MatMuls (attention's Q K^T and P V), one such product per batch index, W per batch or shared.
//
// The register tile is `rows` rows of A times `vectors` SIMD vectors of output columns: each k
// adds a broadcast A[m][k] times the tile's weight vectors W[k][n0...], so every weight load
// feeds `rows` FMAs and every A value `vectors`. The epilogue (bias, activation, residual) is
// applied to the accumulators before the one store. With lane steps (AArch64), a row's A values
// of several k come in one vector load where K allows and the registers hold it.
//
// Columns run in panels of vectors * lanes. A task copies its panel of W (K rows of one panel
// width, N floats apart in W) into a contiguous workspace slice first, then runs its row tiles
// against it: read in place, a panel's rows fall on a few L1 sets whenever N * 4 bytes is a
// multiple of 4 KiB. A single row (a GEMV) reads a W that is not constant in place, each weight
// being used once (constant weights are packed at compile time for every row count). When
// there are fewer panels than tasks would want, the row tiles of a panel are split between tasks,
// each with a copy of its own. The columns left over after the last full panel take whole
// vectors, then one vector each of half, a quarter, ... of the width, reading W in place.
#include <ember/compiler/ir/causal_mask.h>
#include <ember/compiler/ir/weight_layout.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "epilogue.h"
#include "loop_builders.h"
#include "schedule.h"
#include "tuning.h"

namespace ember::compiler::schedule {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::ForKind;
using lower::Stmt;
using te::Expr;

// Rows from which copying a panel pays for itself (a GEMV reads each weight once).
constexpr int64_t kMinRowsToPack = 4;

struct DenseGroup {
  const Node* gemm = nullptr;
  int a_id = -1, w_id = -1, bias_id = -1;
  int64_t m = 0, k = 0, n = 0;
  bool bias_is_row = false;  // bias shaped [1][N] rather than [N]
  int64_t packed_width = 0;  // > 0: W stored in panels of this many columns (PackDenseWeights)
  std::vector<int64_t> batch_shape;  // a batched MatMul's leading axes; empty for a Gemm
  int64_t batch = 1;                 // their product
  bool w_per_batch = false;          // W holds a matrix per batch index (else one for all)
};

bool IsF32Matrix(const TensorType& t) { return t.dtype == kFloat32 && t.shape.size() == 2; }

// The stored types the epilogue may end in: float32, or an exact product's int32, or the
// requantized bytes of a QLinearMatMul on the float path.
bool StoresAs(const TensorType& out) {
  return out.dtype == kFloat32 || out.dtype == kInt32 || out.dtype == kUInt8 || out.dtype == kInt8;
}

// A float32 MatMul of A [batch..., M, K] and W [batch..., K, N] (W's leading axes all A's, or all
// 1: one W for every batch index) whose output is [batch..., M, N].
bool MatchBatchedMatMul(const FusedGroup& group, const Node& mm, DenseGroup* d) {
  const Graph& g = *group.graph;
  if (mm.inputs.size() != 2 || mm.outputs.size() != 1) return false;
  const TensorType& a = g.value(mm.inputs[0]).type;
  const TensorType& w = g.value(mm.inputs[1]).type;
  if (a.dtype != kFloat32 || w.dtype != kFloat32 || a.ndim() < 3 || w.ndim() != a.ndim()) {
    return false;
  }
  const size_t lead = static_cast<size_t>(a.ndim() - 2);
  const std::vector<int64_t> batch(a.shape.begin(), a.shape.begin() + lead);
  bool per_batch = true, shared = true;
  for (size_t i = 0; i < lead; ++i) {
    per_batch = per_batch && w.shape[i] == batch[i];
    shared = shared && w.shape[i] == 1;
  }
  if ((!per_batch && !shared) || w.shape[lead] != a.shape[lead + 1]) return false;
  if (!IsGroupInput(group, mm.inputs[0]) || !IsGroupInput(group, mm.inputs[1])) return false;
  d->gemm = &mm;
  d->a_id = mm.inputs[0];
  d->w_id = mm.inputs[1];
  d->m = a.shape[lead];
  d->k = a.shape[lead + 1];
  d->n = w.shape[lead + 1];
  d->batch_shape = batch;
  for (int64_t b : batch) d->batch *= b;
  d->w_per_batch = per_batch && d->batch > 1;
  std::vector<int64_t> want = batch;
  want.push_back(d->m);
  want.push_back(d->n);
  const TensorType& out = g.value(group.outputs[0]).type;
  return d->batch > 0 && StoresAs(out) && out.shape == want;
}

bool MatchDenseGroup(const FusedGroup& group, DenseGroup* d) {
  if (group.nodes.empty() || group.outputs.size() != 1) return false;
  const Graph& g = *group.graph;
  const Node& gemm = *group.nodes.front();
  if (gemm.op == "MatMul") return MatchBatchedMatMul(group, gemm, d);
  if (gemm.op != "Gemm" || gemm.outputs.size() != 1 || !gemm.HasInput(0) || !gemm.HasInput(1)) {
    return false;
  }
  if (gemm.GetInt("transA", 0) != 0 || gemm.GetInt("transB", 0) != 0 ||
      gemm.GetFloat("alpha", 1.0) != 1.0) {
    return false;
  }
  const TensorType& a = g.value(gemm.inputs[0]).type;
  const TensorType& w = g.value(gemm.inputs[1]).type;
  if (!IsF32Matrix(a) || !IsF32Matrix(w) || a.shape[1] != w.shape[0]) return false;
  if (!IsGroupInput(group, gemm.inputs[0]) || !IsGroupInput(group, gemm.inputs[1])) return false;
  d->gemm = &gemm;
  d->a_id = gemm.inputs[0];
  d->w_id = gemm.inputs[1];
  d->m = a.shape[0];
  d->k = a.shape[1];
  d->n = w.shape[1];
  d->packed_width = gemm.GetInt(kPackedDenseWidthAttr, 0);
  if (gemm.HasInput(2)) {
    // A bias per output column; other broadcasts of C take the default schedule.
    const TensorType& c = g.value(gemm.inputs[2]).type;
    const bool vector = c.shape == std::vector<int64_t>{d->n};
    const bool row = c.shape == std::vector<int64_t>{1, d->n};
    if (gemm.GetFloat("beta", 1.0) != 1.0 || c.dtype != kFloat32 || !(vector || row) ||
        !IsGroupInput(group, gemm.inputs[2])) {
      return false;
    }
    d->bias_id = gemm.inputs[2];
    d->bias_is_row = row;
  }
  // The epilogue computes in float32 and may end in a cast: an exact product's int32, or the
  // requantized bytes of a QLinearMatMul on the float path.
  const TensorType& out = g.value(group.outputs[0]).type;
  return StoresAs(out) && out.shape == std::vector<int64_t>{d->m, d->n};
}

// Where a tile reads weight (k, j), j counted from the tile's first column: buf[base + k * stride
// + j] (W itself: stride N; a packed panel: stride = the panel width).
struct WeightSource {
  Buffer buf;
  Expr base;
  int64_t stride;
};

struct DenseContext {
  const DenseGroup& d;
  Buffer a, w, out;
  const EpilogueAt& at;
  lower::LoweredFunc* f;  // receives the accumulator locals
  int lane_steps;         // DenseParams::lane_steps
  int registers;          // vector registers of the target
  Expr b = Expr(0);       // the batch index the statements being built compute (a batched MatMul)
  // Attention masked past a diagonal (kCausalFromAttr, > 0 when set): the group's output is
  // masked from column m + masked_from of row m on, so tiles wholly there store -inf; A is 0
  // from column m + a_zero_from on, so a tile's sum over k stops at its last row's.
  int64_t masked_from = 0, a_zero_from = 0;

  // Where batch index b's A, W and output matrices start.
  Expr ABase() const { return d.batch > 1 ? b * (d.m * d.k) : Expr(0); }
  Expr WBase() const { return d.w_per_batch ? b * (d.k * d.n) : Expr(0); }
  Expr OutBase() const { return d.batch > 1 ? b * (d.m * d.n) : Expr(0); }
  // The output element (row m, column col) of batch index b, as the epilogue indexes it.
  std::vector<Expr> OutIndex(const Expr& m, const Expr& col) const {
    std::vector<Expr> index(d.batch_shape.size());
    int64_t inner = 1;
    for (size_t i = d.batch_shape.size(); i-- > 0;) {
      index[i] = te::FloorMod(te::FloorDiv(b, Expr(inner)), Expr(d.batch_shape[i]));
      inner *= d.batch_shape[i];
    }
    index.push_back(m);
    index.push_back(col);
    return index;
  }
};

// The group's output at row m, columns n0 .. n0 + lanes - 1, from the accumulator vector there.
Expr EpilogueColumns(const DenseContext& c, const Expr& m, const Expr& n0, int lanes,
                     const Expr& acc) {
  Expr col = te::MakeVar("col");
  return lower::VectorizeLanes(c.at(c.OutIndex(m, col), acc), col.get(), n0, lanes);
}

// A tile of a causal mask's scores wholly past its rows' last keys: -inf, the weight 0 the mask
// gives them, in every element.
Stmt MaskedTile(const DenseContext& c, const Expr& m0, int64_t rows, const Expr& n0,
                int64_t vectors, int lanes) {
  std::vector<Stmt> stores;
  const Expr lowest = te::Broadcast(F32(-std::numeric_limits<double>::infinity()), lanes);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t v = 0; v < vectors; ++v) {
      stores.push_back(
          lower::Store(c.out, c.OutBase() + (m0 + i) * c.d.n + n0 + v * lanes, lowest));
    }
  }
  return lower::Seq(stores);
}

// One tile: rows [m0, m0 + rows) times `vectors` vectors of `lanes` columns from n0. Lane steps
// (one vector of A per row for that many k) where K is a multiple and the rows' vectors fit.
Stmt MakeTile(const DenseContext& c, const std::string& tag, const Expr& m0, int64_t rows,
              const Expr& n0, int64_t vectors, int lanes, const WeightSource& w) {
  const int steps =
      c.lane_steps > 1 && c.d.k % c.lane_steps == 0 && rows <= LaneTileRows(c.registers, vectors)
          ? c.lane_steps
          : 1;
  Expr k_var = te::MakeVar("k");
  Expr k = c.d.k > steps ? k_var * steps : Expr(0);  // KeepScalarFor drops a loop of one step
  BroadcastTile tile(
      "accd" + tag, rows, vectors, lanes, steps,
      [&](int64_t i) { return lower::VectorLoad(c.a, c.ABase() + (m0 + i) * c.d.k + k, steps); },
      [&](int64_t v, int step) {
        return lower::VectorLoad(w.buf, w.base + (k + step) * w.stride + v * lanes, lanes);
      },
      [&](int64_t i, int64_t v, const Expr& acc) {
        Expr col = n0 + v * lanes;
        return lower::Store(c.out, c.OutBase() + (m0 + i) * c.d.n + col,
                            EpilogueColumns(c, m0 + i, col, lanes, acc));
      },
      c.f);
  Stmt k_loop = lower::KeepScalarFor(k_var, c.d.k / steps, lower::Seq(tile.update));
  if (c.a_zero_from > 0) {
    const Expr keys = m0 + (rows - 1 + c.a_zero_from);  // the sum's end for the tile's last row
    k_loop = lower::Limited(k_loop, te::FloorDiv(keys + (steps - 1), Expr(steps)));
  }
  Stmt computed = tile.With(k_loop);
  if (c.masked_from == 0) return computed;
  // Wholly past its rows' ends (the last row's is the latest): no products.
  return lower::If(n0 >= m0 + (rows - 1 + c.masked_from),
                   MaskedTile(c, m0, rows, n0, vectors, lanes), computed);
}

// Row tiles [first, first + count) of `rows` rows from row 0, then, when `with_tail`, the rows
// left after the last full tile.
Stmt RowTiles(const DenseContext& c, const std::string& tag, const Expr& first, int64_t count,
              int64_t rows, bool with_tail, const Expr& n0, int64_t vectors, int lanes,
              const WeightSource& w) {
  std::vector<Stmt> out;
  if (count > 0) {
    Expr t = te::MakeVar("rt");
    out.push_back(lower::For(t, count, ForKind::kSerial,
                             MakeTile(c, tag, (first + t) * rows, rows, n0, vectors, lanes, w)));
  }
  const int64_t tail = c.d.m % rows;
  if (with_tail && tail > 0) {
    out.push_back(MakeTile(c, tag + "r", Expr(c.d.m - tail), tail, n0, vectors, lanes, w));
  }
  return lower::Seq(out);
}

// The largest divisor of `tiles` at most `most` (at least 1).
int64_t DivisorAtMost(int64_t tiles, int64_t most) {
  for (int64_t g = std::min(tiles, most); g > 1; --g) {
    if (tiles % g == 0) return g;
  }
  return 1;
}

// Every full panel of columns: a task per panel (or per group of its row tiles, when the panels
// are too few for the pool) reads its panel packed (at compile time, or copied by the task into a
// workspace slice of its own; a GEMV of a W that is not constant reads it in place) and runs its
// row tiles against it.
Stmt PanelTasks(const DenseContext& batchless, const DenseParams& p, bool par) {
  const DenseGroup& d = batchless.d;
  const int64_t width = p.vectors * p.lanes, panels = d.n / width, row_tiles = d.m / p.rows;
  const int lanes = static_cast<int>(p.lanes);
  const bool prepacked = d.packed_width > 0, copy = !prepacked && d.m >= kMinRowsToPack;
  const int64_t jobs = d.batch * panels;  // a batched MatMul's tasks take (batch, panel) pairs
  const int64_t groups = par && jobs < kMinTasks ? DivisorAtMost(row_tiles, kMinTasks / jobs) : 1;
  const int64_t per_group = row_tiles / groups, tasks = jobs * groups;
  Expr task = te::MakeVar("task");
  Expr job = te::FloorDiv(task, Expr(groups)), grp = te::FloorMod(task, Expr(groups));
  Expr panel = d.batch > 1 ? te::FloorMod(job, Expr(panels)) : job;
  DenseContext c = batchless;
  if (d.batch > 1) c.b = te::FloorDiv(job, Expr(panels));
  Expr n0 = panel * width;
  std::vector<Stmt> work;
  WeightSource w = prepacked ? WeightSource{c.w, panel * (d.k * width), width}
                             : WeightSource{c.w, c.WBase() + n0, d.n};
  if (copy) {
    Buffer slices = NewFloatBuffer(d.gemm->name + "_panel_ws", tasks * d.k * width,
                                   lower::BufferScope::kWorkspace);
    c.f->workspaces.push_back(slices);
    Expr kk = te::MakeVar("kk"), j = te::MakeVar("j");
    Expr slice = task * (d.k * width);
    work.push_back(
        lower::For(kk, d.k, ForKind::kSerial,
                   lower::For(j, width, ForKind::kVectorized,
                              lower::Store(slices, slice + kk * width + j,
                                           BufferLoad(c.w, c.WBase() + kk * d.n + n0 + j)))));
    w = WeightSource{slices, slice, width};
  }
  work.push_back(
      RowTiles(c, "m", grp * per_group, per_group, p.rows, false, n0, p.vectors, lanes, w));
  if (d.m % p.rows > 0) {  // the last group takes the rows after the last full tile
    work.push_back(lower::If(grp == Expr(groups - 1),
                             RowTiles(c, "m", Expr(0), 0, p.rows, true, n0, p.vectors, lanes, w)));
  }
  return lower::For(task, tasks, par && tasks > 1 ? ForKind::kParallel : ForKind::kSerial,
                    lower::Seq(work));
}

// The columns after the last full panel, reading W in place (packed: the [K][N % width] block
// after the panels): whole vectors, then one narrower vector each of half, a quarter, ... of the
// width (10 columns on AVX-512: 8 + 2) rather than a scalar register per column.
void RestColumnsAt(const DenseContext& c, const DenseParams& p, std::vector<Stmt>* body) {
  const DenseGroup& d = c.d;
  const int64_t first = d.n / (p.vectors * p.lanes) * (p.vectors * p.lanes);
  const int64_t row_tiles = d.m / p.rows;
  auto source = [&](int64_t col) {
    return d.packed_width > 0 ? WeightSource{c.w, Expr(first * d.k + col - first), d.n - first}
                              : WeightSource{c.w, c.WBase() + col, d.n};
  };
  int64_t col = first;
  const int64_t vectors = (d.n - col) / p.lanes;
  if (vectors > 0) {
    body->push_back(RowTiles(c, "v", Expr(0), row_tiles, p.rows, true, Expr(col), vectors,
                             static_cast<int>(p.lanes), source(col)));
    col += vectors * p.lanes;
  }
  for (int64_t narrow = p.lanes / 2; narrow >= 1; narrow /= 2) {
    if (d.n - col < narrow) continue;
    body->push_back(RowTiles(c, "w" + std::to_string(narrow), Expr(0), row_tiles, p.rows, true,
                             Expr(col), 1, static_cast<int>(narrow), source(col)));
    col += narrow;
  }
}

// RestColumnsAt for each batch index of a batched MatMul.
void RestColumns(const DenseContext& c, const DenseParams& p, std::vector<Stmt>* body) {
  if (c.d.batch == 1) {
    RestColumnsAt(c, p, body);
    return;
  }
  DenseContext each = c;
  Expr b = te::MakeVar("b");
  each.b = b;
  std::vector<Stmt> rest;
  RestColumnsAt(each, p, &rest);
  if (!rest.empty()) body->push_back(lower::For(b, c.d.batch, ForKind::kSerial, lower::Seq(rest)));
}

}  // namespace

DenseParams DenseParamsForRows(const DenseParams& entry, int64_t rows) {
  DenseParams p = entry;
  if (rows == 1 && entry.gemv_vectors > 0) p.vectors = entry.gemv_vectors;
  return p;
}

bool TryDense(const FusedGroup& group, const lower::ScheduleOptions& opts, const DenseParams& table,
              lower::LoweredFunc* out) {
  DenseGroup d;
  if (!MatchDenseGroup(group, &d)) return false;
  const DenseParams entry = DenseParamsForRows(table, d.m);
  lower::LoweredFunc f;
  Buffer ab, wb;
  EpilogueAt at;
  const bool row_bias = d.bias_is_row;
  AnchorOperands operands{
      d.a_id, d.w_id, d.bias_id, [row_bias](const std::vector<Expr>& i) {
        return row_bias ? std::vector<Expr>{Expr(0), i[1]} : std::vector<Expr>{i[1]};
      }};
  if (!BuildEpilogueAt(group, *d.gemm, operands, &f, &ab, &wb, &at)) return false;
  const int registers = TargetVectorRegisters(opts);
  DenseContext c{d, ab, wb, f.args.back().buffer, at, &f, entry.lane_steps, registers};
  c.a_zero_from = d.gemm->GetInt(kCausalFromAttr, 0);
  const Node& last = *group.nodes.back();
  if (&last != d.gemm && last.outputs.at(0) == group.outputs[0]) {
    c.masked_from = last.GetInt(kCausalFromAttr, 0);
  }
  Buffer probe = NewVectorAccumulator("probe", entry.lanes);
  if (!EpilogueColumns(c, Expr(0), Expr(0), static_cast<int>(entry.lanes), BufferLoad(probe, 0))
           .defined()) {
    return false;
  }
  // Weights packed at compile time fix the panel width; the default lowering reads other widths.
  const bool prepacked = d.packed_width > 0;
  if (prepacked && d.packed_width != entry.vectors * entry.lanes) return false;
  const DenseParams p = TunedDenseParams(opts, d.m, d.k, d.n, entry, prepacked ? entry.vectors : 0);
  const bool par = opts.parallel && d.batch * d.m * d.n * d.k >= opts.parallel_min_work;
  std::vector<Stmt> body;
  if (d.n >= p.vectors * p.lanes) body.push_back(PanelTasks(c, p, par));
  RestColumns(c, p, &body);
  f.body = lower::Seq(body);
  f.prefer_vector_bits = p.prefer_vector_bits;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
