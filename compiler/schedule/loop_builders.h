// Small loop-IR builders the hand-written schedules share (private to compiler/schedule/).
#ifndef EMBER_COMPILER_SCHEDULE_LOOP_BUILDERS_H_
#define EMBER_COMPILER_SCHEDULE_LOOP_BUILDERS_H_

#include <ember/compiler/lower.h>

#include <functional>
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

/*! \brief Prefetches of the `floats` float32 elements of `b` from `first` on, one per 64-byte
 * cache line, appended to *out. */
inline void PrefetchFloats(const lower::Buffer& b, const te::Expr& first, int64_t floats,
                           std::vector<lower::Stmt>* out) {
  constexpr int64_t kLineFloats = 16;
  for (int64_t v = 0; v < floats; v += kLineFloats) out->push_back(lower::Prefetch(b, first + v));
}

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_LOOP_BUILDERS_H_
