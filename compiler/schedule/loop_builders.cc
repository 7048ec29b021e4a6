// The builders of loop_builders.h too long to inline: the register tile, the vector steps.
#include "loop_builders.h"

#include <algorithm>
#include <memory>

namespace ember::compiler::schedule {

BroadcastTile::BroadcastTile(
    const std::string& prefix, int64_t rows, int64_t vectors, int lanes, int steps,
    const std::function<te::Expr(int64_t r)>& x, const std::function<te::Expr(int64_t v, int)>& w,
    const std::function<lower::Stmt(int64_t r, int64_t v, const te::Expr& acc)>& store_at,
    lower::LoweredFunc* f) {
  std::vector<te::Expr> xs;
  std::vector<lower::Buffer>& accs = accumulators;
  this->vectors = vectors;
  for (int64_t r = 0; r < rows; ++r) {
    xs.push_back(x(r));  // broadcast against the tile's weight vectors
    for (int64_t v = 0; v < vectors; ++v) {
      accs.push_back(
          NewVectorAccumulator(prefix + std::to_string(r) + "_" + std::to_string(v), lanes));
      f->locals.push_back(accs.back());
      init.push_back(lower::Store(accs.back(), 0, te::Const(accs.back()->dtype, 0)));
      store.push_back(store_at(r, v, lower::BufferLoad(accs.back(), 0)));
    }
  }
  // Step-major: a step's weight vectors are loaded once for all rows.
  for (int j = 0; j < steps; ++j) {
    for (int64_t r = 0; r < rows; ++r) {
      te::Expr xr = StepValue(xs[r], j);
      for (int64_t v = 0; v < vectors; ++v) {
        const lower::Buffer& acc = accs[r * vectors + v];
        update.push_back(lower::Store(acc, 0, lower::BufferLoad(acc, 0) + xr * w(v, j)));
      }
    }
  }
}

std::vector<te::Expr> CoveringLanes(const lower::Buffer& b, const te::Expr& base,
                                    const std::vector<int64_t>& offsets, int lanes) {
  std::vector<te::Expr> out;
  for (size_t i = 0; i < offsets.size();) {
    // The vector from offsets[i], moved back to end at the last offset if it would pass it.
    const int64_t start = std::min(offsets[i], offsets.back() + 1 - lanes);
    size_t end = i;
    while (end < offsets.size() && offsets[end] < start + lanes) ++end;
    if (start < offsets.front() || end - i < 2) {
      out.push_back(lower::BufferLoad(b, base + offsets[i]));
      ++i;
      continue;
    }
    te::Expr vec = lower::VectorLoad(b, base + start, lanes);
    for (; i < end; ++i) out.push_back(te::Lane(vec, static_cast<int>(offsets[i] - start)));
  }
  return out;
}

void BroadcastTile::StartFrom(const std::function<te::Expr(int64_t v)>& start) {
  for (size_t i = 0; i < accumulators.size(); ++i) {
    init[i] = lower::Store(accumulators[i], 0, start(static_cast<int64_t>(i) % vectors));
  }
}

lower::Stmt BroadcastTile::With(const lower::Stmt& reduction) const {
  std::vector<lower::Stmt> tile = init;
  tile.push_back(reduction);
  tile.insert(tile.end(), store.begin(), store.end());
  return lower::Seq(tile);
}

lower::Stmt VectorSteps(const std::string& name, int64_t begin, int64_t len, int64_t lanes,
                        const std::function<lower::Stmt(const te::Expr&)>& body) {
  if (len <= 0) return nullptr;
  int64_t width = 1;
  while (width * 2 <= std::min(lanes, len)) width *= 2;
  if (width < 2) return Range(name, begin, begin + len, lower::ForKind::kSerial, body);
  const int64_t steps = (len + width - 1) / width;
  te::Expr b = te::MakeVar(name + "b");
  te::Expr start = steps > 1 ? te::Min(b * width, te::Expr(len - width)) + begin : te::Expr(begin);
  te::Expr v = te::MakeVar(name);
  auto loop = std::make_shared<lower::ForNode>();
  loop->var = v;
  loop->extent = width;
  loop->for_kind = lower::ForKind::kVectorized;
  loop->vector_lanes = static_cast<int>(width);
  loop->body = body(start + v);
  if (steps == 1) return lower::Stmt(loop);
  return lower::For(b, steps, lower::ForKind::kSerial, lower::Stmt(loop));
}

}  // namespace ember::compiler::schedule
