#include "loom/ir/expr.h"

#include <cmath>
#include <limits>

#include "loom/ir/buffer.h"
#include "loom/ir/printer.h"

namespace loom::ir {

namespace {

template <typename T, typename... Args>
Expr node(Args&&... args) {
  return Expr(std::make_shared<const T>(std::forward<Args>(args)...));
}

bool is_const(const Expr& e) { return e.as<IntImmNode>() || e.as<FloatImmNode>(); }

// Brings a and b to one type: constants adopt the other side's type, scalars are broadcast to
// the other side's lanes. Anything else with differing types is a user error.
void match_types(Expr& a, Expr& b, const char* op) {
  if (!a.defined() || !b.defined()) LOOM_THROW(TypeError, "operator ", op, ": undefined operand");
  if (a.type() == b.type()) return;
  DataType ta = a.type(), tb = b.type();
  if (ta.element_of() != tb.element_of()) {
    if (is_const(b) && !is_const(a)) {
      b = make_const(ta.element_of(),
                     b.as<IntImmNode>() ? double(b.as<IntImmNode>()->value) : b.as<FloatImmNode>()->value);
    } else if (is_const(a) && !is_const(b)) {
      a = make_const(tb.element_of(),
                     a.as<IntImmNode>() ? double(a.as<IntImmNode>()->value) : a.as<FloatImmNode>()->value);
    } else {
      LOOM_THROW(TypeError, "operator ", op, ": operand types differ (", ta.str(), " vs ", tb.str(), ") in '",
                 to_string(a), "' and '", to_string(b), "'; insert an explicit cast");
    }
  }
  if (a.type().lanes() != b.type().lanes()) {
    if (a.type().lanes() == 1)
      a = broadcast(a, b.type().lanes());
    else if (b.type().lanes() == 1)
      b = broadcast(b, a.type().lanes());
    else
      LOOM_THROW(TypeError, "operator ", op, ": vector lanes differ (", a.type().str(), " vs ", b.type().str(), ")");
  }
}

const char* op_symbol(ExprKind k) {
  switch (k) {
    case ExprKind::Add:
      return "+";
    case ExprKind::Sub:
      return "-";
    case ExprKind::Mul:
      return "*";
    case ExprKind::Div:
      return "/";
    case ExprKind::Mod:
      return "%";
    case ExprKind::Min:
      return "min";
    case ExprKind::Max:
      return "max";
    case ExprKind::EQ:
      return "==";
    case ExprKind::NE:
      return "!=";
    case ExprKind::LT:
      return "<";
    case ExprKind::LE:
      return "<=";
    case ExprKind::GT:
      return ">";
    case ExprKind::GE:
      return ">=";
    case ExprKind::And:
      return "&&";
    case ExprKind::Or:
      return "||";
    default:
      return "?";
  }
}

}  // namespace

Expr::Expr(int v) : Expr(make_const(DataType::Int(32), v)) {}
Expr::Expr(int64_t v) : node_(std::make_shared<const IntImmNode>(DataType::Int(64), v)) {}
Expr::Expr(float v) : Expr(make_const(DataType::Float(32), v)) {}
Expr::Expr(double v) : Expr(make_const(DataType::Float(64), v)) {}

Var::Var(std::string name, DataType t) : Expr(std::make_shared<const VarNode>(std::move(name), t)) {}

bool is_binary(ExprKind k) { return k >= ExprKind::Add && k <= ExprKind::Or; }

Expr make_const(DataType t, double value) {
  if (t.lanes() > 1) return broadcast(make_const(t.element_of(), value), t.lanes());
  if (t.is_float()) return node<FloatImmNode>(t, value);
  if (t.is_bool()) return node<IntImmNode>(t, value != 0 ? 1 : 0);
  // Towards zero, saturating at the 64-bit limits (a double cannot hold INT64_MAX: the reduction
  // identities ask for it); uint64 values above INT64_MAX keep their bits.
  const double two63 = 9223372036854775808.0;
  if (t.is_uint() && t.bits() == 64 && value >= two63)
    return node<IntImmNode>(t, static_cast<int64_t>(value >= 2 * two63 ? UINT64_MAX : static_cast<uint64_t>(value)));
  if (value >= two63) return node<IntImmNode>(t, INT64_MAX);
  if (value < -two63) return node<IntImmNode>(t, INT64_MIN);
  return node<IntImmNode>(t, static_cast<int64_t>(value));
}
Expr make_zero(DataType t) { return make_const(t, 0); }
Expr make_one(DataType t) { return make_const(t, 1); }
Expr string_imm(std::string s) { return node<StringImmNode>(std::move(s)); }

Expr cast(DataType t, Expr v) {
  if (!v.defined()) LOOM_THROW(TypeError, "cast to ", t.str(), ": undefined value");
  if (v.type() == t) return v;
  if (t.lanes() != v.type().lanes()) {
    if (v.type().lanes() != 1) LOOM_THROW(TypeError, "cannot cast ", v.type().str(), " to ", t.str());
    return broadcast(cast(t.element_of(), v), t.lanes());
  }
  if (auto* i = v.as<IntImmNode>(); i && t.is_scalar()) {
    if (t.is_float()) return make_const(t, static_cast<double>(i->value));
    if (t.bits() < 64 && !t.is_bool()) {  // wrap to the target width, two's complement
      uint64_t mask = (uint64_t{1} << t.bits()) - 1, bits = static_cast<uint64_t>(i->value) & mask;
      int64_t val =
          t.is_int() && (bits >> (t.bits() - 1)) ? static_cast<int64_t>(bits | ~mask) : static_cast<int64_t>(bits);
      return node<IntImmNode>(t, val);
    }
  }
  return node<CastNode>(t, std::move(v));
}

Expr make_binary(ExprKind kind, Expr a, Expr b) {
  match_types(a, b, op_symbol(kind));
  DataType t = a.type();
  bool cmp = kind >= ExprKind::EQ && kind <= ExprKind::GE;
  bool logic = kind == ExprKind::And || kind == ExprKind::Or;
  if (logic && !t.element_of().is_bool())
    LOOM_THROW(TypeError, "operator ", op_symbol(kind), " needs bool operands, got ", t.str());
  if (cmp) t = DataType::Bool(t.lanes());
  switch (kind) {
    case ExprKind::Add:
      return node<AddNode>(t, a, b);
    case ExprKind::Sub:
      return node<SubNode>(t, a, b);
    case ExprKind::Mul:
      return node<MulNode>(t, a, b);
    case ExprKind::Div:
      return node<DivNode>(t, a, b);
    case ExprKind::Mod:
      return node<ModNode>(t, a, b);
    case ExprKind::Min:
      return node<MinNode>(t, a, b);
    case ExprKind::Max:
      return node<MaxNode>(t, a, b);
    case ExprKind::EQ:
      return node<EQNode>(t, a, b);
    case ExprKind::NE:
      return node<NENode>(t, a, b);
    case ExprKind::LT:
      return node<LTNode>(t, a, b);
    case ExprKind::LE:
      return node<LENode>(t, a, b);
    case ExprKind::GT:
      return node<GTNode>(t, a, b);
    case ExprKind::GE:
      return node<GENode>(t, a, b);
    case ExprKind::And:
      return node<AndNode>(t, a, b);
    case ExprKind::Or:
      return node<OrNode>(t, a, b);
    default:
      LOOM_CHECK(false, "not a binary kind");
  }
}

Expr operator+(Expr a, Expr b) { return make_binary(ExprKind::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return make_binary(ExprKind::Sub, std::move(a), std::move(b)); }
Expr operator-(Expr a) { return make_binary(ExprKind::Sub, make_zero(a.type()), a); }
Expr operator*(Expr a, Expr b) { return make_binary(ExprKind::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return make_binary(ExprKind::Div, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return make_binary(ExprKind::Mod, std::move(a), std::move(b)); }
Expr operator==(Expr a, Expr b) { return make_binary(ExprKind::EQ, std::move(a), std::move(b)); }
Expr operator!=(Expr a, Expr b) { return make_binary(ExprKind::NE, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return make_binary(ExprKind::LT, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return make_binary(ExprKind::LE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return make_binary(ExprKind::GT, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return make_binary(ExprKind::GE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return make_binary(ExprKind::And, std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return make_binary(ExprKind::Or, std::move(a), std::move(b)); }
Expr operator!(Expr a) {
  if (!a.type().element_of().is_bool()) LOOM_THROW(TypeError, "operator ! needs a bool operand, got ", a.type().str());
  return node<NotNode>(std::move(a));
}
Expr min(Expr a, Expr b) { return make_binary(ExprKind::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return make_binary(ExprKind::Max, std::move(a), std::move(b)); }
Expr floordiv(Expr a, Expr b) { return make_binary(ExprKind::Div, std::move(a), std::move(b)); }
Expr floormod(Expr a, Expr b) { return make_binary(ExprKind::Mod, std::move(a), std::move(b)); }

Expr select(Expr cond, Expr t, Expr f) {
  if (!cond.type().element_of().is_bool())
    LOOM_THROW(TypeError, "select: condition must be bool, got ", cond.type().str());
  match_types(t, f, "select");
  if (cond.type().lanes() != t.type().lanes()) {
    if (cond.type().lanes() == 1)
      cond = broadcast(cond, t.type().lanes());
    else if (t.type().lanes() == 1) {
      t = broadcast(t, cond.type().lanes());
      f = broadcast(f, cond.type().lanes());
    }
  }
  return node<SelectNode>(std::move(cond), std::move(t), std::move(f));
}

Expr load(DataType t, Buffer b, Expr index) {
  LOOM_CHECK(b != nullptr, "load from null buffer");
  return node<LoadNode>(t, std::move(b), std::move(index));
}
Expr ramp(Expr base, Expr stride, int lanes) {
  LOOM_CHECK(base.type().is_scalar() && lanes > 1, "ramp needs a scalar base and lanes > 1");
  match_types(base, stride, "ramp");
  return node<RampNode>(std::move(base), std::move(stride), lanes);
}
Expr broadcast(Expr v, int lanes) {
  LOOM_CHECK(v.type().is_scalar(), "broadcast of a vector");
  if (lanes == 1) return v;
  return node<BroadcastNode>(std::move(v), lanes);
}
Expr call_intrinsic(DataType t, std::string name, std::vector<Expr> args) {
  return node<CallNode>(t, std::move(name), std::move(args), CallNode::CallType::PureIntrinsic);
}
Expr let(Var v, Expr value, Expr body) { return node<LetNode>(std::move(v), std::move(value), std::move(body)); }

static Expr float_intrinsic(const char* name, Expr x) {
  if (!x.type().is_float())
    LOOM_THROW(TypeError, name, ": expects a float operand, got ", x.type().str(), " in '", to_string(x), "'");
  DataType t = x.type();
  return call_intrinsic(t, name, {std::move(x)});
}

Expr if_then_else(Expr cond, Expr t, Expr f) {
  if (!cond.type().is_bool() || !cond.type().is_scalar())
    LOOM_THROW(TypeError, "if_then_else: condition must be a scalar bool, got ", cond.type().str());
  match_types(t, f, "if_then_else");
  DataType ty = t.type();
  return call_intrinsic(ty, "if_then_else", {std::move(cond), std::move(t), std::move(f)});
}
Expr exp(Expr x) { return float_intrinsic("exp", std::move(x)); }
Expr sqrt(Expr x) { return float_intrinsic("sqrt", std::move(x)); }
Expr log(Expr x) { return float_intrinsic("log", std::move(x)); }
Expr tanh(Expr x) { return float_intrinsic("tanh", std::move(x)); }
Expr recip_finite(Expr x) { return float_intrinsic("recip_finite", std::move(x)); }
Expr sigmoid(Expr x) { return float_intrinsic("sigmoid", std::move(x)); }
Expr floor(Expr x) { return float_intrinsic("floor", std::move(x)); }
Expr ceil(Expr x) { return float_intrinsic("ceil", std::move(x)); }
Expr round_even(Expr x) { return float_intrinsic("roundeven", std::move(x)); }
Expr sin(Expr x) { return float_intrinsic("sin", std::move(x)); }
Expr cos(Expr x) { return float_intrinsic("cos", std::move(x)); }
Expr pow(Expr a, Expr b) {
  if (!a.type().is_float() || a.type() != b.type())
    LOOM_THROW(TypeError, "pow: expects float operands of one type, got ", a.type().str(), " and ", b.type().str());
  DataType t = a.type();
  return call_intrinsic(t, "pow", {std::move(a), std::move(b)});
}
Expr abs(Expr x) {
  if (x.type().is_float()) return float_intrinsic("fabs", std::move(x));
  return select(x < make_zero(x.type()), -x, x);
}

const int64_t* as_const_int(const Expr& e) {
  if (auto* i = e.as<IntImmNode>()) return &i->value;
  return nullptr;
}
bool is_const_int(const Expr& e, int64_t v) {
  auto* p = as_const_int(e);
  return p && *p == v;
}
bool is_zero(const Expr& e) {
  if (auto* f = e.as<FloatImmNode>()) return f->value == 0;
  return is_const_int(e, 0);
}
bool is_one(const Expr& e) {
  if (auto* f = e.as<FloatImmNode>()) return f->value == 1;
  return is_const_int(e, 1);
}

}  // namespace loom::ir
