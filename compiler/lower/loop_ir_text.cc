// Text form of the loop IR, for --dump-ir and tests.
#include <sstream>

#include "ember/compiler/lower.h"

namespace ember::compiler::lower {

namespace {

const char* ForKindName(ForKind k) {
  switch (k) {
    case ForKind::kSerial:
      return "for";
    case ForKind::kParallel:
      return "parallel for";
    case ForKind::kVectorized:
      return "vectorized for";
    case ForKind::kUnrolled:
      return "unrolled for";
  }
  return "for";
}

std::string ExprText(const te::Expr& e);

// te::ToString does not know buffers; rewrite loads as name[index] here.
std::string ExprText(const te::Expr& e) {
  if (e.defined() && e.kind() == te::ExprKind::kBufferLoad) {
    auto* l = e.as<BufferLoadNode>();
    return l->buffer->name + "[" + ExprText(l->index) + "]";
  }
  std::string s = te::ToString(e);
  return s;
}

void PrintStmt(std::ostream& os, const Stmt& s, int indent) {
  std::string pad(static_cast<size_t>(indent) * 2, ' ');
  if (!s) return;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto* f = static_cast<const ForNode*>(s.get());
      os << pad << ForKindName(f->for_kind) << " " << te::ToString(f->var) << " in [0, "
         << f->extent << ")";
      if (f->limit.defined())
        os << " while " << te::ToString(f->var) << " < " << ExprText(f->limit);
      os << ":\n";
      PrintStmt(os, f->body, indent + 1);
      break;
    }
    case StmtKind::kStore: {
      auto* p = static_cast<const StoreNode*>(s.get());
      os << pad << p->buffer->name << "[" << ExprText(p->index) << "] = " << ExprText(p->value)
         << "\n";
      break;
    }
    case StmtKind::kPrefetch: {
      auto* p = static_cast<const PrefetchNode*>(s.get());
      os << pad << "prefetch " << p->buffer->name << "[" << ExprText(p->index) << "]\n";
      break;
    }
    case StmtKind::kIndexCheck: {
      auto* p = static_cast<const IndexCheckNode*>(s.get());
      os << pad << "check " << p->buffer->name << "[" << p->first << ":" << p->count;
      if (p->step != 1) os << ":" << p->step;
      os << "] in [" << (p->non_negative ? 0 : -p->extent) << ", " << p->extent << ")\n";
      break;
    }
    case StmtKind::kIf: {
      auto* p = static_cast<const IfNode*>(s.get());
      os << pad << "if " << ExprText(p->cond) << ":\n";
      PrintStmt(os, p->then_case, indent + 1);
      if (p->else_case) {
        os << pad << "else:\n";
        PrintStmt(os, p->else_case, indent + 1);
      }
      break;
    }
    case StmtKind::kSeq:
      for (auto& x : static_cast<const SeqNode*>(s.get())->stmts) PrintStmt(os, x, indent);
      break;
  }
}

}  // namespace

std::string ToText(const LoweredFunc& f) {
  std::ostringstream os;
  os << "func " << f.name << "(";
  for (size_t i = 0; i < f.args.size(); ++i) {
    if (i) os << ", ";
    os << f.args[i].buffer->name << ": " << te::DataTypeName(f.args[i].buffer->dtype) << "[";
    for (size_t d = 0; d < f.args[i].shape.size(); ++d) {
      os << (d ? "," : "") << f.args[i].shape[d];
    }
    os << "]";
  }
  os << ")\n";
  for (auto& w : f.workspaces) {
    os << "  workspace " << w->name << ": " << te::DataTypeName(w->dtype) << "[" << w->size
       << "]\n";
  }
  for (const auto& [view, target] : f.aliases) {
    os << "  alias " << view->name << ": " << te::DataTypeName(view->dtype) << "[" << view->size
       << "] = " << (target->scope == BufferScope::kConstant ? "constant " : "") << target->name
       << "\n";
  }
  PrintStmt(os, f.body, 1);
  return os.str();
}

}  // namespace ember::compiler::lower
