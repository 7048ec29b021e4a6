#include "driver/control_flow_scheduler.h"

#include <ember/compiler/ir/fused_group.h>
#include <ember/compiler/ir/subgraph.h>
#include <ember/compiler/transform.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "driver/graph_passes.h"
#include "ops/op_common.h"

namespace ember {
namespace compiler {
namespace {

using lower::Buffer;
using lower::BufferScope;
using lower::LoweredFunc;

// Builds the function of one If group: its arguments are the group's, its body tests the
// condition and runs one branch's kernels.
class IfFunctionBuilder {
 public:
  IfFunctionBuilder(const FusedGroup& group, const lower::ScheduleOptions& opts,
                    const KernelStrategy& strategy, int opt_level)
      : group_(group),
        node_(*group.nodes.front()),
        opts_(opts),
        strategy_(strategy),
        opt_level_(opt_level) {
    arg_values_ = group.inputs;
    arg_values_.insert(arg_values_.end(), group.outputs.begin(), group.outputs.end());
  }

  LoweredFunc Build() {
    const Graph& g = *group_.graph;
    f_.name = group_.func_name;
    for (int vid : arg_values_) {
      const Value& v = g.value(vid);
      lower::ArgInfo a{v.name, v.type.shape, v.type.dtype, nullptr};
      a.buffer = lower::NewArgBuffer(a, static_cast<int>(f_.args.size()));
      f_.args.push_back(a);
    }
    const Buffer& cond = ArgOf(node_.inputs[0]);
    te::Expr taken = lower::BufferLoad(cond, te::IntImm(te::Index(), 0));
    if (!te::IsBool(cond->dtype)) taken = taken != te::Const(cond->dtype, 0);
    f_.body = lower::If(taken, Branch("then_branch"), Branch("else_branch"));
    return f_;
  }

 private:
  const Buffer& ArgOf(int vid) const {
    auto it = std::find(arg_values_.begin(), arg_values_.end(), vid);
    return f_.args.at(static_cast<size_t>(it - arg_values_.begin())).buffer;
  }

  // The If's output j: its argument, or scratch memory when nothing reads it.
  Buffer OutputBuffer(size_t j) {
    const int vid = node_.outputs[j];
    if (std::find(group_.outputs.begin(), group_.outputs.end(), vid) != group_.outputs.end()) {
      return ArgOf(vid);
    }
    return NewWorkspace(group_.graph->value(vid));
  }

  Buffer NewWorkspace(const Value& v) {
    Buffer b = lower::NewBuffer(v.name, ops::ExprType(v.type.dtype), v.type.NumElements(),
                                BufferScope::kWorkspace);
    f_.workspaces.push_back(b);
    return b;
  }

  // Where a value of the branch graph lives in the If's function.
  Buffer BufferOf(const Graph& branch, int vid, std::map<int, Buffer>* where) {
    auto it = where->find(vid);
    if (it != where->end()) return it->second;
    const Value& v = branch.value(vid);
    Buffer b;
    if (v.is_constant()) {
      auto c = std::make_shared<lower::BufferNode>(*lower::NewBuffer(
          v.name, ops::ExprType(v.type.dtype), v.type.NumElements(), BufferScope::kConstant));
      c->bytes = v.constant->data;
      b = c;
    } else {
      b = NewWorkspace(v);
    }
    return (*where)[vid] = b;
  }

  // The branch compiled as a graph of its own, its kernels' bodies in order.
  lower::Stmt Branch(const char* key) {
    const SubgraphPtr sub = node_.GetSubgraph(key);
    Graph branch;
    branch.name = group_.func_name + "_" + key;
    branch.values() = group_.graph->values();
    branch.inputs() = sub->inputs;
    branch.nodes() = sub->nodes;
    branch.outputs() = sub->outputs;
    for (const Pass& p : GraphPasses(strategy_)) p.run(&branch);
    const std::vector<FusedGroup> kernels = FuseOps(&branch, opt_level_);

    std::map<int, Buffer> where;
    for (size_t k = 0; k < sub->inputs.size(); ++k) {
      where[sub->inputs[k]] = ArgOf(node_.inputs.at(1 + k));
    }
    for (size_t j = 0; j < branch.outputs().size(); ++j) {
      if (!where.emplace(branch.outputs()[j], OutputBuffer(j)).second) {
        throw UnsupportedError(node_.Describe() + ": " + key + " gives value '" +
                               branch.value(branch.outputs()[j]).name +
                               "' as two outputs; emberc needs one value per output");
      }
    }
    std::vector<lower::Stmt> body;
    for (const FusedGroup& kernel : kernels) {
      LoweredFunc lf = lower::LowerGroup(kernel, opts_);
      std::vector<int> values = kernel.inputs;
      values.insert(values.end(), kernel.outputs.begin(), kernel.outputs.end());
      for (size_t i = 0; i < lf.args.size(); ++i) {
        f_.aliases.emplace_back(lf.args[i].buffer, BufferOf(branch, values.at(i), &where));
      }
      // The kernel's checks of its run-time indices run where it would start, in the branch.
      for (const lower::IndexCheck& check : lf.index_checks) {
        const Buffer& indices = lf.args.at(static_cast<size_t>(check.arg)).buffer;
        body.push_back(lower::CheckIndices(indices, indices->size, check.extent, check.message,
                                           check.first, check.step, check.non_negative));
      }
      // After the kernel's own arguments: a nested If's views name its arguments.
      f_.aliases.insert(f_.aliases.end(), lf.aliases.begin(), lf.aliases.end());
      f_.workspaces.insert(f_.workspaces.end(), lf.workspaces.begin(), lf.workspaces.end());
      f_.locals.insert(f_.locals.end(), lf.locals.begin(), lf.locals.end());
      f_.prefer_vector_bits = std::max(f_.prefer_vector_bits, lf.prefer_vector_bits);
      body.push_back(lf.body);
    }
    return lower::Seq(std::move(body));
  }

  const FusedGroup& group_;
  const Node& node_;
  const lower::ScheduleOptions& opts_;
  const KernelStrategy& strategy_;
  const int opt_level_;
  std::vector<int> arg_values_;  // the function's arguments: the group's inputs, then outputs
  LoweredFunc f_;
};

}  // namespace

bool ControlFlowScheduler::Schedule(const FusedGroup& group, const lower::ScheduleOptions& opts,
                                    LoweredFunc* out) const {
  if (group.nodes.size() == 1 && group.nodes.front()->op == "If") {
    *out = IfFunctionBuilder(group, opts, *strategy_, opt_level_).Build();
    return true;
  }
  return kernels_ != nullptr && kernels_->Schedule(group, opts, out);
}

}  // namespace compiler
}  // namespace ember
