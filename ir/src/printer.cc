// Pseudo-code printer. Binary operators print with C-like precedence so that only the necessary
// parentheses appear; loops print as `for (var, min, extent)` blocks.
#include "loom/ir/printer.h"

#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "loom/ir/tensor.h"

namespace loom::ir {

namespace {

int precedence(ExprKind k) {
  switch (k) {
    case ExprKind::Or:
      return 1;
    case ExprKind::And:
      return 2;
    case ExprKind::EQ:
    case ExprKind::NE:
      return 3;
    case ExprKind::LT:
    case ExprKind::LE:
    case ExprKind::GT:
    case ExprKind::GE:
      return 4;
    case ExprKind::Add:
    case ExprKind::Sub:
      return 5;
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Mod:
      return 6;
    default:
      return 10;  // atoms and calls
  }
}

const char* infix(ExprKind k) {
  switch (k) {
    case ExprKind::Add:
      return " + ";
    case ExprKind::Sub:
      return " - ";
    case ExprKind::Mul:
      return "*";
    case ExprKind::Div:
      return "/";
    case ExprKind::Mod:
      return " % ";
    case ExprKind::EQ:
      return " == ";
    case ExprKind::NE:
      return " != ";
    case ExprKind::LT:
      return " < ";
    case ExprKind::LE:
      return " <= ";
    case ExprKind::GT:
      return " > ";
    case ExprKind::GE:
      return " >= ";
    case ExprKind::And:
      return " && ";
    case ExprKind::Or:
      return " || ";
    default:
      return nullptr;
  }
}

class Printer {
 public:
  explicit Printer(std::ostream& os) : os_(os) {}

  void print(const Expr& e, int parent_prec = 0) {
    if (!e.defined()) {
      os_ << "<undef>";
      return;
    }
    if (auto* b = as_binary(e)) {
      if (const char* sym = infix(e.kind())) {
        int p = precedence(e.kind());
        bool paren = p < parent_prec;
        if (paren) os_ << "(";
        print(b->a, p);
        os_ << sym;
        // Right operand of a non-commutative operator needs parentheses at equal precedence.
        print(b->b, p + 1);
        if (paren) os_ << ")";
      } else {
        os_ << (e.kind() == ExprKind::Min ? "min(" : "max(");
        print(b->a);
        os_ << ", ";
        print(b->b);
        os_ << ")";
      }
      return;
    }
    switch (e.kind()) {
      case ExprKind::IntImm: {
        auto* i = e.as<IntImmNode>();
        if (e.type().is_bool())
          os_ << (i->value ? "true" : "false");
        else if (e.type() == DataType::Int(32))
          os_ << i->value;
        else if (i->value < 0 && parent_prec > 0)
          os_ << "(" << e.type().str() << ")(" << i->value << ")";
        else
          os_ << "(" << e.type().str() << ")" << i->value;
        return;
      }
      case ExprKind::FloatImm: {
        double v = e.as<FloatImmNode>()->value;
        std::ostringstream s;
        s << std::setprecision(9) << v;
        std::string txt = s.str();
        if (std::isfinite(v) && txt.find_first_of(".e") == std::string::npos) txt += ".0";
        os_ << txt << (!std::isfinite(v) ? "" : e.type().bits() == 32 ? "f" : e.type().bits() == 16 ? "h" : "");
        return;
      }
      case ExprKind::StringImm:
        os_ << '"' << e.as<StringImmNode>()->value << '"';
        return;
      case ExprKind::Var:
        os_ << name_of(e.as<VarNode>());
        return;
      case ExprKind::Cast:
        os_ << e.type().str() << "(";
        print(e.as<CastNode>()->value);
        os_ << ")";
        return;
      case ExprKind::Not:
        os_ << "!";
        print(e.as<NotNode>()->a, 10);
        return;
      case ExprKind::Select: {
        auto* s = e.as<SelectNode>();
        os_ << "select(";
        print(s->cond);
        os_ << ", ";
        print(s->true_value);
        os_ << ", ";
        print(s->false_value);
        os_ << ")";
        return;
      }
      case ExprKind::Load: {
        auto* l = e.as<LoadNode>();
        os_ << l->buffer->name << "[";
        print(l->index);
        os_ << "]";
        return;
      }
      case ExprKind::Ramp: {
        auto* r = e.as<RampNode>();
        os_ << "ramp(";
        print(r->base);
        os_ << ", ";
        print(r->stride);
        os_ << ", " << r->lanes << ")";
        return;
      }
      case ExprKind::Broadcast: {
        auto* b = e.as<BroadcastNode>();
        os_ << "x" << b->lanes << "(";
        print(b->value);
        os_ << ")";
        return;
      }
      case ExprKind::Call: {
        auto* c = e.as<CallNode>();
        os_ << c->name << "(";
        print_list(c->args);
        os_ << ")";
        return;
      }
      case ExprKind::Let: {
        auto* l = e.as<LetNode>();
        os_ << "(let " << l->var.name() << " = ";
        print(l->value);
        os_ << " in ";
        print(l->body);
        os_ << ")";
        return;
      }
      case ExprKind::TensorRead: {
        auto* r = e.as<TensorReadNode>();
        os_ << r->op->name << "(";
        print_list(r->indices);
        os_ << ")";
        return;
      }
      case ExprKind::Reduce: {
        auto* r = e.as<ReduceNode>();
        os_ << to_string(r->reduce_kind) << "(";
        print(r->source);
        os_ << ", axis=[";
        for (size_t i = 0; i < r->axes.size(); ++i) {
          os_ << (i ? ", " : "") << r->axes[i]->var.name() << " in [";
          print(r->axes[i]->dom.min);
          os_ << ", ";
          print(is_zero(r->axes[i]->dom.min) ? r->axes[i]->dom.extent : r->axes[i]->dom.min + r->axes[i]->dom.extent);
          os_ << ")";
        }
        os_ << "]";
        if (r->condition.defined()) {
          os_ << ", where ";
          print(r->condition);
        }
        os_ << ")";
        return;
      }
      default:
        os_ << "<?>";
        return;
    }
  }

  void print_list(const std::vector<Expr>& es) {
    for (size_t i = 0; i < es.size(); ++i) {
      if (i) os_ << ", ";
      print(es[i]);
    }
  }

  void print(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::LetStmt: {
        auto* l = s.as<LetStmtNode>();
        indent() << "let " << name_of(l->var.get()) << " = ";
        print(l->value);
        os_ << "\n";
        print(l->body);
        return;
      }
      case StmtKind::Attr: {
        auto* a = s.as<AttrNode>();
        indent() << "// attr " << a->key << " = ";
        print(a->value);
        os_ << "\n";
        print(a->body);
        return;
      }
      case StmtKind::Assert: {
        auto* a = s.as<AssertNode>();
        indent() << "assert(";
        print(a->cond);
        os_ << ", \"" << a->message << "\")\n";
        return;
      }
      case StmtKind::For: {
        auto* f = s.as<ForNode>();
        indent() << to_string(f->for_kind) << " (" << name_of(f->var.get()) << ", ";
        print(f->min);
        os_ << ", ";
        print(f->extent);
        if (f->for_kind == ForKind::ThreadBinding) os_ << ", " << f->thread_tag;
        os_ << ") {\n";
        block(f->body);
        return;
      }
      case StmtKind::Store: {
        auto* st = s.as<StoreNode>();
        indent() << st->buffer->name << "[";
        print(st->index);
        os_ << "] = ";
        print(st->value);
        os_ << "\n";
        return;
      }
      case StmtKind::Provide: {
        auto* p = s.as<ProvideNode>();
        indent() << p->op->name << "(";
        print_list(p->indices);
        os_ << ") = ";
        print(p->value);
        os_ << "\n";
        return;
      }
      case StmtKind::Allocate: {
        auto* a = s.as<AllocateNode>();
        indent() << "allocate " << a->buffer->name << "[" << a->buffer->dtype.str() << " * ";
        print_list(a->buffer->shape);
        os_ << "] in " << a->buffer->scope << "\n";
        print(a->body);
        return;
      }
      case StmtKind::Realize: {
        auto* r = s.as<RealizeNode>();
        indent() << "realize " << r->op->name << "(";
        for (size_t i = 0; i < r->bounds.size(); ++i) {
          os_ << (i ? ", " : "") << "[";
          print(r->bounds[i].min);
          os_ << ", ";
          print(r->bounds[i].extent);
          os_ << "]";
        }
        os_ << ") in " << r->scope << " {\n";
        block(r->body);
        return;
      }
      case StmtKind::Seq:
        for (auto& c : s.as<SeqNode>()->seq) print(c);
        return;
      case StmtKind::IfThenElse: {
        auto* i = s.as<IfThenElseNode>();
        indent() << "if (";
        print(i->cond);
        os_ << ") {\n";
        if (i->else_case.defined()) {
          ++depth_;
          print(i->then_case);
          --depth_;
          indent() << "} else {\n";
          block(i->else_case);
        } else {
          block(i->then_case);
        }
        return;
      }
      case StmtKind::Evaluate:
        indent();
        print(s.as<EvaluateNode>()->value);
        os_ << "\n";
        return;
    }
  }

  void print(const LoweredFunc& f) {
    os_ << "func " << f.name << "(";
    for (size_t i = 0; i < f.args.size(); ++i) {
      os_ << (i ? ", " : "") << f.args[i]->name << ": " << f.args[i]->dtype.str() << "[";
      print_list(f.args[i]->shape);
      os_ << "]";
    }
    os_ << ") {\n";
    block(f.body);
  }

 private:
  // Distinct variables that share a name print as name, name#1, name#2, ...
  std::string name_of(const VarNode* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    int& n = name_count_[v->name];
    std::string s = n == 0 ? v->name : v->name + "#" + std::to_string(n);
    ++n;
    return names_[v] = s;
  }
  std::map<const VarNode*, std::string> names_;
  std::map<std::string, int> name_count_;

  std::ostream& indent() { return os_ << std::string(2 * depth_, ' '); }
  void block(const Stmt& body) {
    ++depth_;
    print(body);
    --depth_;
    indent() << "}\n";
  }

  std::ostream& os_;
  int depth_ = 0;
};

}  // namespace

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  Printer(os).print(e);
  return os;
}
std::ostream& operator<<(std::ostream& os, const Stmt& s) {
  Printer(os).print(s);
  return os;
}
std::ostream& operator<<(std::ostream& os, const LoweredFunc& f) {
  Printer(os).print(f);
  return os;
}
std::string to_string(const Expr& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}
std::string to_string(const Stmt& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}
std::string to_string(const LoweredFunc& f) {
  std::ostringstream os;
  os << f;
  return os.str();
}

}  // namespace loom::ir
