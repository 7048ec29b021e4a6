// Einsum written out as the ops the kernels already run fast: each operand's diagonals (a label
// twice in one term) as a strided Slice, its own summed axes as ReduceSum, each pair of operands as
// one batched MatMul (the shared batch axes first, the contracted axes flattened into K, the kept
// ones into M and N) between Transposes and Reshapes, and the result transposed into the equation's
// output order. A constant operand without batch axes becomes a 2-D weight, so the dense kernel
// takes it.
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

// An operand: a value and one label per axis ('0'.. stand for the axes of an ellipsis).
struct Term {
  int value;
  std::string labels;
};

// The equation's terms with each ellipsis expanded into digit labels, aligned from the right as
// numpy broadcasts them, and the output's labels (implicit: the ellipsis, then the labels used
// once, in alphabetical order).
struct Equation {
  std::vector<std::string> inputs;
  std::string output;
};

// The labels standing for the last `count` axes of an ellipsis: digits up to '9', aligned from
// the right, so that a shorter ellipsis broadcasts against a longer one.
std::string EllipsisLabels(int64_t count) {
  std::string digits;
  for (int64_t k = 0; k < count; ++k) digits += static_cast<char>('0' + (10 - count + k));
  return digits;
}

// `term` with its "..." (if any) replaced by `count` ellipsis labels.
std::string WithEllipsis(const std::string& term, int64_t count) {
  const size_t dots = term.find("...");
  if (dots == std::string::npos) return term;
  return term.substr(0, dots) + EllipsisLabels(count) + term.substr(dots + 3);
}

std::vector<std::string> SplitTerms(const std::string& lhs) {
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) return terms;
    start = comma + 1;
  }
}

// The implicit output: the ellipsis, then the labels used once, in alphabetical order.
std::string ImplicitOutput(const std::vector<std::string>& inputs, int64_t ellipsis_rank) {
  std::string once;
  for (char c = 'A'; c <= 'z'; ++c) {
    if (!std::isalpha(static_cast<unsigned char>(c))) continue;
    int uses = 0;
    for (const std::string& t : inputs) uses += static_cast<int>(std::count(t.begin(), t.end(), c));
    if (uses == 1) once += c;
  }
  return EllipsisLabels(ellipsis_rank) + once;
}

Equation Parse(const Node& n, const std::vector<int64_t>& ranks) {
  std::string eq;
  for (char c : n.GetString("equation", "")) {
    if (c != ' ') eq += c;
  }
  auto fail = [&](const std::string& what) { NodeError(n, "equation '" + eq + "': " + what); };
  const size_t arrow = eq.find("->");
  const std::vector<std::string> terms = SplitTerms(eq.substr(0, arrow));
  if (terms.size() != ranks.size()) {
    fail(std::to_string(terms.size()) + " operand terms for " + std::to_string(ranks.size()) +
         " inputs");
  }
  Equation e;
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::string letters = terms[i];
    const bool dots = letters.find("...") != std::string::npos;
    if (dots) letters.erase(letters.find("..."), 3);
    for (char c : letters) {
      if (!std::isalpha(static_cast<unsigned char>(c)))
        fail("'" + std::string(1, c) + "' is not a letter");
    }
    const int64_t covered = ranks[i] - static_cast<int64_t>(letters.size());
    if (dots ? covered < 0 || covered > 10 : covered != 0) {
      fail("term '" + terms[i] + "' does not match an input of rank " + std::to_string(ranks[i]));
    }
    ellipsis_rank = std::max(ellipsis_rank, covered);
    e.inputs.push_back(WithEllipsis(terms[i], covered));
  }
  e.output = arrow == std::string::npos ? ImplicitOutput(e.inputs, ellipsis_rank)
                                        : WithEllipsis(eq.substr(arrow + 2), ellipsis_rank);
  for (char c : e.output) {
    if (std::count(e.output.begin(), e.output.end(), c) != 1) {
      fail("output label '" + std::string(1, c) + "' repeats");
    }
    bool found = false;
    for (const std::string& t : e.inputs) found |= t.find(c) != std::string::npos;
    if (!found) fail("output label '" + std::string(1, c) + "' is in no input term");
  }
  return e;
}

// How an error names a label: itself, or the ellipsis axis its digit stands for.
std::string LabelName(char c) {
  if (!std::isdigit(static_cast<unsigned char>(c))) return "label '" + std::string(1, c) + "'";
  return "axis " + std::to_string(10 - (c - '0')) + " from the end of the ellipsis ('...')";
}

class EinsumWriter {
 public:
  EinsumWriter(const Node& n, CanonicalizeContext* ctx) : n_(n), ctx_(ctx) {}

  const std::vector<int64_t>& Shape(int v) { return ctx_->TypeOf(v).shape; }

  // The size of each label, checked across terms (ellipsis axes broadcast from 1).
  void RecordSizes(const Term& t) {
    for (size_t i = 0; i < t.labels.size(); ++i) {
      const char c = t.labels[i];
      const int64_t d = Shape(t.value)[i];
      auto it = sizes_.find(c);
      if (it == sizes_.end() || it->second == 1) {
        sizes_[c] = d;
      } else if (d != it->second && !(std::isdigit(static_cast<unsigned char>(c)) && d == 1)) {
        NodeError(n_, LabelName(c) + " has size " + std::to_string(it->second) +
                          " in one term and " + std::to_string(d) + " in another");
      }
    }
  }

  // A label twice in one term (ii) takes the diagonal: its two axes moved last, flattened, and
  // every (n + 1)-th element of the n * n kept; until each label of t appears once.
  Term Diagonals(Term t) {
    for (size_t p = 0; p < t.labels.size(); ++p) {
      const size_t q = t.labels.find(t.labels[p], p + 1);
      if (q == std::string::npos) continue;
      const std::vector<int64_t> shape = Shape(t.value);
      const int64_t n = shape[p];
      if (shape[q] != n) {
        NodeError(n_, LabelName(t.labels[p]) + " has sizes " + std::to_string(n) + " and " +
                          std::to_string(shape[q]) + " within one term");
      }
      std::vector<int64_t> perm, kept;
      std::string rest;
      for (size_t i = 0; i < t.labels.size(); ++i) {
        if (i == p || i == q) continue;
        perm.push_back(static_cast<int64_t>(i));
        kept.push_back(shape[i]);
        rest += t.labels[i];
      }
      perm.insert(perm.end(), {static_cast<int64_t>(p), static_cast<int64_t>(q)});
      int v = ctx_->Emit("Transpose", Name("_perm"), {t.value}, {{"perm", perm}});
      std::vector<int64_t> flat = kept, starts(kept.size() + 1, 0), steps(kept.size() + 1, 1),
                           diagonal = kept;
      flat.push_back(n * n);
      steps.back() = n + 1;
      diagonal.push_back(n);
      v = ctx_->Emit(
          "Slice", Name("_diagonal"), {Reshaped(v, flat)},
          {{"starts", starts}, {"ends", flat}, {"steps", steps}, {"__out_shape", diagonal}});
      t = Diagonals(Term{v, rest + t.labels[p]});
      break;
    }
    return t;
  }

  // Sums the labels of t that `keep` lacks.
  Term SumAway(const Term& t, const std::string& keep) {
    std::vector<int64_t> axes;
    std::string left;
    for (size_t i = 0; i < t.labels.size(); ++i) {
      if (keep.find(t.labels[i]) == std::string::npos) {
        axes.push_back(static_cast<int64_t>(i));
      } else {
        left += t.labels[i];
      }
    }
    if (axes.empty()) return t;
    int v = ctx_->Emit("ReduceSum", Name("_sum"), {t.value},
                       {{"axes", axes}, {"keepdims", int64_t{0}}});
    return Term{v, left};
  }

  // t's axes in the order of `labels` (a permutation of t's), broadcast to the labels' sizes.
  int Arrange(const Term& t, const std::string& labels) {
    std::vector<int64_t> perm, full;
    for (char c : labels) {
      perm.push_back(static_cast<int64_t>(t.labels.find(c)));
      full.push_back(sizes_.at(c));
    }
    int v = ctx_->Emit("Transpose", Name("_perm"), {t.value}, {{"perm", perm}});
    if (Shape(v) != full) v = ctx_->Emit("Expand", Name("_bcast"), {v}, {{"__out_shape", full}});
    return v;
  }

  int64_t SizeOf(const std::string& labels) {
    int64_t s = 1;
    for (char c : labels) s *= sizes_.at(c);
    return s;
  }

  int Reshaped(int v, std::vector<int64_t> shape) {
    return ctx_->Emit("Reshape", Name("_shape"), {v}, {{"__out_shape", shape}});
  }

  // a x b as one MatMul, keeping the labels of `keep` (and summing the shared others).
  Term Contract(const Term& a, const Term& b, const std::string& keep) {
    std::string batch, m, k, nn;
    for (char c : a.labels) {
      const bool in_b = b.labels.find(c) != std::string::npos;
      const bool kept = keep.find(c) != std::string::npos;
      (in_b ? (kept ? batch : k) : m) += c;
    }
    for (char c : b.labels) {
      if (a.labels.find(c) == std::string::npos) nn += c;
    }
    const int64_t bs = SizeOf(batch), ms = SizeOf(m), ks = SizeOf(k), ns = SizeOf(nn);
    const std::vector<int64_t> lead =
        batch.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{bs};
    auto with = [&](std::vector<int64_t> tail) {
      tail.insert(tail.begin(), lead.begin(), lead.end());
      return tail;
    };
    int av = Reshaped(Arrange(a, batch + m + k), with({ms, ks}));
    int bv = Reshaped(Arrange(b, batch + k + nn), with({ks, ns}));
    int prod = ctx_->Emit("MatMul", Name("_matmul"), {av, bv});
    std::vector<int64_t> shape;
    for (char c : batch + m + nn) shape.push_back(sizes_.at(c));
    return Term{Reshaped(prod, shape), batch + m + nn};
  }

  void Finish(const Term& t, const std::string& out) {
    std::vector<int64_t> perm;
    for (char c : out) perm.push_back(static_cast<int64_t>(t.labels.find(c)));
    ctx_->EmitInto(Node{"Transpose", n_.name, {{"perm", perm}}, {t.value}, n_.outputs});
  }

 private:
  std::string Name(const char* tag) { return n_.name + tag + std::to_string(count_++); }

  const Node& n_;
  CanonicalizeContext* ctx_;
  std::map<char, int64_t> sizes_;
  int count_ = 0;
};

void EinsumOp(Node n, CanonicalizeContext* ctx) {
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < n.inputs.size(); ++i) ranks.push_back(ctx->Rank(n, i));
  const Equation eq = Parse(n, ranks);
  EinsumWriter w(n, ctx);
  std::vector<Term> terms;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    terms.push_back(Term{n.inputs[i], eq.inputs[i]});
    terms.back() = w.Diagonals(terms.back());
    w.RecordSizes(terms.back());
  }
  // Labels wanted after operand i: the output's and those of the operands still to come.
  auto needed_after = [&](size_t i, const std::string& also) {
    std::string need = eq.output + also;
    for (size_t j = i + 1; j < terms.size(); ++j) need += terms[j].labels;
    return need;
  };
  Term acc = w.SumAway(terms[0], needed_after(0, terms.size() > 1 ? terms[1].labels : ""));
  for (size_t i = 1; i < terms.size(); ++i) {
    Term next = w.SumAway(terms[i], needed_after(i, acc.labels));
    acc = w.Contract(acc, next, needed_after(i, ""));
  }
  w.Finish(w.SumAway(acc, eq.output), eq.output);
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("Einsum", EinsumOp);

}  // namespace compiler
}  // namespace ember
