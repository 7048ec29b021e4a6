#include <ember/compiler/ir/graph.h>
#include <ember/compiler/ir/subgraph.h>

#include <algorithm>
#include <sstream>
#include <unordered_set>

namespace ember {
namespace compiler {

std::string AttrKindName(const AttrValue& v) {
  static const char* kNames[] = {"int",    "float",   "string", "ints",
                                 "floats", "strings", "tensor", "graph"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == std::variant_size_v<AttrValue>);
  return kNames[v.index()];
}

namespace {
template <typename T>
std::string JoinList(const std::vector<T>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << "]";
  return os.str();
}
}  // namespace

std::string AttrToString(const AttrValue& v) {
  switch (v.index()) {
    case 0:
      return std::to_string(std::get<int64_t>(v));
    case 1: {
      std::ostringstream os;
      os << std::get<double>(v);
      return os.str();
    }
    case 2:
      return "\"" + std::get<std::string>(v) + "\"";
    case 3:
      return JoinList(std::get<std::vector<int64_t>>(v));
    case 4:
      return JoinList(std::get<std::vector<double>>(v));
    case 5:
      return JoinList(std::get<std::vector<std::string>>(v));
    case 6: {
      const auto& t = std::get<HostTensorPtr>(v);
      return "tensor<" + (t ? t->type.ToString() : std::string("null")) + ">";
    }
    default: {
      const auto& sub = std::get<SubgraphPtr>(v);
      return "graph<" + (sub ? std::to_string(sub->nodes.size()) + " nodes" : "null") + ">";
    }
  }
}

std::string Node::Describe() const { return "node '" + name + "' (" + op + ")"; }

namespace {

template <typename T>
const T& GetAttrAs(const Node& n, const std::string& key, const char* want) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) {
    throw CompileError(n.Describe() + ": missing required attribute '" + key + "'");
  }
  const T* p = std::get_if<T>(&it->second);
  if (!p) {
    throw CompileError(n.Describe() + ": attribute '" + key + "' must be " + want + ", got " +
                       AttrKindName(it->second));
  }
  return *p;
}

}  // namespace

int64_t Node::GetInt(const std::string& key) const { return GetAttrAs<int64_t>(*this, key, "int"); }
int64_t Node::GetInt(const std::string& key, int64_t dflt) const {
  return HasAttr(key) ? GetInt(key) : dflt;
}
double Node::GetFloat(const std::string& key) const {
  auto it = attrs.find(key);
  if (it != attrs.end()) {
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  }
  return GetAttrAs<double>(*this, key, "float");
}
double Node::GetFloat(const std::string& key, double dflt) const {
  return HasAttr(key) ? GetFloat(key) : dflt;
}
std::string Node::GetString(const std::string& key) const {
  return GetAttrAs<std::string>(*this, key, "string");
}
std::string Node::GetString(const std::string& key, const std::string& dflt) const {
  return HasAttr(key) ? GetString(key) : dflt;
}
std::vector<int64_t> Node::GetInts(const std::string& key) const {
  return GetAttrAs<std::vector<int64_t>>(*this, key, "ints");
}
std::vector<int64_t> Node::GetInts(const std::string& key, const std::vector<int64_t>& dflt) const {
  return HasAttr(key) ? GetInts(key) : dflt;
}
std::vector<double> Node::GetFloats(const std::string& key) const {
  return GetAttrAs<std::vector<double>>(*this, key, "floats");
}
std::vector<double> Node::GetFloats(const std::string& key, const std::vector<double>& dflt) const {
  return HasAttr(key) ? GetFloats(key) : dflt;
}
std::vector<std::string> Node::GetStrings(const std::string& key) const {
  return GetAttrAs<std::vector<std::string>>(*this, key, "strings");
}
HostTensorPtr Node::GetTensor(const std::string& key) const {
  return GetAttrAs<HostTensorPtr>(*this, key, "tensor");
}

SubgraphPtr Node::GetSubgraph(const std::string& key) const {
  return GetAttrAs<SubgraphPtr>(*this, key, "graph");
}

int Graph::AddValue(const std::string& name, const TensorType& type) {
  Value v;
  v.id = static_cast<int>(values_.size());
  v.name = name;
  v.type = type;
  values_.push_back(std::move(v));
  return values_.back().id;
}

int Graph::AddConstant(const std::string& name, HostTensorPtr data) {
  int id = AddValue(name, data->type);
  values_[static_cast<size_t>(id)].constant = std::move(data);
  return id;
}

std::string Graph::UniqueName(const std::string& base) {
  if (values_.size() < indexed_values_) {  // the value list was replaced wholesale
    name_index_.clear();
    next_suffix_.clear();
    indexed_values_ = 0;
  }
  for (; indexed_values_ < values_.size(); ++indexed_values_) {
    name_index_.insert(values_[indexed_values_].name);
  }
  if (!name_index_.count(base)) return base;
  // Suffixes below the last one handed out for this base are taken (names are never removed),
  // so the search resumes there: an unrolled loop asks for the same base every iteration.
  int64_t& next = next_suffix_[base];
  for (next = std::max<int64_t>(next, 1);; ++next) {
    std::string cand = base + "_" + std::to_string(next);
    if (!name_index_.count(cand)) return cand;
  }
}

std::vector<int> Graph::UseCounts() const {
  std::vector<int> uses(values_.size(), 0);
  for (const Node& n : nodes_) {
    for (int in : n.inputs) {
      if (in != kAbsentValue) ++uses[static_cast<size_t>(in)];
    }
  }
  for (int out : outputs_) ++uses[static_cast<size_t>(out)];
  return uses;
}

std::vector<int> Graph::Producers() const {
  std::vector<int> prod(values_.size(), -1);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (int out : nodes_[i].outputs) prod[static_cast<size_t>(out)] = static_cast<int>(i);
  }
  return prod;
}

std::vector<std::vector<size_t>> Graph::Readers() const {
  std::vector<std::vector<size_t>> readers(values_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (int in : nodes_[i].inputs) {
      if (in != kAbsentValue) readers[static_cast<size_t>(in)].push_back(i);
    }
  }
  return readers;
}

void Graph::ReplaceAllUses(int from, int to) {
  for (Node& n : nodes_) {
    for (int& in : n.inputs) {
      if (in == from) in = to;
    }
  }
  for (int& out : outputs_) {
    if (out == from) out = to;
  }
}

std::string Graph::ToText() const {
  std::ostringstream os;
  os << "graph " << name << " {\n";
  for (int in : inputs_) {
    os << "  input %" << value(in).name << " : " << value(in).type.ToString() << "\n";
  }
  std::vector<int> uses = UseCounts();
  for (const Value& v : values_) {
    if (v.is_constant() && uses[static_cast<size_t>(v.id)] > 0) {
      os << "  const %" << v.name << " : " << v.type.ToString() << "\n";
    }
  }
  for (const Node& n : nodes_) {
    os << "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const Value& v = value(n.outputs[i]);
      os << (i ? ", " : "") << "%" << v.name << " : " << v.type.ToString();
    }
    os << " = " << n.op << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      os << (i ? ", " : "");
      if (n.inputs[i] == kAbsentValue) {
        os << "<absent>";
      } else {
        os << "%" << value(n.inputs[i]).name;
      }
    }
    os << ")";
    if (!n.attrs.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, a] : n.attrs) {
        os << (first ? "" : ", ") << k << "=" << AttrToString(a);
        first = false;
      }
      os << "}";
    }
    os << "  # " << n.name << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < outputs_.size(); ++i) os << (i ? ", %" : " %") << value(outputs_[i]).name;
  os << "\n}\n";
  return os.str();
}

namespace {
std::string DotEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string Graph::ToDot() const {
  std::ostringstream os;
  os << "digraph \"" << DotEscape(name) << "\" {\n  rankdir=TB;\n";
  std::vector<int> prod = Producers();
  std::vector<int> uses = UseCounts();
  for (const Value& v : values_) {
    if (uses[static_cast<size_t>(v.id)] == 0 && prod[static_cast<size_t>(v.id)] < 0) continue;
    if (prod[static_cast<size_t>(v.id)] >= 0) continue;
    os << "  v" << v.id << " [shape=" << (v.is_constant() ? "box" : "ellipse") << ", label=\""
       << DotEscape(v.name) << "\\n"
       << v.type.ToString() << "\"];\n";
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    os << "  n" << i << " [shape=record, label=\"" << DotEscape(n.op) << "\\n"
       << DotEscape(n.name) << "\"];\n";
    for (int in : n.inputs) {
      if (in == kAbsentValue) continue;
      int p = prod[static_cast<size_t>(in)];
      if (p >= 0) {
        os << "  n" << p << " -> n" << i << " [label=\"" << value(in).type.ToString() << "\"];\n";
      } else {
        os << "  v" << in << " -> n" << i << ";\n";
      }
    }
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    int out = outputs_[i];
    os << "  out" << i << " [shape=doublecircle, label=\"" << DotEscape(value(out).name)
       << "\"];\n";
    int p = prod[static_cast<size_t>(out)];
    os << "  " << (p >= 0 ? "n" + std::to_string(p) : "v" + std::to_string(out)) << " -> out" << i
       << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace compiler
}  // namespace ember
