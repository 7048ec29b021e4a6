// The register tile builder of loop_builders.h (the one of its builders too long to inline).
#include "loop_builders.h"

namespace ember::compiler::schedule {

BroadcastTile::BroadcastTile(
    const std::string& prefix, int64_t rows, int64_t vectors, int lanes,
    const std::function<te::Expr(int64_t r)>& x, const std::function<te::Expr(int64_t v)>& w,
    const std::function<lower::Stmt(int64_t r, int64_t v, const te::Expr& acc)>& store_at,
    lower::LoweredFunc* f) {
  for (int64_t r = 0; r < rows; ++r) {
    te::Expr xr = x(r);  // broadcast against the tile's weight vectors
    for (int64_t v = 0; v < vectors; ++v) {
      lower::Buffer acc =
          NewVectorAccumulator(prefix + std::to_string(r) + "_" + std::to_string(v), lanes);
      f->locals.push_back(acc);
      init.push_back(lower::Store(acc, 0, te::Const(acc->dtype, 0)));
      update.push_back(lower::Store(acc, 0, lower::BufferLoad(acc, 0) + xr * w(v)));
      store.push_back(store_at(r, v, lower::BufferLoad(acc, 0)));
    }
  }
}

lower::Stmt BroadcastTile::With(const lower::Stmt& reduction) const {
  std::vector<lower::Stmt> tile = init;
  tile.push_back(reduction);
  tile.insert(tile.end(), store.begin(), store.end());
  return lower::Seq(tile);
}

}  // namespace ember::compiler::schedule
