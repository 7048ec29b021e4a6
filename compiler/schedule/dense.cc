// Dense products, Y[M][N] = A[M][K] x W[K][N] (+ bias[N]), as CanonicalizeDense leaves them (Gemm
// with transA = transB = 0, alpha = beta = 1), followed by elementwise epilogue nodes.
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
#include <ember/compiler/ir/weight_layout.h>

#include <algorithm>
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
};

bool IsF32Matrix(const TensorType& t) { return t.dtype == kFloat32 && t.shape.size() == 2; }

bool MatchDenseGroup(const FusedGroup& group, DenseGroup* d) {
  if (group.nodes.empty() || group.outputs.size() != 1) return false;
  const Graph& g = *group.graph;
  const Node& gemm = *group.nodes.front();
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
  const bool stores =
      out.dtype == kFloat32 || out.dtype == kInt32 || out.dtype == kUInt8 || out.dtype == kInt8;
  return stores && out.shape == std::vector<int64_t>{d->m, d->n};
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
};

// The group's output at row m, columns n0 .. n0 + lanes - 1, from the accumulator vector there.
Expr EpilogueColumns(const DenseContext& c, const Expr& m, const Expr& n0, int lanes,
                     const Expr& acc) {
  Expr col = te::MakeVar("col");
  return lower::VectorizeLanes(c.at({m, col}, acc), col.get(), n0, lanes);
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
      [&](int64_t i) { return lower::VectorLoad(c.a, (m0 + i) * c.d.k + k, steps); },
      [&](int64_t v, int step) {
        return lower::VectorLoad(w.buf, w.base + (k + step) * w.stride + v * lanes, lanes);
      },
      [&](int64_t i, int64_t v, const Expr& acc) {
        Expr col = n0 + v * lanes;
        return lower::Store(c.out, (m0 + i) * c.d.n + col,
                            EpilogueColumns(c, m0 + i, col, lanes, acc));
      },
      c.f);
  return tile.With(lower::KeepScalarFor(k_var, c.d.k / steps, lower::Seq(tile.update)));
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
Stmt PanelTasks(const DenseContext& c, const DenseParams& p, bool par) {
  const DenseGroup& d = c.d;
  const int64_t width = p.vectors * p.lanes, panels = d.n / width, row_tiles = d.m / p.rows;
  const int lanes = static_cast<int>(p.lanes);
  const bool prepacked = d.packed_width > 0, copy = !prepacked && d.m >= kMinRowsToPack;
  const int64_t groups =
      par && panels < kMinTasks ? DivisorAtMost(row_tiles, kMinTasks / panels) : 1;
  const int64_t per_group = row_tiles / groups, tasks = panels * groups;
  Expr task = te::MakeVar("task");
  Expr panel = te::FloorDiv(task, Expr(groups)), grp = te::FloorMod(task, Expr(groups));
  Expr n0 = panel * width;
  std::vector<Stmt> work;
  WeightSource w =
      prepacked ? WeightSource{c.w, panel * (d.k * width), width} : WeightSource{c.w, n0, d.n};
  if (copy) {
    Buffer slices = NewFloatBuffer(d.gemm->name + "_panel_ws", tasks * d.k * width,
                                   lower::BufferScope::kWorkspace);
    c.f->workspaces.push_back(slices);
    Expr kk = te::MakeVar("kk"), j = te::MakeVar("j");
    Expr slice = task * (d.k * width);
    work.push_back(lower::For(kk, d.k, ForKind::kSerial,
                              lower::For(j, width, ForKind::kVectorized,
                                         lower::Store(slices, slice + kk * width + j,
                                                      BufferLoad(c.w, kk * d.n + n0 + j)))));
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
void RestColumns(const DenseContext& c, const DenseParams& p, std::vector<Stmt>* body) {
  const DenseGroup& d = c.d;
  const int64_t first = d.n / (p.vectors * p.lanes) * (p.vectors * p.lanes);
  const int64_t row_tiles = d.m / p.rows;
  auto source = [&](int64_t col) {
    return d.packed_width > 0 ? WeightSource{c.w, Expr(first * d.k + col - first), d.n - first}
                              : WeightSource{c.w, Expr(col), d.n};
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
  Buffer probe = NewVectorAccumulator("probe", entry.lanes);
  if (!EpilogueColumns(c, Expr(0), Expr(0), static_cast<int>(entry.lanes), BufferLoad(probe, 0))
           .defined()) {
    return false;
  }
  // Weights packed at compile time fix the panel width; the default lowering reads other widths.
  const bool prepacked = d.packed_width > 0;
  if (prepacked && d.packed_width != entry.vectors * entry.lanes) return false;
  const DenseParams p = TunedDenseParams(opts, d.m, d.k, d.n, entry, prepacked ? entry.vectors : 0);
  const bool par = opts.parallel && d.m * d.n * d.k >= opts.parallel_min_work;
  std::vector<Stmt> body;
  if (d.n >= p.vectors * p.lanes) body.push_back(PanelTasks(c, p, par));
  RestColumns(c, p, &body);
  f.body = lower::Seq(body);
  f.prefer_vector_bits = p.prefer_vector_bits;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
