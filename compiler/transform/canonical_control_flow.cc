// Canonical forms of If, Loop and Scan (registered as their canonicalization rules).
//
// What compile time decides disappears: an If whose condition is known becomes its taken branch,
// a Loop whose trip count and condition are known is unrolled, and so is every Scan (its length
// is a static dimension). An If decided by data stays an If
// whose branches are canonicalized apart and closed (every value they read from outside is an
// input of the If), so that lowering can build the If and its branches into one kernel.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/ir/subgraph.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

const char* BranchName(bool then) { return then ? "then_branch" : "else_branch"; }

void CheckBranchOutputs(const Node& n, const Subgraph& branch, bool then) {
  if (branch.outputs.size() != n.outputs.size()) {
    NodeError(n, std::string(BranchName(then)) + " has " + std::to_string(branch.outputs.size()) +
                     " outputs, the If has " + std::to_string(n.outputs.size()));
  }
}

// Copies of `nodes` that define fresh values (named with `suffix`) for everything they define,
// nested subgraphs included, and read through `remap` (formal inputs bound by the caller).
std::vector<Node> Instantiate(const std::vector<Node>& nodes, const std::string& suffix, Graph& g,
                              std::map<int, int>* remap) {
  auto fresh = [&](int id) {
    const std::string name = g.value(id).name + suffix;
    const TensorType type = g.value(id).type;
    const int copy = g.AddValue(g.UniqueName(name), type);
    (*remap)[id] = copy;
    return copy;
  };
  auto read = [&](int id) {
    auto it = remap->find(id);
    return it == remap->end() ? id : it->second;
  };
  std::vector<Node> out;
  for (const Node& node : nodes) {
    Node c = node;
    c.name += suffix;
    for (int& id : c.inputs) {
      if (id != kAbsentValue) id = read(id);
    }
    for (auto& [key, attr] : c.attrs) {
      const SubgraphPtr* sub = std::get_if<SubgraphPtr>(&attr);
      if (sub == nullptr || *sub == nullptr) continue;
      auto copy = std::make_shared<Subgraph>();
      copy->name = (*sub)->name + suffix;
      for (int id : (*sub)->inputs) copy->inputs.push_back(fresh(id));
      copy->nodes = Instantiate((*sub)->nodes, suffix, g, remap);
      for (int id : (*sub)->outputs) copy->outputs.push_back(read(id));
      attr = SubgraphPtr(copy);
    }
    for (int& id : c.outputs) id = fresh(id);
    out.push_back(std::move(c));
  }
  return out;
}

// Non-constant values `nodes` and `outputs` read that `nodes` do not define, in order of first
// use, appended to *reads once each. Nested Ifs are closed already: their inputs say it all.
void CollectCaptures(const Graph& g, const std::vector<Node>& nodes,
                     const std::vector<int>& outputs, std::vector<int>* reads) {
  std::set<int> defined;
  auto note = [&](int id) {
    if (id == kAbsentValue || defined.count(id) || g.value(id).is_constant()) return;
    if (std::find(reads->begin(), reads->end(), id) == reads->end()) reads->push_back(id);
  };
  for (const Node& node : nodes) {
    for (int id : node.inputs) note(id);
    for (int id : node.outputs) defined.insert(id);
  }
  for (int id : outputs) note(id);
}

void TakeBranch(Node n, bool then, CanonicalizeContext* ctx) {
  const SubgraphPtr branch = n.GetSubgraph(BranchName(then));
  CheckBranchOutputs(n, *branch, then);
  for (const Node& inner : branch->nodes) ctx->Canonicalize(inner);
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    ctx->EmitInto(Node{
        "Identity", n.name + "_out" + std::to_string(i), {}, {branch->outputs[i]}, {n.outputs[i]}});
  }
}

// The If stays; each branch becomes a closed subgraph whose formal inputs stand for the values
// it captured, which the If takes after its condition.
void KeepIf(Node n, CanonicalizeContext* ctx) {
  Graph& g = ctx->graph();
  struct Branch {
    std::vector<Node> nodes;
    std::vector<int> outputs;
  } branches[2];
  for (bool then : {true, false}) {
    const SubgraphPtr sub = n.GetSubgraph(BranchName(then));
    CheckBranchOutputs(n, *sub, then);
    branches[then].nodes = ctx->CanonicalizeApart(sub->nodes);
    branches[then].outputs = sub->outputs;
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const TensorType& a = g.value(branches[1].outputs[i]).type;
    const TensorType& b = g.value(branches[0].outputs[i]).type;
    if (!(a == b)) {
      NodeUnsupported(n, "output " + std::to_string(i) + " is " + a.ToString() +
                             " from then_branch but " + b.ToString() +
                             " from else_branch; emberc needs one static type per output");
    }
    g.value(n.outputs[i]).type = a;
  }
  std::vector<int> captured;
  for (bool then : {true, false}) {
    CollectCaptures(g, branches[then].nodes, branches[then].outputs, &captured);
  }
  std::map<int, int> formal;
  std::vector<int> formals;
  for (int id : captured) {
    const std::string name = g.value(id).name + "_in";
    const TensorType type = g.value(id).type;
    formals.push_back(formal[id] = g.AddValue(g.UniqueName(name), type));
  }
  auto close = [&](int& id) {
    auto it = formal.find(id);
    if (it != formal.end()) id = it->second;
  };
  for (bool then : {true, false}) {
    auto sub = std::make_shared<Subgraph>();
    sub->name = n.name + "_" + BranchName(then);
    sub->inputs = formals;
    sub->nodes = std::move(branches[then].nodes);
    for (Node& node : sub->nodes) {
      for (int& id : node.inputs) close(id);
    }
    sub->outputs = branches[then].outputs;
    for (int& id : sub->outputs) close(id);
    n.attrs[BranchName(then)] = SubgraphPtr(sub);
  }
  n.inputs.resize(1);
  n.inputs.insert(n.inputs.end(), captured.begin(), captured.end());
  ctx->EmitTyped(std::move(n));
}

void CanonicalizeIf(Node n, CanonicalizeContext* ctx) {
  const Value& cond = ctx->graph().value(n.inputs.at(0));
  if (cond.type.NumElements() != 1) {
    NodeError(n, "the condition must hold one element, got " + cond.type.ToString());
  }
  if (cond.is_constant()) {
    TakeBranch(std::move(n), cond.constant->GetAsDouble(0) != 0, ctx);
  } else {
    KeepIf(std::move(n), ctx);
  }
}

HostTensorPtr ConstantLike(const TensorType& declared, DLDataType dtype, double v) {
  TensorType t{declared.dtype.bits != 0 ? declared.shape : std::vector<int64_t>{}, dtype};
  if (t.NumElements() != 1) t.shape = {};
  auto c = std::make_shared<HostTensor>(t);
  c->SetFromDouble(0, v);
  return c;
}

// The values `steps` (one per iteration, of one shape) stacked along a new dimension `axis` into
// value `out`: a Loop's or a Scan's scan output; the last step first when `reversed`.
void StackSteps(const Node& n, std::vector<int> steps, int64_t axis, bool reversed, int out,
                CanonicalizeContext* ctx) {
  if (steps.empty()) NodeUnsupported(n, "runs no iteration, so its scan outputs are empty");
  if (reversed) std::reverse(steps.begin(), steps.end());
  std::vector<int> rows;
  for (int id : steps) {
    std::vector<int64_t> shape = ctx->TypeOf(id).shape;
    shape.insert(shape.begin() + axis, 1);
    rows.push_back(ctx->Emit("Reshape", n.name + "_scan_row", {id}, {{"__out_shape", shape}}));
  }
  ctx->EmitInto(Node{"Concat", n.name + "_scan", {{"axis", axis}}, rows, {out}});
}

// A Loop whose trip count and condition are constants, and whose body's condition folds in
// every iteration, unrolled: each iteration instantiates the body on the carried values.
void UnrollLoop(Node n, CanonicalizeContext* ctx) {
  Graph& g = ctx->graph();
  const SubgraphPtr body = n.GetSubgraph("body");
  if (n.inputs.size() < 2) NodeError(n, "expected inputs M and cond (either may be empty)");
  const size_t carried_count = n.inputs.size() - 2;
  if (body->inputs.size() != carried_count + 2 || body->outputs.size() < carried_count + 1 ||
      n.outputs.size() != body->outputs.size() - 1) {
    NodeError(n, "the body takes " + std::to_string(body->inputs.size()) + " inputs and gives " +
                     std::to_string(body->outputs.size()) + " outputs; expected " +
                     std::to_string(carried_count + 2) + " inputs (iteration, condition, " +
                     std::to_string(carried_count) + " carried) and " +
                     std::to_string(n.outputs.size() + 1) + " outputs");
  }
  const size_t scan_count = body->outputs.size() - 1 - carried_count;
  auto constant_input = [&](size_t i, const char* what) {
    const Value& v = g.value(n.inputs[i]);
    if (!v.is_constant()) {
      NodeUnsupported(n, std::string("its ") + what + " '" + v.name +
                             "' is computed from data at run time; emberc unrolls a Loop whose "
                             "trip count and condition are known at compile time (from shapes, "
                             "constants or emberc --bind NAME=VALUE)");
    }
    if (v.constant->NumElements() != 1) {
      NodeError(n, std::string(what) + " must hold one element, got " + v.type.ToString());
    }
    return v.constant->GetAsDouble(0);
  };
  const bool bounded = n.HasInput(0);
  const double trips = bounded ? constant_input(0, "trip count M") : 0;
  bool go = n.HasInput(1) ? constant_input(1, "condition") != 0 : true;
  if (!bounded && !n.HasInput(1)) NodeError(n, "has neither a trip count nor a condition");
  const int64_t body_nodes = std::max<int64_t>(1, static_cast<int64_t>(body->nodes.size()));
  std::vector<int> carried(n.inputs.begin() + 2, n.inputs.end());
  std::vector<std::vector<int>> scans(scan_count);
  int64_t i = 0;
  for (; go && (!bounded || static_cast<double>(i) < trips); ++i) {
    if ((i + 1) * body_nodes > kMaxUnrolledNodes) {
      NodeUnsupported(n, "unrolling it takes more than " + std::to_string(kMaxUnrolledNodes) +
                             " nodes (" + std::to_string(body_nodes) + " per iteration)");
    }
    std::map<int, int> remap;
    remap[body->inputs[0]] = g.AddConstant(g.UniqueName(n.name + "_i"),
                                           ConstantLike(g.value(body->inputs[0]).type, kInt64, i));
    remap[body->inputs[1]] = g.AddConstant(g.UniqueName(n.name + "_cond"),
                                           ConstantLike(g.value(body->inputs[1]).type, kBool, 1));
    for (size_t k = 0; k < carried_count; ++k) remap[body->inputs[2 + k]] = carried[k];
    const std::string suffix = "_iter" + std::to_string(i);
    for (Node& node : Instantiate(body->nodes, suffix, g, &remap)) {
      ctx->Canonicalize(std::move(node));
    }
    auto result = [&](size_t k) {
      auto it = remap.find(body->outputs[k]);
      return it == remap.end() ? body->outputs[k] : it->second;
    };
    const Value& cond = g.value(result(0));
    if (!cond.is_constant()) {
      NodeUnsupported(n, "the condition its body computes ('" + cond.name +
                             "') depends on data at run time; emberc unrolls only loops whose "
                             "iterations are known at compile time");
    }
    if (cond.constant->NumElements() != 1) {
      NodeError(n, "the condition its body computes ('" + cond.name +
                       "') must hold one element, got " + cond.type.ToString());
    }
    go = cond.constant->GetAsDouble(0) != 0;
    for (size_t k = 0; k < carried_count; ++k) carried[k] = result(1 + k);
    for (size_t k = 0; k < scan_count; ++k) scans[k].push_back(result(1 + carried_count + k));
  }
  for (size_t k = 0; k < carried_count; ++k) {
    ctx->EmitInto(
        Node{"Identity", n.name + "_out" + std::to_string(k), {}, {carried[k]}, {n.outputs[k]}});
  }
  for (size_t k = 0; k < scan_count; ++k) {
    StackSteps(n, scans[k], 0, false, n.outputs[carried_count + k], ctx);
  }
}

// An attribute of one int per scan input or output (`count` of them), `dflt` each when absent.
std::vector<int64_t> PerScanAttr(const Node& n, const char* key, size_t count, int64_t dflt) {
  std::vector<int64_t> v = n.GetInts(key, std::vector<int64_t>(count, dflt));
  if (v.size() != count) {
    NodeError(n, std::string("attribute '") + key + "' must hold " + std::to_string(count) +
                     " values (one per scan " +
                     (std::string(key).find("output") != std::string::npos ? "output" : "input") +
                     "), got " + std::to_string(v.size()));
  }
  return v;
}

// A scan axis attribute's value `axis` for a tensor of `rank` dims, from the end when negative.
int64_t ScanAxis(const Node& n, const char* key, size_t j, int64_t axis, int64_t rank,
                 const std::string& of) {
  if (axis < -rank || axis >= rank) {
    NodeError(n, std::string("attribute '") + key + "'[" + std::to_string(j) + "] must be in [" +
                     std::to_string(-rank) + ", " + std::to_string(rank - 1) + "] for " + of +
                     ", got " + std::to_string(axis));
  }
  return axis < 0 ? axis + rank : axis;
}

void CheckDirections(const Node& n, const char* key, const std::vector<int64_t>& directions) {
  for (size_t j = 0; j < directions.size(); ++j) {
    if (directions[j] != 0 && directions[j] != 1) {
      NodeError(n, std::string("attribute '") + key + "'[" + std::to_string(j) +
                       "] must be 0 (forward) or 1 (reverse), got " +
                       std::to_string(directions[j]));
    }
  }
}

// What one run of a Scan's body over its sequence leaves: the final states and, per scan
// output, the value of each step.
struct ScanRun {
  std::vector<int> states;
  std::vector<std::vector<int>> steps;
};

// The body run on `states` once per element of the scan inputs `scans`, each read along its axis
// `axes[j]` (already in range), from the end where `reversed[j]`. `tag` keeps the names of the
// runs of a batched Scan apart.
ScanRun RunScanBody(const Node& n, const Subgraph& body, std::vector<int> states,
                    const std::vector<int>& scans, const std::vector<int64_t>& axes,
                    const std::vector<int64_t>& reversed, int64_t steps, const std::string& tag,
                    CanonicalizeContext* ctx) {
  Graph& g = ctx->graph();
  const size_t state_count = states.size();
  ScanRun run{std::move(states), std::vector<std::vector<int>>(body.outputs.size() - state_count)};
  for (int64_t t = 0; t < steps; ++t) {
    const std::string suffix = tag + "_iter" + std::to_string(t);
    std::map<int, int> remap;
    for (size_t k = 0; k < state_count; ++k) remap[body.inputs[k]] = run.states[k];
    for (size_t j = 0; j < scans.size(); ++j) {
      const int64_t at = reversed[j] ? steps - 1 - t : t;
      const int index = ctx->Scalar(n.name + "_t", kInt64, static_cast<double>(at));
      remap[body.inputs[state_count + j]] =
          ctx->Emit("Gather", n.name + suffix + "_slice", {scans[j], index}, {{"axis", axes[j]}});
    }
    for (Node& node : Instantiate(body.nodes, suffix, g, &remap))
      ctx->Canonicalize(std::move(node));
    auto result = [&](size_t k) {
      auto it = remap.find(body.outputs[k]);
      return it == remap.end() ? body.outputs[k] : it->second;
    };
    for (size_t k = 0; k < state_count; ++k) run.states[k] = result(k);
    for (size_t k = 0; k < run.steps.size(); ++k) run.steps[k].push_back(result(state_count + k));
  }
  return run;
}

// How a Scan's inputs and outputs divide: opset 8's sequence_lens first (`first` 1), the states,
// then the scan inputs; the final states, then the scan outputs.
struct ScanSignature {
  size_t first, states, scans, outputs;
};

ScanSignature CheckScanSignature(const Node& n, const Subgraph& body, bool batched) {
  ScanSignature sig{batched ? size_t{1} : size_t{0}, 0, 0, 0};
  if (n.inputs.size() <= sig.first) NodeError(n, "has no scan input");
  const size_t inputs = n.inputs.size() - sig.first;
  const int64_t m = n.GetInt("num_scan_inputs");
  if (m < 1 || static_cast<size_t>(m) > inputs) {
    NodeError(n, "attribute 'num_scan_inputs' must be in [1, " + std::to_string(inputs) +
                     "] (its inputs), got " + std::to_string(m));
  }
  sig.scans = static_cast<size_t>(m);
  sig.states = inputs - sig.scans;
  if (n.outputs.size() < sig.states || body.inputs.size() != inputs ||
      body.outputs.size() != n.outputs.size()) {
    NodeError(n, "the body takes " + std::to_string(body.inputs.size()) + " inputs and gives " +
                     std::to_string(body.outputs.size()) + "; expected " + std::to_string(inputs) +
                     " inputs (" + std::to_string(sig.states) + " states, " +
                     std::to_string(sig.scans) + " scanned) and " +
                     std::to_string(n.outputs.size()) + " outputs (the Scan's)");
  }
  sig.outputs = n.outputs.size() - sig.states;
  return sig;
}

// The sequence length every scan input shares along its axis, and opset 8's batch (1 from opset
// 9), with each of `axes` made non-negative. Refuses what cannot be unrolled: unequal lengths,
// a batch some input lacks, a shorter sequence_lens, an empty or over-long sequence.
struct ScanSequence {
  int64_t steps, batch;
};

ScanSequence CheckScanSequence(const Node& n, const ScanSignature& sig, bool batched,
                               const Subgraph& body, std::vector<int64_t>* axes,
                               CanonicalizeContext* ctx) {
  const int64_t lead = batched ? 1 : 0;
  ScanSequence seq{-1, 1};
  for (size_t j = 0; j < sig.scans; ++j) {
    const Value& v = ctx->graph().value(n.inputs[sig.first + sig.states + j]);
    const int64_t rank = v.type.ndim() - lead;
    const std::string of = "input '" + v.name + "' of rank " + std::to_string(v.type.ndim());
    if (rank < 1) {
      NodeError(n, "scan " + of + " needs " +
                       (batched ? "a batch and a sequence axis" : "an axis to scan"));
    }
    (*axes)[j] = ScanAxis(n, "scan_input_axes", j, (*axes)[j], rank, of);
    const int64_t length = v.type.shape[static_cast<size_t>((*axes)[j] + lead)];
    if (seq.steps >= 0 && length != seq.steps) {
      NodeError(n, "scan input '" + v.name + "' has " + std::to_string(length) +
                       " elements along its scan axis, the first has " + std::to_string(seq.steps) +
                       "; all must be as long");
    }
    seq.steps = length;
    if (batched) seq.batch = v.type.shape[0];
  }
  for (size_t i = sig.first; batched && i < n.inputs.size(); ++i) {
    const TensorType& t = ctx->TypeOf(n.inputs[i]);
    if (t.ndim() < 1 || t.shape[0] != seq.batch) {
      NodeError(n, "input '" + ctx->graph().value(n.inputs[i]).name + "' must have the batch (" +
                       std::to_string(seq.batch) + ") as its first dimension, got " + t.ToString());
    }
  }
  if (batched && n.HasInput(0)) {
    const HostTensorPtr lens = ctx->ConstInput(n, 0, "sequence_lens");
    for (int64_t b = 0; b < lens->NumElements(); ++b) {
      if (lens->GetAsDouble(b) != static_cast<double>(seq.steps)) {
        NodeUnsupported(n, "sequence_lens[" + std::to_string(b) + "] is " +
                               std::to_string(static_cast<int64_t>(lens->GetAsDouble(b))) +
                               ", shorter than the sequence (" + std::to_string(seq.steps) +
                               "); emberc scans whole sequences");
      }
    }
  }
  if ((seq.steps == 0 && sig.outputs > 0) || seq.batch == 0) {
    NodeUnsupported(n, "its scan inputs are empty (" + std::to_string(seq.steps) +
                           " steps, batch " + std::to_string(seq.batch) +
                           "), so its outputs would be too");
  }
  const int64_t body_nodes = std::max<int64_t>(1, static_cast<int64_t>(body.nodes.size()));
  if (seq.steps > kMaxUnrolledNodes / body_nodes / seq.batch) {
    NodeUnsupported(n, "unrolling it takes more than " + std::to_string(kMaxUnrolledNodes) +
                           " nodes (" + std::to_string(seq.steps) + " steps of " +
                           std::to_string(body_nodes) + " nodes)");
  }
  return seq;
}

// Element b of each of `values` along axis 0 (opset 8: the body sees one batch element).
std::vector<int> BatchElement(const Node& n, std::vector<int> values, int64_t b,
                              CanonicalizeContext* ctx) {
  const int index = ctx->Scalar(n.name + "_b", kInt64, static_cast<double>(b));
  for (int& id : values) {
    id =
        ctx->Emit("Gather", n.name + "_b" + std::to_string(b), {id, index}, {{"axis", int64_t{0}}});
  }
  return values;
}

// A Scan unrolled: its sequence length is a static dimension. From opset 9 the inputs are the
// initial states and then the scan inputs, each scanned along its own axis and direction, and
// each scan output stacked along its own. Opset 8's Scan has a batch axis in front of everything
// (the body sees one batch element) and an optional sequence_lens first; each batch element runs
// on its own, all of the sequence (sequence_lens, when given, must be constant and say so).
void UnrollScan(Node n, CanonicalizeContext* ctx) {
  const SubgraphPtr body = n.GetSubgraph("body");
  const bool batched = ctx->opset() < 9;
  const ScanSignature sig = CheckScanSignature(n, *body, batched);
  const char* directions_key = batched ? "directions" : "scan_input_directions";
  std::vector<int64_t> in_axes = PerScanAttr(n, "scan_input_axes", sig.scans, 0);
  const std::vector<int64_t> in_dirs = PerScanAttr(n, directions_key, sig.scans, 0);
  std::vector<int64_t> out_axes = PerScanAttr(n, "scan_output_axes", sig.outputs, 0);
  const std::vector<int64_t> out_dirs = PerScanAttr(n, "scan_output_directions", sig.outputs, 0);
  CheckDirections(n, directions_key, in_dirs);
  CheckDirections(n, "scan_output_directions", out_dirs);
  if (batched && (n.HasAttr("scan_input_axes") || n.HasAttr("scan_output_axes"))) {
    NodeError(n, "Scan of opset 8 scans along axis 1 and takes no scan axes attributes");
  }
  const ScanSequence seq = CheckScanSequence(n, sig, batched, *body, &in_axes, ctx);

  const auto begin = n.inputs.begin() + static_cast<std::ptrdiff_t>(sig.first);
  const std::vector<int> states(begin, begin + static_cast<std::ptrdiff_t>(sig.states));
  const std::vector<int> scans(begin + static_cast<std::ptrdiff_t>(sig.states), n.inputs.end());
  std::vector<ScanRun> runs;
  for (int64_t b = 0; b < seq.batch; ++b) {
    const std::string tag = batched ? "_b" + std::to_string(b) : "";
    runs.push_back(RunScanBody(n, *body, batched ? BatchElement(n, states, b, ctx) : states,
                               batched ? BatchElement(n, scans, b, ctx) : scans, in_axes, in_dirs,
                               seq.steps, tag, ctx));
  }
  if (!batched) {
    for (size_t k = 0; k < sig.states; ++k) {
      ctx->EmitInto(Node{"Identity",
                         n.name + "_out" + std::to_string(k),
                         {},
                         {runs[0].states[k]},
                         {n.outputs[k]}});
    }
    for (size_t k = 0; k < sig.outputs; ++k) {
      const int64_t rank = ctx->TypeOf(runs[0].steps[k].at(0)).ndim() + 1;
      const std::string of =
          "scan output " + std::to_string(k) + " (rank " + std::to_string(rank) + ")";
      StackSteps(n, runs[0].steps[k], ScanAxis(n, "scan_output_axes", k, out_axes[k], rank, of),
                 out_dirs[k] != 0, n.outputs[sig.states + k], ctx);
    }
    return;
  }
  // Opset 8: each batch element's final states and stacked steps, then the batch in front.
  for (size_t k = 0; k < sig.states; ++k) {
    std::vector<int> per_batch;
    for (const ScanRun& run : runs) per_batch.push_back(run.states[k]);
    StackSteps(n, per_batch, 0, false, n.outputs[k], ctx);
  }
  for (size_t k = 0; k < sig.outputs; ++k) {
    std::vector<int> per_batch;
    for (const ScanRun& run : runs) {
      const TensorType& step = ctx->TypeOf(run.steps[k].at(0));
      std::vector<int64_t> shape = step.shape;
      shape.insert(shape.begin(), seq.steps);
      const int stacked = ctx->graph().AddValue(ctx->graph().UniqueName(n.name + "_stacked"),
                                                TensorType{shape, step.dtype});
      StackSteps(n, run.steps[k], 0, false, stacked, ctx);
      per_batch.push_back(stacked);
    }
    StackSteps(n, per_batch, 0, false, n.outputs[sig.states + k], ctx);
  }
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("If", CanonicalizeIf);
EMBER_REGISTER_OP_CANONICALIZE("Loop", UnrollLoop);
EMBER_REGISTER_OP_CANONICALIZE("Scan", UnrollScan);

}  // namespace compiler
}  // namespace ember
