// Canonical forms of If and Loop (registered as their canonicalization rules).
//
// What compile time decides disappears: an If whose condition is known becomes its taken branch,
// a Loop whose trip count and condition are known is unrolled. An If decided by data stays an If
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
    if (scans[k].empty()) NodeUnsupported(n, "runs no iteration, so its scan outputs are empty");
    std::vector<int> rows;
    for (int id : scans[k]) {
      std::vector<int64_t> shape = g.value(id).type.shape;
      shape.insert(shape.begin(), 1);
      rows.push_back(ctx->Emit("Reshape", n.name + "_scan_row", {id}, {{"__out_shape", shape}}));
    }
    ctx->EmitInto(Node{"Concat",
                       n.name + "_scan" + std::to_string(k),
                       {{"axis", int64_t{0}}},
                       rows,
                       {n.outputs[carried_count + k]}});
  }
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("If", CanonicalizeIf);
EMBER_REGISTER_OP_CANONICALIZE("Loop", UnrollLoop);

}  // namespace compiler
}  // namespace ember
