// Expressions shared by the tensor-expression level and the loop level. Nodes are immutable and
// reference counted; a Var is identified by its node (names are only for printing).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/runtime/dtype.h"
#include "loom/runtime/error.h"

namespace loom::ir {

enum class ExprKind : uint8_t {
  IntImm,
  FloatImm,
  StringImm,
  Var,
  Cast,
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Min,
  Max,
  EQ,
  NE,
  LT,
  LE,
  GT,
  GE,
  And,
  Or,
  Not,
  Select,
  Load,
  Ramp,
  Broadcast,
  Call,
  Let,
  TensorRead,
  Reduce,
};

struct ExprNode {
  ExprNode(ExprKind k, DataType t) : kind(k), type(t) {}
  virtual ~ExprNode() = default;
  const ExprKind kind;
  const DataType type;
};

// Handle to an immutable expression node.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  Expr(int v);      // int32 constant  NOLINT
  Expr(int64_t v);  // int64 constant  NOLINT
  Expr(float v);    // float32 constant  NOLINT
  Expr(double v);   // float64 constant  NOLINT

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  DataType type() const { return node_->type; }
  ExprKind kind() const { return node_->kind; }
  bool same_as(const Expr& o) const { return node_ == o.node_; }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }
  const std::shared_ptr<const ExprNode>& node_ptr() const { return node_; }

 private:
  std::shared_ptr<const ExprNode> node_;
};

struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  IntImmNode(DataType t, int64_t v) : ExprNode(kKind, t), value(v) {}
  const int64_t value;
};
struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  FloatImmNode(DataType t, double v) : ExprNode(kKind, t), value(v) {}
  const double value;
};
struct StringImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::StringImm;
  explicit StringImmNode(std::string v) : ExprNode(kKind, DataType::UInt(8, 0)), value(std::move(v)) {}
  const std::string value;
};

// A scalar variable, or (with type "handle" = uint64 marked is_handle) a buffer's base pointer.
struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  VarNode(std::string n, DataType t) : ExprNode(kKind, t), name(std::move(n)) {}
  const std::string name;
};

class Var : public Expr {
 public:
  Var() = default;
  explicit Var(std::string name, DataType t = DataType::Int(32));
  explicit Var(std::shared_ptr<const VarNode> n) : Expr(std::move(n)) {}
  const VarNode* get() const { return static_cast<const VarNode*>(Expr::get()); }
  const VarNode* operator->() const { return get(); }
  const std::string& name() const { return get()->name; }
};

struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  CastNode(DataType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  const Expr value;
};

// Binary arithmetic/comparison/logic node; `kind` says which.
struct BinaryNode : ExprNode {
  BinaryNode(ExprKind k, DataType t, Expr a_, Expr b_) : ExprNode(k, t), a(std::move(a_)), b(std::move(b_)) {}
  const Expr a, b;
};
template <ExprKind K>
struct BinaryOp : BinaryNode {
  static constexpr ExprKind kKind = K;
  BinaryOp(DataType t, Expr a_, Expr b_) : BinaryNode(K, t, std::move(a_), std::move(b_)) {}
};
// Integer Div/Mod round towards negative infinity (floor semantics), like Halide.
using AddNode = BinaryOp<ExprKind::Add>;
using SubNode = BinaryOp<ExprKind::Sub>;
using MulNode = BinaryOp<ExprKind::Mul>;
using DivNode = BinaryOp<ExprKind::Div>;
using ModNode = BinaryOp<ExprKind::Mod>;
using MinNode = BinaryOp<ExprKind::Min>;
using MaxNode = BinaryOp<ExprKind::Max>;
using EQNode = BinaryOp<ExprKind::EQ>;
using NENode = BinaryOp<ExprKind::NE>;
using LTNode = BinaryOp<ExprKind::LT>;
using LENode = BinaryOp<ExprKind::LE>;
using GTNode = BinaryOp<ExprKind::GT>;
using GENode = BinaryOp<ExprKind::GE>;
using AndNode = BinaryOp<ExprKind::And>;
using OrNode = BinaryOp<ExprKind::Or>;

bool is_binary(ExprKind k);
inline const BinaryNode* as_binary(const Expr& e) {
  return e.defined() && is_binary(e.kind()) ? static_cast<const BinaryNode*>(e.get()) : nullptr;
}

struct NotNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Not;
  explicit NotNode(Expr a_) : ExprNode(kKind, a_.type()), a(std::move(a_)) {}
  const Expr a;
};

struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  SelectNode(Expr c, Expr t, Expr f)
      : ExprNode(kKind, t.type()), cond(std::move(c)), true_value(std::move(t)), false_value(std::move(f)) {}
  const Expr cond, true_value, false_value;
};

struct BufferNode;
using Buffer = std::shared_ptr<const BufferNode>;

// Flat (1-D) load from a buffer; a Ramp index with lanes > 1 makes a vector load.
struct LoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Load;
  LoadNode(DataType t, Buffer b, Expr i) : ExprNode(kKind, t), buffer(std::move(b)), index(std::move(i)) {}
  const Buffer buffer;
  const Expr index;
};

// base, base + stride, ..., base + (lanes-1)*stride
struct RampNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Ramp;
  RampNode(Expr b, Expr s, int lanes)
      : ExprNode(kKind, b.type().with_lanes(lanes)), base(std::move(b)), stride(std::move(s)), lanes(lanes) {}
  const Expr base, stride;
  const int lanes;
};

struct BroadcastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Broadcast;
  BroadcastNode(Expr v, int lanes) : ExprNode(kKind, v.type().with_lanes(lanes)), value(std::move(v)), lanes(lanes) {}
  const Expr value;
  const int lanes;
};

// Calls to pure math intrinsics (exp, sqrt, ...) or named externs.
struct CallNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Call;
  enum class CallType : uint8_t { PureIntrinsic, Extern };
  CallNode(DataType t, std::string n, std::vector<Expr> a, CallType ct)
      : ExprNode(kKind, t), name(std::move(n)), args(std::move(a)), call_type(ct) {}
  const std::string name;
  const std::vector<Expr> args;
  const CallType call_type;
};

struct LetNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Let;
  LetNode(Var v, Expr val, Expr b)
      : ExprNode(kKind, b.type()), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  const Var var;
  const Expr value, body;
};

// ---- constructors (type-checked; mismatched operand types throw loom::TypeError) ----
Expr make_const(DataType t, double value);  // integer types round towards zero
Expr make_zero(DataType t);
Expr make_one(DataType t);
Expr string_imm(std::string s);
Expr cast(DataType t, Expr v);
Expr select(Expr cond, Expr t, Expr f);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr load(DataType t, Buffer b, Expr index);
Expr ramp(Expr base, Expr stride, int lanes);
Expr broadcast(Expr v, int lanes);
Expr call_intrinsic(DataType t, std::string name, std::vector<Expr> args);
Expr let(Var v, Expr value, Expr body);
// Lazy conditional: only the chosen branch is evaluated (unlike select), so a branch may read
// out of bounds when the condition is false — used for padding.
Expr if_then_else(Expr cond, Expr t, Expr f);
// Elementwise math on float expressions.
Expr exp(Expr x);
Expr sqrt(Expr x);
Expr log(Expr x);
Expr tanh(Expr x);
// 1 / x for a finite, nonzero x, within about 2 ulp: float vectors on Intel CPUs take a
// reciprocal estimate and one Newton step instead of a division, which occupies two of their
// vector ports for many cycles (AMD Zen divides beside its FMA pipes: a division there). At 0 or
// an infinity it may give NaN: for divisors known to be finite and nonzero (sigmoid's 1 + e^-x
// with x clamped).
Expr recip_finite(Expr x);
// 1 / (1 + e^-x); float vectors on the CPU without exp's edge cases (x is clamped to [-87, 87],
// within 2e-38 of the true value there), and recip_finite's reciprocal.
Expr sigmoid(Expr x);
Expr abs(Expr x);
Expr floor(Expr x);
Expr ceil(Expr x);
Expr round_even(Expr x);  // to the nearest integer, halves to even (numpy's and ONNX's Round)
Expr sin(Expr x);
Expr cos(Expr x);
Expr pow(Expr a, Expr b);  // both float, one type
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr make_binary(ExprKind kind, Expr a, Expr b);  // generic form, used by mutators

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // floor division for integers
Expr operator%(Expr a, Expr b);  // floor modulo for integers
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

// Constant inspection helpers.
const int64_t* as_const_int(const Expr& e);
bool is_const_int(const Expr& e, int64_t v);
bool is_zero(const Expr& e);
bool is_one(const Expr& e);

std::string to_string(const Expr& e);  // printer.cc
// Structural equality: same tree, Vars compared by identity.
bool structural_equal(const Expr& a, const Expr& b);

}  // namespace loom::ir
