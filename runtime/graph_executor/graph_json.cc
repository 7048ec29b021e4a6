// graph.json parsing; the format is described in graph_json.h.
#include "graph_executor/graph_json.h"

#include <ember/runtime/logging.h>

#include <cctype>
#include <cstdio>
#include <limits>
#include <vector>

#include "graph_executor/storage_plan_check.h"

namespace ember::runtime {
namespace {

// Nesting deeper than this inside a skipped (unknown) value is refused rather than recursed into.
constexpr int kMaxSkipDepth = 64;
// More outputs than this on one node is not a real graph; it bounds entry counts early.
constexpr uint32_t kMaxNodeOutputs = 1 << 16;
// The executor supports tensors of up to this many dimensions.
constexpr size_t kMaxDims = 32;

// A JSON tokenizer over the text in memory with the calls of dmlc::JSONReader, which this file
// used before: dmlc's reader streams through an istringstream and its templates and messages
// cost the runtime about 12 KB. A syntax error names the line and column; the end of the text
// closes nothing (dmlc's reader took it for a closing bracket).
class JsonCursor {
 public:
  JsonCursor(const std::string& text, const std::string& source)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), source_(source) {}

  // The next non-space character, not consumed; EOF at the end.
  int Peek() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
    return p_ < end_ ? static_cast<unsigned char>(*p_) : EOF;
  }

  void BeginObject() { Open('{'); }
  void BeginArray() { Open('['); }

  // Reads the next key of the innermost object and its ':'; false at its '}'.
  bool NextObjectItem(std::string* key) {
    if (!NextItem('}')) return false;
    ReadString(key);
    if (Peek() != ':') Fail("expected ':' after an object key");
    ++p_;
    return true;
  }

  // Positions at the next item of the innermost array; false at its ']'.
  bool NextArrayItem() { return NextItem(']'); }

  void ReadString(std::string* out) {
    if (Peek() != '"') Fail("expected a string");
    ++p_;
    out->clear();
    while (true) {
      if (p_ >= end_ || *p_ == '\n' || *p_ == '\r') Fail("unterminated string");
      char c = *p_++;
      if (c == '"') return;
      if (c == '\\') {
        char e = p_ < end_ ? *p_++ : '\0';
        switch (e) {
          case '"':
          case '\\':
          case '/':
            c = e;
            break;
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case 'b':
            c = '\b';
            break;
          case 'f':
            c = '\f';
            break;
          default:
            --p_;
            Fail("unknown string escape");
        }
      }
      out->push_back(c);
    }
  }

  // An integer; a fraction, an exponent or a value beyond int64 is refused.
  int64_t ReadInt() {
    Peek();
    bool negative = p_ < end_ && *p_ == '-';
    if (negative) ++p_;
    if (p_ >= end_ || *p_ < '0' || *p_ > '9') Fail("expected a number");
    uint64_t v = 0;
    const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + negative;
    for (; p_ < end_ && *p_ >= '0' && *p_ <= '9'; ++p_) {
      uint64_t digit = static_cast<uint64_t>(*p_ - '0');
      if (v > (limit - digit) / 10) Fail("number out of the 64-bit integer range");
      v = v * 10 + digit;
    }
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) Fail("expected an integer");
    return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  }

  // Consumes a bare token (number, true, false, null); empty if none starts here.
  std::string Token() {
    Peek();
    const char* start = p_;
    while (p_ < end_ && (std::isalnum(static_cast<unsigned char>(*p_)) || *p_ == '-' ||
                         *p_ == '+' || *p_ == '.')) {
      ++p_;
    }
    return std::string(start, p_);
  }

 private:
  [[noreturn]] void Fail(const char* what) {
    int line = 1;
    const char* line_start = begin_;
    for (const char* q = begin_; q < p_ && q < end_; ++q) {
      if (*q == '\n') {
        ++line;
        line_start = q + 1;
      }
    }
    EMBER_LOG_FATAL << source_ << ": malformed JSON: " << what << " at line " << line << ", column "
                    << (p_ - line_start + 1);
  }

  void Open(char bracket) {
    if (Peek() != bracket) Fail(bracket == '{' ? "expected '{'" : "expected '['");
    ++p_;
    first_.push_back(1);
  }

  bool NextItem(char close) {
    int c = Peek();
    if (c == close) {
      ++p_;
      first_.pop_back();
      return false;
    }
    if (!first_.back()) {
      if (c != ',') Fail(close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
      ++p_;
    }
    first_.back() = 0;
    return true;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  const std::string& source_;
  std::string first_;  // per open bracket: 1 while no item has been read (no vector<bool> code)
};

// Walks the JSON with the cursor, reading the fields graph.json defines and skipping the rest.
class Walker {
 public:
  Walker(const std::string& json, const std::string& source)
      : reader_(json, source), source_(source) {}

  JsonCursor* reader() { return &reader_; }

  int Peek() { return reader_.Peek(); }

  // Skips any JSON value.
  void Skip(int depth = 0) {
    if (depth > kMaxSkipDepth) {
      EMBER_LOG_FATAL << source_ << ": JSON nested deeper than " << kMaxSkipDepth << " levels";
    }
    int c = Peek();
    std::string key;
    if (c == '{') {
      reader_.BeginObject();
      while (reader_.NextObjectItem(&key)) Skip(depth + 1);
    } else if (c == '[') {
      reader_.BeginArray();
      while (reader_.NextArrayItem()) Skip(depth + 1);
    } else if (c == '"') {
      reader_.ReadString(&key);
    } else {
      // A number, true, false or null.
      if (reader_.Token().empty()) {
        EMBER_LOG_FATAL << source_ << ": malformed JSON: unexpected character "
                        << (c == EOF ? std::string("<end of file>")
                                     : "'" + std::string(1, static_cast<char>(c)) + "'");
      }
    }
  }

  int64_t ReadInt(const std::string& what) {
    int c = Peek();
    if (!(c == '-' || (c >= '0' && c <= '9'))) {
      EMBER_LOG_FATAL << source_ << ": " << what << " must be an integer";
    }
    return reader_.ReadInt();
  }

  uint32_t ReadIndex(const std::string& what) {
    int64_t v = ReadInt(what);
    if (v < 0 || v > std::numeric_limits<uint32_t>::max()) {
      EMBER_LOG_FATAL << source_ << ": " << what << " is " << v << ", expected 0.."
                      << std::numeric_limits<uint32_t>::max();
    }
    return static_cast<uint32_t>(v);
  }

  std::vector<uint32_t> ReadIndexList(const std::string& what) {
    std::vector<uint32_t> out;
    reader_.BeginArray();
    while (reader_.NextArrayItem()) out.push_back(ReadIndex(what));
    return out;
  }

  std::vector<int64_t> ReadIntList(const std::string& what) {
    std::vector<int64_t> out;
    reader_.BeginArray();
    while (reader_.NextArrayItem()) out.push_back(ReadInt(what));
    return out;
  }

  // [nid, index] or [nid, index, version].
  GraphEntry ReadEntry(const std::string& what) {
    GraphEntry e;
    reader_.BeginArray();
    EMBER_CHECK(reader_.NextArrayItem()) << source_ << ": " << what << " is empty";
    e.node_id = ReadIndex(what + " node id");
    EMBER_CHECK(reader_.NextArrayItem()) << source_ << ": " << what << " has no output index";
    e.index = ReadIndex(what + " output index");
    if (reader_.NextArrayItem()) {
      e.version = ReadIndex(what + " version");
      if (reader_.NextArrayItem()) {
        EMBER_LOG_FATAL << source_ << ": " << what
                        << " has more than 3 items (expected [node, index, version])";
      }
    }
    return e;
  }

  std::vector<GraphEntry> ReadEntryList(const std::string& what) {
    std::vector<GraphEntry> out;
    reader_.BeginArray();
    while (reader_.NextArrayItem()) {
      out.push_back(ReadEntry(what + "[" + std::to_string(out.size()) + "]"));
    }
    return out;
  }

  // An attribute value: a string, or a number given without quotes.
  std::string ReadScalarText(const std::string& what) {
    int c = Peek();
    std::string s;
    if (c == '"') {
      reader_.ReadString(&s);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      s = std::to_string(ReadInt(what));
    } else {
      EMBER_LOG_FATAL << source_ << ": " << what << " must be a string or a number";
    }
    return s;
  }

  const std::string& source() const { return source_; }

 private:
  JsonCursor reader_;
  const std::string& source_;
};

uint32_t ParseCount(const std::string& text, const std::string& what, const std::string& source) {
  uint64_t v = 0;
  bool ok = !text.empty() && text.size() <= 10;
  for (char c : text) {
    if (c < '0' || c > '9') ok = false;
  }
  if (ok) v = std::stoull(text);
  if (!ok || v > kMaxNodeOutputs) {
    EMBER_LOG_FATAL << source << ": " << what << " is \"" << text
                    << "\", expected an integer in 0.." << kMaxNodeOutputs;
  }
  return static_cast<uint32_t>(v);
}

std::string NodeLabel(size_t nid, const GraphNode& n) {
  return "node " + std::to_string(nid) + " (\"" + n.name + "\")";
}

void ReadNodeAttrs(Walker* w, GraphNode* node, const std::string& where, bool* have_func,
                   bool* have_in, bool* have_out) {
  std::string key;
  w->reader()->BeginObject();
  while (w->reader()->NextObjectItem(&key)) {
    std::string what = where + " attrs." + key;
    if (key == "func_name") {
      node->func_name = w->ReadScalarText(what);
      *have_func = true;
    } else if (key == "num_inputs") {
      node->num_inputs = ParseCount(w->ReadScalarText(what), what, w->source());
      *have_in = true;
    } else if (key == "num_outputs") {
      node->num_outputs = ParseCount(w->ReadScalarText(what), what, w->source());
      *have_out = true;
    } else if (key == "flatten_data") {
      node->flatten_data = ParseCount(w->ReadScalarText(what), what, w->source()) != 0;
    } else if (key == "bound_at_compile_time") {
      node->bound_value = w->ReadScalarText(what);
      node->bound = true;
    } else {
      w->Skip();
    }
  }
}

GraphNode ReadNode(Walker* w, size_t nid) {
  GraphNode node;
  std::string where = "nodes[" + std::to_string(nid) + "]";
  bool have_op = false, have_name = false, have_inputs = false;
  bool have_func = false, have_in = false, have_out = false;
  std::string key;
  w->reader()->BeginObject();
  while (w->reader()->NextObjectItem(&key)) {
    if (key == "op") {
      w->reader()->ReadString(&node.op);
      have_op = true;
    } else if (key == "name") {
      w->reader()->ReadString(&node.name);
      have_name = true;
    } else if (key == "inputs") {
      node.inputs = w->ReadEntryList(where + ".inputs");
      have_inputs = true;
    } else if (key == "attrs" || key == "attr" || key == "param") {
      ReadNodeAttrs(w, &node, where, &have_func, &have_in, &have_out);
    } else {
      w->Skip();
    }
  }
  const std::string& src = w->source();
  if (!have_op) EMBER_LOG_FATAL << src << ": " << where << " has no \"op\" field";
  if (!have_name) EMBER_LOG_FATAL << src << ": " << where << " has no \"name\" field";
  if (!have_inputs) EMBER_LOG_FATAL << src << ": " << where << " has no \"inputs\" field";
  if (node.op == "tvm_op") {
    const char* missing = !have_func ? "func_name" : !have_in ? "num_inputs" : nullptr;
    if (!missing && !have_out) missing = "num_outputs";
    if (missing) {
      EMBER_LOG_FATAL << src << ": " << NodeLabel(nid, node) << " has no \"" << missing
                      << "\" in its attrs";
    }
  } else if (node.op == "null") {
    node.num_inputs = 0;
    node.num_outputs = 1;
  } else {
    EMBER_LOG_FATAL << src << ": " << NodeLabel(nid, node) << " has op \"" << node.op
                    << "\"; expected \"null\" or \"tvm_op\"";
  }
  return node;
}

// One of the graph-level "attrs": ["list_<kind>", value].
void ReadGraphAttrs(Walker* w, Graph* g, bool* have_dltype, bool* have_shape, bool* have_sid) {
  std::string key;
  JsonCursor* r = w->reader();
  const std::string& src = w->source();
  r->BeginObject();
  while (r->NextObjectItem(&key)) {
    const char* want = nullptr;
    if (key == "dltype") want = "list_str";
    if (key == "shape") want = "list_shape";
    if (key == "storage_id" || key == "device_index") want = "list_int";
    if (!want) {
      w->Skip();
      continue;
    }
    std::string what = "attrs." + key;
    r->BeginArray();
    EMBER_CHECK(r->NextArrayItem())
        << src << ": " << what << " is empty; expected [\"" << want << "\", [...]]";
    std::string kind;
    r->ReadString(&kind);
    if (kind != want) {
      EMBER_LOG_FATAL << src << ": " << what << " has type \"" << kind << "\", expected \"" << want
                      << "\"";
    }
    EMBER_CHECK(r->NextArrayItem()) << src << ": " << what << " has no value";
    if (key == "dltype") {
      r->BeginArray();
      while (r->NextArrayItem()) {
        g->dltype.emplace_back();
        r->ReadString(&g->dltype.back());
      }
      *have_dltype = true;
    } else if (key == "shape") {
      r->BeginArray();
      while (r->NextArrayItem()) {
        g->shape.push_back(w->ReadIntList(what + "[" + std::to_string(g->shape.size()) + "]"));
        if (g->shape.back().size() > kMaxDims) {
          EMBER_LOG_FATAL << src << ": " << what << "[" << g->shape.size() - 1 << "] has "
                          << g->shape.back().size() << " dimensions, at most " << kMaxDims
                          << " are supported";
        }
      }
      *have_shape = true;
    } else if (key == "storage_id") {
      g->storage_id = w->ReadIntList(what);
      *have_sid = true;
    } else {
      g->device_index = w->ReadIntList(what);
    }
    if (r->NextArrayItem()) {
      EMBER_LOG_FATAL << src << ": " << what << " has more than 2 items; expected [\"" << want
                      << "\", [...]]";
    }
  }
}

void Validate(Graph* g, bool have_row_ptr, const std::string& src) {
  if (g->nodes.empty()) EMBER_LOG_FATAL << src << ": the graph has no nodes";
  if (!have_row_ptr) {
    // Old NNVM graphs omit node_row_ptr; it follows from the output counts.
    uint64_t total = 0;
    g->node_row_ptr.assign(1, 0);
    for (const auto& n : g->nodes) {
      total += n.num_outputs;
      if (total > std::numeric_limits<uint32_t>::max()) {
        EMBER_LOG_FATAL << src << ": the graph has more than 2^32 node outputs";
      }
      g->node_row_ptr.push_back(static_cast<uint32_t>(total));
    }
  }
  if (g->node_row_ptr.size() != g->nodes.size() + 1) {
    EMBER_LOG_FATAL << src << ": node_row_ptr has " << g->node_row_ptr.size()
                    << " items, expected one more than the " << g->nodes.size() << " nodes";
  }
  if (g->node_row_ptr[0] != 0) EMBER_LOG_FATAL << src << ": node_row_ptr must start at 0";
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const GraphNode& n = g->nodes[i];
    uint64_t outs = static_cast<uint64_t>(g->node_row_ptr[i + 1]) - g->node_row_ptr[i];
    if (g->node_row_ptr[i + 1] < g->node_row_ptr[i] || outs != n.num_outputs) {
      EMBER_LOG_FATAL << src << ": node_row_ptr gives " << NodeLabel(i, n) << " "
                      << static_cast<int64_t>(g->node_row_ptr[i + 1]) - g->node_row_ptr[i]
                      << " outputs, but the node has " << n.num_outputs;
    }
    if (n.op == "null" && !n.inputs.empty()) {
      EMBER_LOG_FATAL << src << ": " << NodeLabel(i, n) << " is an input (op \"null\") but lists "
                      << n.inputs.size() << " inputs";
    }
    if (n.op == "tvm_op" && n.inputs.size() != n.num_inputs) {
      EMBER_LOG_FATAL << src << ": " << NodeLabel(i, n) << " has num_inputs " << n.num_inputs
                      << " but lists " << n.inputs.size() << " inputs";
    }
    if (n.op == "tvm_op" && n.func_name.empty()) {
      EMBER_LOG_FATAL << src << ": " << NodeLabel(i, n) << " has an empty func_name";
    }
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const GraphEntry& e = n.inputs[k];
      if (e.node_id >= i) {
        EMBER_LOG_FATAL << src << ": " << NodeLabel(i, n) << " input " << k << " refers to node "
                        << e.node_id << ", which does not come before it";
      }
      if (e.index >= g->nodes[e.node_id].num_outputs) {
        EMBER_LOG_FATAL << src << ": " << NodeLabel(i, n) << " input " << k << " uses output "
                        << e.index << " of " << NodeLabel(e.node_id, g->nodes[e.node_id])
                        << ", which has " << g->nodes[e.node_id].num_outputs << " outputs";
      }
    }
  }
  std::vector<char> seen(g->nodes.size(), 0);  // a flag per node: no hash set code
  for (uint32_t nid : g->arg_nodes) {
    if (nid >= g->nodes.size()) {
      EMBER_LOG_FATAL << src << ": arg_nodes lists node " << nid << " but the graph has "
                      << g->nodes.size() << " nodes";
    }
    if (g->nodes[nid].op != "null") {
      EMBER_LOG_FATAL << src << ": arg_nodes lists " << NodeLabel(nid, g->nodes[nid])
                      << ", which is an operator, not an input";
    }
    if (seen[nid]) EMBER_LOG_FATAL << src << ": arg_nodes lists node " << nid << " twice";
    seen[nid] = 1;
  }
  if (g->heads.empty()) EMBER_LOG_FATAL << src << ": heads is empty; the graph has no outputs";
  for (size_t k = 0; k < g->heads.size(); ++k) {
    const GraphEntry& e = g->heads[k];
    if (e.node_id >= g->nodes.size() || e.index >= g->nodes[e.node_id].num_outputs) {
      EMBER_LOG_FATAL << src << ": heads[" << k << "] refers to output " << e.index << " of node "
                      << e.node_id << ", which does not exist";
    }
  }
  size_t entries = g->NumEntries();
  auto check_len = [&](size_t n, const char* field) {
    if (n != entries) {
      EMBER_LOG_FATAL << src << ": attrs." << field << " has " << n << " items, expected "
                      << entries << " (one per node output)";
    }
  };
  check_len(g->dltype.size(), "dltype");
  check_len(g->shape.size(), "shape");
  check_len(g->storage_id.size(), "storage_id");
  if (!g->device_index.empty()) check_len(g->device_index.size(), "device_index");
  for (size_t i = 0; i < entries; ++i) {
    if (g->storage_id[i] < 0 || static_cast<uint64_t>(g->storage_id[i]) >= entries) {
      EMBER_LOG_FATAL << src << ": attrs.storage_id[" << i << "] is " << g->storage_id[i]
                      << ", expected 0.." << entries - 1;
    }
    for (int64_t d : g->shape[i]) {
      if (d < 0) {
        EMBER_LOG_FATAL << src << ": attrs.shape[" << i << "] has a negative dimension " << d;
      }
    }
  }
}

}  // namespace

Graph ParseGraphJson(const std::string& json, const std::string& source) {
  Graph g;
  // A complete document ends with its top-level '}'; this names truncation as such.
  size_t last = json.find_last_not_of(" \t\r\n");
  if (last == std::string::npos || json[last] != '}') {
    EMBER_LOG_FATAL << source << ": malformed JSON: the text does not end with '}' (truncated?)";
  }
  Walker w(json, source);
  bool have_nodes = false, have_args = false, have_row_ptr = false, have_heads = false;
  bool have_attrs = false, have_dltype = false, have_shape = false, have_sid = false;
  {
    std::string key;
    JsonCursor* r = w.reader();
    r->BeginObject();
    while (r->NextObjectItem(&key)) {
      if (key == "nodes") {
        r->BeginArray();
        while (r->NextArrayItem()) g.nodes.push_back(ReadNode(&w, g.nodes.size()));
        have_nodes = true;
      } else if (key == "arg_nodes") {
        g.arg_nodes = w.ReadIndexList("arg_nodes item");
        have_args = true;
      } else if (key == "node_row_ptr") {
        g.node_row_ptr = w.ReadIndexList("node_row_ptr item");
        have_row_ptr = true;
      } else if (key == "heads") {
        g.heads = w.ReadEntryList("heads");
        have_heads = true;
      } else if (key == "attrs") {
        ReadGraphAttrs(&w, &g, &have_dltype, &have_shape, &have_sid);
        have_attrs = true;
      } else {
        w.Skip();
      }
    }
    if (w.Peek() != EOF) {
      EMBER_LOG_FATAL << source << ": malformed JSON: unexpected text after the top-level object";
    }
  }
  const char* missing = !have_nodes    ? "nodes"
                        : !have_args   ? "arg_nodes"
                        : !have_heads  ? "heads"
                        : !have_attrs  ? "attrs"
                        : !have_dltype ? "attrs.dltype"
                        : !have_shape  ? "attrs.shape"
                        : !have_sid    ? "attrs.storage_id"
                                       : nullptr;
  if (missing) EMBER_LOG_FATAL << source << ": required field \"" << missing << "\" is missing";
  Validate(&g, have_row_ptr, source);
  CheckStoragePlan(g, source);
  return g;
}

}  // namespace ember::runtime
