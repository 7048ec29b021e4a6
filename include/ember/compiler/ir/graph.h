/*!
 * \file ember/compiler/ir/graph.h
 * \brief The graph IR: values (tensors with static types, maybe constant), nodes (ONNX ops), graph.
 */
#ifndef EMBER_COMPILER_IR_GRAPH_H_
#define EMBER_COMPILER_IR_GRAPH_H_

#include <ember/compiler/ir/attribute.h>
#include <ember/compiler/ir/tensor_type.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ember {
namespace compiler {

/*! \brief Marks an absent optional input in Node::inputs. */
constexpr int kAbsentValue = -1;

/*! \brief A tensor of the graph. Its id is its index in Graph::values(). */
struct Value {
  int id = -1;
  std::string name;
  TensorType type;
  /*! \brief Set for constants (initializers, Constant nodes, folded results). */
  HostTensorPtr constant;

  bool is_constant() const { return constant != nullptr; }
};

/*! \brief One operator application; op is the ONNX op type ("Conv"). */
struct Node {
  std::string op;
  std::string name;
  AttrMap attrs;
  std::vector<int> inputs;   // value ids; kAbsentValue for an omitted optional input
  std::vector<int> outputs;  // value ids

  /*! \brief "node 'conv1' (Conv)" — the prefix of every error about this node. */
  std::string Describe() const;

  bool HasAttr(const std::string& key) const { return attrs.count(key) != 0; }
  /*! \brief Typed accessors: throw CompileError naming node, op and attribute when missing or
   * mistyped. */
  int64_t GetInt(const std::string& key) const;
  int64_t GetInt(const std::string& key, int64_t dflt) const;
  double GetFloat(const std::string& key) const;  // accepts an int attribute too
  double GetFloat(const std::string& key, double dflt) const;
  std::string GetString(const std::string& key) const;
  std::string GetString(const std::string& key, const std::string& dflt) const;
  std::vector<int64_t> GetInts(const std::string& key) const;
  std::vector<int64_t> GetInts(const std::string& key, const std::vector<int64_t>& dflt) const;
  std::vector<double> GetFloats(const std::string& key) const;
  std::vector<double> GetFloats(const std::string& key, const std::vector<double>& dflt) const;
  std::vector<std::string> GetStrings(const std::string& key) const;
  HostTensorPtr GetTensor(const std::string& key) const;
  SubgraphPtr GetSubgraph(const std::string& key) const;

  /*! \brief True when input i exists (not absent and in range). */
  bool HasInput(size_t i) const { return i < inputs.size() && inputs[i] != kAbsentValue; }
};

/*!
 * \brief A model input that emberc --bind NAME=VALUE made a constant. The artifact keeps a record
 *        of it so a runtime can refuse a value for it, saying it was bound at compile time.
 */
struct BoundInput {
  std::string name;
  TensorType type;
  std::string value;  // as the user wrote it
};

/*!
 * \brief A dataflow graph with static types. Nodes are kept in topological order by every pass.
 *
 * Values are never deleted (ids stay stable); unused ones are simply not referenced. Graph inputs
 * are runtime inputs (never constants); outputs are in the model's output order.
 */
class Graph {
 public:
  std::string name;
  /*! \brief Static types the model itself declares (ONNX graph outputs / value_info), by value id;
   *  used only where a shape cannot be derived (e.g. Resize with run-time scales). */
  std::map<int, TensorType> declared_types;
  /*! \brief Inputs turned into constants by emberc --bind, in the order given. */
  std::vector<BoundInput> bound_inputs;

  int AddValue(const std::string& name, const TensorType& type);
  int AddConstant(const std::string& name, HostTensorPtr data);
  /*! \brief A fresh name "<base>" or "<base>_N" not used by any value yet. */
  std::string UniqueName(const std::string& base);

  /*! \brief The values, in a deque: adding one (AddValue, AddConstant, a pass's Emit) leaves
   *  references to the others valid, so a pass may hold `const Value&` or `const TensorType&`
   *  across the nodes it emits (with a vector those dangled: use-after-free that ASan found in
   *  FuseOps and, by the mutation sweep, in BatchNormalization's training expansion). */
  using ValueList = std::deque<Value>;
  Value& value(int id) { return values_.at(static_cast<size_t>(id)); }
  const Value& value(int id) const { return values_.at(static_cast<size_t>(id)); }
  ValueList& values() { return values_; }
  const ValueList& values() const { return values_; }

  std::vector<Node>& nodes() { return nodes_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<int>& inputs() { return inputs_; }
  const std::vector<int>& inputs() const { return inputs_; }
  std::vector<int>& outputs() { return outputs_; }
  const std::vector<int>& outputs() const { return outputs_; }

  /*! \brief Number of node inputs + graph outputs that read each value (indexed by value id). */
  std::vector<int> UseCounts() const;
  /*! \brief Index of the node producing each value, or -1 (indexed by value id). */
  std::vector<int> Producers() const;
  /*! \brief Indices of the nodes reading each value, in node order (indexed by value id). */
  std::vector<std::vector<size_t>> Readers() const;
  /*! \brief Replace every use of `from` (node inputs and graph outputs) by `to`. */
  void ReplaceAllUses(int from, int to);

  /*! \brief Human-readable listing, one node per line. */
  std::string ToText() const;
  /*! \brief Graphviz DOT. */
  std::string ToDot() const;

 private:
  ValueList values_;
  std::vector<Node> nodes_;
  std::vector<int> inputs_;
  std::vector<int> outputs_;
  // UniqueName's index of the names of values_[0, indexed_values_): values are only ever added
  // (never renamed), so each call indexes the new ones instead of hashing every name again (that
  // was quadratic: 2 s to expand a 256-step GRU).
  std::unordered_set<std::string> name_index_;
  size_t indexed_values_ = 0;
  std::unordered_map<std::string, int64_t> next_suffix_;  // per base: where the search resumes
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_GRAPH_H_
