// The register tile builder of loop_builders.h (the one of its builders too long to inline).
#include "loop_builders.h"

#include <algorithm>

namespace ember::compiler::schedule {

BroadcastTile::BroadcastTile(
    const std::string& prefix, int64_t rows, int64_t vectors, int lanes, int steps,
    const std::function<te::Expr(int64_t r)>& x, const std::function<te::Expr(int64_t v, int)>& w,
    const std::function<lower::Stmt(int64_t r, int64_t v, const te::Expr& acc)>& store_at,
    lower::LoweredFunc* f) {
  std::vector<te::Expr> xs;
  std::vector<lower::Buffer> accs;
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

lower::Stmt BroadcastTile::With(const lower::Stmt& reduction) const {
  std::vector<lower::Stmt> tile = init;
  tile.push_back(reduction);
  tile.insert(tile.end(), store.begin(), store.end());
  return lower::Seq(tile);
}

}  // namespace ember::compiler::schedule
