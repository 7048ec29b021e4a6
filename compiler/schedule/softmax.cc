// Softmax over its last axis a row at a time: the row's maximum in vector registers, then
// exp(x - max) written to the output while its sum accumulates, then the output scaled by the
// sum's reciprocal while the row is still in cache. The default lowering ran the maximum, the
// exponentials, the sum and the scaling as passes over the whole tensor through a workspace as
// large as it (attention's 8 x 512 x 512 scores: 8 MB written, then read twice). Attention
// masked past a diagonal (kCausalFromAttr) reads each row up to the vector holding its last key
// and stores 0 after it.
#include <ember/compiler/ir/causal_mask.h>

#include <cmath>
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

// The lanes of vector v folded into one scalar by `op`: halves folded onto each other first, so
// the chain of dependent operations is log2(lanes) long rather than lanes - 1.
Expr AcrossLanes(Expr v, int lanes, Expr (*op)(Expr, Expr)) {
  while (lanes > 2 && lanes % 2 == 0) {
    const int half = lanes / 2;
    std::vector<int> low(static_cast<size_t>(half)), high(static_cast<size_t>(half));
    for (int i = 0; i < half; ++i) {
      low[static_cast<size_t>(i)] = i;
      high[static_cast<size_t>(i)] = half + i;
    }
    v = op(te::Shuffle(v, v, low), te::Shuffle(v, v, high));
    lanes = half;
  }
  Expr r = te::Lane(v, 0);
  for (int i = 1; i < lanes; ++i) r = op(r, te::Lane(v, i));
  return r;
}

Expr Add(Expr a, Expr b) { return a + b; }

// The length of the rows a Softmax node normalizes (its last axis, or with opset < 13's
// coercion every axis from `axis` on); 0 when it normalizes another axis.
int64_t RowLength(const Node& n, const TensorType& x) {
  const int64_t rank = x.ndim();
  int64_t axis = n.GetInt("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return 0;
  if (n.GetInt("__coerce_2d", 0) == 0) return axis == rank - 1 ? x.shape.back() : 0;
  int64_t row = 1;
  for (int64_t d = axis; d < rank; ++d) row *= x.shape[static_cast<size_t>(d)];
  return row;
}

}  // namespace

bool TrySoftmax(const FusedGroup& group, const lower::ScheduleOptions& opts,
                lower::LoweredFunc* out) {
  if (group.nodes.size() != 1 || group.outputs.size() != 1) return false;
  const Node& n = *group.nodes[0];
  const Graph& g = *group.graph;
  if (n.op != "Softmax" || n.inputs.size() != 1 || !IsGroupInput(group, n.inputs[0])) return false;
  const TensorType& x = g.value(n.inputs[0]).type;
  if (x.dtype != kFloat32 || g.value(group.outputs[0]).type.dtype != kFloat32) return false;
  const int lanes = FloatLanes(ClassifyTarget(*opts.target));
  const int64_t row = RowLength(n, x);
  if (row < lanes) return false;  // rows shorter than a vector: the default lowering
  const int64_t rows = x.NumElements() / row, full = row / lanes * lanes;
  lower::LoweredFunc f = GroupFunction(group);
  const Buffer xb = GroupInputBuffer(group, f, n.inputs[0]), yb = f.args.back().buffer;
  const Buffer vmax = NewVectorAccumulator(n.name + "_vmax", lanes);
  const Buffer vsum = NewVectorAccumulator(n.name + "_vsum", lanes);
  const Buffer smax = NewVectorAccumulator(n.name + "_max", 1);
  const Buffer ssum = NewVectorAccumulator(n.name + "_sum", 1);
  f.locals.insert(f.locals.end(), {vmax, vsum, smax, ssum});

  Expr r = te::MakeVar("row");
  const Expr base = r * row;
  // Row m of a causal mask's scores keeps its keys below m + c: the vectors up to there count
  // (their masked lanes weigh 0 as everywhere), the others are 0.
  const int64_t causal = n.GetInt(kCausalFromAttr, 0), full_vectors = full / lanes;
  Expr counted;
  if (causal > 0 && x.ndim() >= 2) {
    const Expr m = te::FloorMod(r, Expr(x.shape[x.shape.size() - 2]));
    counted = te::Min(te::FloorDiv(m + (causal + lanes - 1), Expr(lanes)), Expr(full_vectors));
  }
  auto vectors = [&](const std::string& name, const std::function<Stmt(const Expr&)>& body) {
    Stmt loop = Range(name, 0, full_vectors, ForKind::kSerial,
                      [&](const Expr& j) { return body(base + j * lanes); });
    return counted.defined() ? lower::Limited(loop, counted) : loop;
  };
  auto tail = [&](const std::string& name, const std::function<Stmt(const Expr&)>& body) {
    return Range(name, full, row, ForKind::kSerial, [&](const Expr& t) { return body(base + t); });
  };
  const Expr lowest = F32(-std::numeric_limits<double>::infinity());
  std::vector<Stmt> body;
  // The row's maximum.
  body.push_back(lower::Store(vmax, 0, te::Broadcast(lowest, lanes)));
  body.push_back(vectors("jm", [&](const Expr& at) {
    return lower::Store(vmax, 0, te::Max(BufferLoad(vmax, 0), lower::VectorLoad(xb, at, lanes)));
  }));
  body.push_back(lower::Store(smax, 0, AcrossLanes(BufferLoad(vmax, 0), lanes, te::Max)));
  body.push_back(tail("tm", [&](const Expr& at) {
    return lower::Store(smax, 0, te::Max(BufferLoad(smax, 0), BufferLoad(xb, at)));
  }));
  // exp(x - max) into the output, summed as it goes.
  const Expr m = BufferLoad(smax, 0);
  body.push_back(lower::Store(vsum, 0, te::Broadcast(F32(0), lanes)));
  body.push_back(vectors("je", [&](const Expr& at) {
    Expr e = te::Exp(lower::VectorLoad(xb, at, lanes) - te::Broadcast(m, lanes));
    return SeqOf({lower::Store(yb, at, e),
                  lower::Store(vsum, 0, BufferLoad(vsum, 0) + lower::VectorLoad(yb, at, lanes))});
  }));
  body.push_back(lower::Store(ssum, 0, AcrossLanes(BufferLoad(vsum, 0), lanes, Add)));
  body.push_back(tail("te", [&](const Expr& at) {
    return SeqOf({lower::Store(yb, at, te::Exp(BufferLoad(xb, at) - m)),
                  lower::Store(ssum, 0, BufferLoad(ssum, 0) + BufferLoad(yb, at))});
  }));
  // Scaled by the sum's reciprocal.
  body.push_back(lower::Store(ssum, 0, F32(1) / BufferLoad(ssum, 0)));
  const Expr inverse = BufferLoad(ssum, 0);
  body.push_back(vectors("js", [&](const Expr& at) {
    return lower::Store(yb, at, lower::VectorLoad(yb, at, lanes) * te::Broadcast(inverse, lanes));
  }));
  body.push_back(tail(
      "ts", [&](const Expr& at) { return lower::Store(yb, at, BufferLoad(yb, at) * inverse); }));
  if (counted.defined()) {
    Stmt zeros = Range("jz", 0, full_vectors, ForKind::kSerial, [&](const Expr& j) {
      return lower::Store(yb, base + (counted + j) * lanes, te::Broadcast(F32(0), lanes));
    });
    body.push_back(lower::Limited(zeros, Expr(full_vectors) - counted));
  }
  const bool par = opts.parallel && rows > 1 && rows * row >= opts.parallel_min_work;
  f.body = lower::For(r, rows, par ? ForKind::kParallel : ForKind::kSerial, SeqOf(body));
  f.prefer_vector_bits = lanes * 32;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
