// Small loop-IR builders the hand-written schedules share (private to compiler/schedule/).
#ifndef EMBER_COMPILER_SCHEDULE_LOOP_BUILDERS_H_
#define EMBER_COMPILER_SCHEDULE_LOOP_BUILDERS_H_

#include <ember/compiler/lower.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ember::compiler::schedule {

/*! \brief A float32 literal. */
inline te::Expr F32(double v) { return te::Const(te::Float(32), v); }

/*! \brief The statements in order, null ones (empty ranges) dropped. */
inline lower::Stmt SeqOf(const std::vector<lower::Stmt>& stmts) {
  std::vector<lower::Stmt> kept;
  for (const lower::Stmt& s : stmts) {
    if (s) kept.push_back(s);
  }
  return kept.size() == 1 ? kept[0] : lower::Seq(kept);
}

/*! \brief for (var = begin; var < end; ++var) body(var): null for an empty range, the body at
 * `begin` itself for a single iteration. */
inline lower::Stmt Range(const std::string& name, int64_t begin, int64_t end, lower::ForKind kind,
                         const std::function<lower::Stmt(const te::Expr&)>& body) {
  if (end <= begin) return nullptr;
  if (end - begin == 1) return body(te::Expr(begin));
  te::Expr v = te::MakeVar(name);
  return lower::For(v, end - begin, kind, body(begin == 0 ? v : v + begin));
}

/*! \brief for (var = 0; var < extent; ++var) body(var), vectorized by exactly `lanes` (LLVM would
 * otherwise fully unroll a loop of few iterations into scalar code before vectorizing it). */
inline lower::Stmt VectorizedFor(const std::string& name, int64_t extent, int64_t lanes,
                                 const std::function<lower::Stmt(const te::Expr&)>& body) {
  te::Expr v = te::MakeVar(name);
  auto loop = std::make_shared<lower::ForNode>();
  loop->var = v;
  loop->extent = extent;
  loop->for_kind = lower::ForKind::kVectorized;
  loop->vector_lanes = static_cast<int>(lanes);
  loop->body = body(v);
  return lower::Stmt(loop);
}

/*! \brief body(i) for i in [begin, begin + len) as steps of one exact-width vector of `lanes`
 * (rounded down to a power of two not above len): the last step starts at begin + len - width and
 * overlaps its predecessor instead of leaving a scalar remainder, so `body` must be idempotent. */
lower::Stmt VectorSteps(const std::string& name, int64_t begin, int64_t len, int64_t lanes,
                        const std::function<lower::Stmt(const te::Expr&)>& body);

/*! \brief Prefetches of the `floats` float32 elements of `b` from `first` on, one per 64-byte
 * cache line, appended to *out. */
inline void PrefetchFloats(const lower::Buffer& b, const te::Expr& first, int64_t floats,
                           std::vector<lower::Stmt>* out) {
  constexpr int64_t kLineFloats = 16;
  for (int64_t v = 0; v < floats; v += kLineFloats) out->push_back(lower::Prefetch(b, first + v));
}

/*! \brief A float32 buffer of `size` elements in `scope`. */
inline lower::Buffer NewFloatBuffer(const std::string& name, int64_t size,
                                    lower::BufferScope scope) {
  return lower::NewBuffer(name, te::Float(32), size, scope);
}

/*! \brief A register-tile accumulator: one local of `lanes` float32 values (a SIMD register when
 * lanes is the target's vector width; a scalar when 1). */
inline lower::Buffer NewVectorAccumulator(const std::string& name, int64_t lanes) {
  return lower::NewBuffer(name, te::WithLanes(te::Float(32), static_cast<int>(lanes)), 1,
                          lower::BufferScope::kLocal);
}

/*! \brief The broadcast scalar of reduction step `step` from `x`: x itself when a scalar, else its
 * lane `step` (x then holds consecutive steps' values: one vector load for all of them, each lane
 * a multiply by element on AArch64). */
inline te::Expr StepValue(const te::Expr& x, int step) {
  return x.dtype().lanes == 1 ? x : te::Lane(x, step);
}

/*! \brief b[base + offsets[i]] for each of the ascending constant `offsets`, as lanes of
 * `lanes`-wide vector loads where two or more of them fall within one (each load starts at an
 * offset and ends at or before the last, so it reads nothing outside the run), else as plain loads.
 */
std::vector<te::Expr> CoveringLanes(const lower::Buffer& b, const te::Expr& base,
                                    const std::vector<int64_t>& offsets, int lanes);

/*! \brief Rows of a register tile of `vectors` accumulator vectors per row when each row also
 * keeps a vector of broadcast inputs live (lane steps > 1), one weight vector per column is
 * loaded at a time and one register is spare (prefetch addresses, a reload):
 * rows * (vectors + 1) + vectors + 1 <= registers. */
inline int64_t LaneTileRows(int registers, int64_t vectors) {
  return std::max<int64_t>(1, (registers - vectors - 1) / (vectors + 1));
}

/*! \brief The statements of a register tile of rows x vectors accumulators of `lanes` floats
 * (locals PREFIX<r>_<v>, added to f->locals), each update adding broadcast values times weight
 * vectors for `steps` reduction steps: `init` zeroes them, `update` is acc[r][v] += x(r)[j] *
 * w(v, j) for each step j (x(r) a scalar when steps is 1, else a vector of the steps' values,
 * see StepValue), `store` holds store(r, v, acc) for each once reduced. */
struct BroadcastTile {
  BroadcastTile(const std::string& prefix, int64_t rows, int64_t vectors, int lanes, int steps,
                const std::function<te::Expr(int64_t r)>& x,
                const std::function<te::Expr(int64_t v, int step)>& w,
                const std::function<lower::Stmt(int64_t r, int64_t v, const te::Expr& acc)>& store,
                lower::LoweredFunc* f);
  /*! \brief init, then `reduction` (loops around `update`), then the stores. */
  lower::Stmt With(const lower::Stmt& reduction) const;
  /*! \brief `init` sets each row's accumulator v to start(v) instead (a bias vector). */
  void StartFrom(const std::function<te::Expr(int64_t v)>& start);

  std::vector<lower::Stmt> init, update, store;
  std::vector<lower::Buffer> accumulators;  // row-major: rows x vectors
  int64_t vectors = 0;
};

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_LOOP_BUILDERS_H_
