// Loop-level statements. Before storage flattening, producers write multi-dimensional tensors with
// Provide inside Realize; afterwards they are flat Stores into Buffers inside Allocate.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/ir/buffer.h"
#include "loom/ir/expr.h"

namespace loom::ir {

class Operation;
using OpRef = std::shared_ptr<const Operation>;

enum class StmtKind : uint8_t {
  LetStmt,
  Attr,
  Assert,
  For,
  Store,
  Provide,
  Allocate,
  Realize,
  Seq,
  IfThenElse,
  Evaluate
};

struct StmtNode {
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
  const StmtKind kind;
};

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const StmtNode* get() const { return node_.get(); }
  StmtKind kind() const { return node_->kind; }
  bool same_as(const Stmt& o) const { return node_ == o.node_; }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const StmtNode> node_;
};

struct LetStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LetStmt;
  LetStmtNode(Var v, Expr val, Stmt b)
      : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  const Var var;
  const Expr value;
  const Stmt body;
};

// Annotation keys with a meaning past lowering.
namespace attr_key {
// On a parallel loop: the work it does (stores, the lowering's count:
// schedule::LowerOptions::parallel_work_hints), so the runtime can run it serially where its
// host's fork-join costs more than a second thread saves.
inline constexpr const char* kParallelWork = "parallel_work";
}  // namespace attr_key

// Annotation around a statement: pragmas ("pragma_<name>"), "produce" markers, virtual threads,
// attr_key's.
struct AttrNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Attr;
  AttrNode(std::string k, Expr v, Stmt b)
      : StmtNode(kKind), key(std::move(k)), value(std::move(v)), body(std::move(b)) {}
  const std::string key;
  const Expr value;
  const Stmt body;
};

struct AssertNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Assert;
  AssertNode(Expr c, std::string m) : StmtNode(kKind), cond(std::move(c)), message(std::move(m)) {}
  const Expr cond;
  const std::string message;
};

enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled, ThreadBinding, VirtualThread };
const char* to_string(ForKind k);

struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  ForNode(Var v, Expr mn, Expr ext, ForKind k, Stmt b, std::string tag = "")
      : StmtNode(kKind),
        var(std::move(v)),
        min(std::move(mn)),
        extent(std::move(ext)),
        for_kind(k),
        body(std::move(b)),
        thread_tag(std::move(tag)) {}
  const Var var;
  const Expr min, extent;
  const ForKind for_kind;
  const Stmt body;
  const std::string thread_tag;  // for ThreadBinding: "blockIdx.x", "threadIdx.x", ...
};

struct StoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  StoreNode(Buffer b, Expr v, Expr i)
      : StmtNode(kKind), buffer(std::move(b)), value(std::move(v)), index(std::move(i)) {}
  const Buffer buffer;
  const Expr value, index;
};

// Multi-dimensional write of an operation's output (before storage flattening).
struct ProvideNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Provide;
  ProvideNode(OpRef o, std::vector<Expr> idx, Expr v)
      : StmtNode(kKind), op(std::move(o)), indices(std::move(idx)), value(std::move(v)) {}
  const OpRef op;
  const std::vector<Expr> indices;
  const Expr value;
};

struct AllocateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Allocate;
  AllocateNode(Buffer b, Stmt body_) : StmtNode(kKind), buffer(std::move(b)), body(std::move(body_)) {}
  const Buffer buffer;  // shape gives the flat size; scope says where it lives
  const Stmt body;
};

struct Range {
  Expr min, extent;
};
using Region = std::vector<Range>;

// Storage for an operation's output over `bounds`, in memory `scope`, visible inside `body`.
struct RealizeNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Realize;
  RealizeNode(OpRef o, Region r, std::string s, Stmt b)
      : StmtNode(kKind), op(std::move(o)), bounds(std::move(r)), scope(std::move(s)), body(std::move(b)) {}
  const OpRef op;
  const Region bounds;
  const std::string scope;
  const Stmt body;
};

struct SeqNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Seq;
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(kKind), seq(std::move(s)) {}
  const std::vector<Stmt> seq;
};

struct IfThenElseNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  const Expr cond;
  const Stmt then_case, else_case;  // else_case may be undefined
};

struct EvaluateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Evaluate;
  explicit EvaluateNode(Expr v) : StmtNode(kKind), value(std::move(v)) {}
  const Expr value;
};

// ---- constructors ----
Stmt let_stmt(Var v, Expr value, Stmt body);
Stmt attr(std::string key, Expr value, Stmt body);
Stmt assert_stmt(Expr cond, std::string message);
Stmt for_loop(Var v, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag = "");
Stmt store(Buffer b, Expr value, Expr index);
Stmt provide(OpRef op, std::vector<Expr> indices, Expr value);
Stmt allocate(Buffer b, Stmt body);
Stmt realize(OpRef op, Region bounds, std::string scope, Stmt body);
Stmt seq(std::vector<Stmt> stmts);  // flattens nested Seqs, drops undefined; one stmt -> itself
Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case = Stmt());
Stmt evaluate(Expr v);
Stmt no_op();

// The loop an annotation (a pragma, schedule_ops' attrs) is on: its body, through the other
// annotations of the same loop; null when no loop is there (e.g. one of one iteration, removed).
const ForNode* annotated_loop(const Stmt& s);

std::string to_string(const Stmt& s);  // printer.cc

// A lowered function: flat loop IR over argument buffers (inputs then outputs).
struct LoweredFunc {
  std::string name;
  std::vector<Buffer> args;
  Stmt body;
  // Shape variables the body reads beyond those of the arguments' shapes (a table slice's
  // run-time first row): the function takes them too (shape_vars).
  std::vector<Var> body_shape_vars = {};
};
std::string to_string(const LoweredFunc& f);
// The shape variables a function takes (module.h's ABI): those its arguments' shapes use (in
// order of first appearance), then its body_shape_vars.
std::vector<Var> shape_vars(const LoweredFunc& f);
// The variables a statement reads without defining them (by loops, lets or allocations), by name.
std::vector<Var> free_vars(const Stmt& s);

}  // namespace loom::ir
