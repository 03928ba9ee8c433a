#include "loom/ir/eval.h"

#include <algorithm>
#include <array>
#include <barrier>
#include <cmath>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "loom/ir/gpu.h"
#include "loom/ir/intrinsics.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "warp_exchange.h"

namespace loom::ir {

namespace {

// A value's lanes: up to 16 in place (every scalar and the vectors the CPU schedules make), more
// on the heap. The interpreters make and drop a value per expression node they evaluate, so a
// heap allocation per value would dominate their time.
template <typename T>
class Lanes {
 public:
  Lanes() = default;
  Lanes(const Lanes& o) { *this = o; }
  Lanes& operator=(const Lanes& o) {  // the used lanes only, not the whole in-place array
    n_ = o.n_;
    if (n_ > kInPlace)
      heap_ = o.heap_;
    else
      std::copy_n(o.in_place_, n_, in_place_);
    return *this;
  }
  void resize(size_t n) {
    n_ = n;
    if (n > kInPlace)
      heap_.assign(n, T());
    else
      std::fill_n(in_place_, n, T());
  }
  size_t size() const { return n_; }
  T& operator[](size_t l) { return data()[l]; }
  const T& operator[](size_t l) const { return data()[l]; }
  T* begin() { return data(); }
  T* end() { return data() + n_; }

 private:
  static constexpr size_t kInPlace = 16;
  T* data() { return n_ > kInPlace ? heap_.data() : in_place_; }
  const T* data() const { return n_ > kInPlace ? heap_.data() : in_place_; }
  size_t n_ = 0;
  T in_place_[kInPlace];
  std::vector<T> heap_;
};

// One value per lane; integers as int64 (already wrapped to their type), floats as double
// (already rounded to their type).
struct Value {
  Lanes<double> f;
  Lanes<int64_t> i;
  bool is_float = false;
  int lanes() const { return is_float ? int(f.size()) : int(i.size()); }
  double as_double(int l) const { return is_float ? f[l] : double(i[l]); }
  int64_t as_int(int l) const { return is_float ? int64_t(f[l]) : i[l]; }
};

int64_t wrap(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (t.bits() >= 64) return v;
  uint64_t mask = (uint64_t{1} << t.bits()) - 1, b = uint64_t(v) & mask;
  if (t.is_int() && (b >> (t.bits() - 1))) return int64_t(b | ~mask);
  return int64_t(b);
}
double round_to(DataType t, double v) {
  if (t.bits() == 32) return double(float(v));
  if (t.bits() == 16) return double(half_to_float(float_to_half(float(v))));
  return v;
}
int64_t fdiv(int64_t a, int64_t b) {
  if (b == 0) LOOM_THROW(RuntimeError, "integer division by zero");
  if (b == -1) return int64_t(0 - uint64_t(a));  // INT64_MIN / -1 wraps, as the kernels' does
  return floor_div(a, b);
}

Value make(DataType t, int lanes) {
  Value v;
  v.is_float = t.is_float();
  if (v.is_float)
    v.f.resize(lanes);
  else
    v.i.resize(lanes);
  return v;
}

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  std::map<const VarNode*, Value> vars;

  Value eval(const Expr& e) {
    DataType t = e.type();
    int n = t.lanes();
    if (auto* i = e.as<IntImmNode>()) {
      Value v = make(t, 1);
      v.i[0] = i->value;
      return v;
    }
    if (auto* f = e.as<FloatImmNode>()) {
      Value v = make(t, 1);
      v.f[0] = f->value;
      return v;
    }
    if (auto* var = e.as<VarNode>()) {
      auto it = vars.find(var);
      if (it == vars.end()) LOOM_THROW(RuntimeError, "interpreter: unbound variable '", var->name, "'");
      return it->second;
    }
    if (auto* c = e.as<CastNode>()) {
      Value x = eval(c->value), v = make(t, n);
      for (int l = 0; l < n; ++l) {
        if (t.is_float())
          v.f[l] = round_to(t, x.as_double(l));
        else if (x.is_float && t.is_bool())
          v.i[l] = x.f[l] != 0;  // as the kernels compare (0.5 is true)
        else if (x.is_float)
          v.i[l] = wrap(t, int64_t(std::trunc(x.f[l])));
        else
          v.i[l] = wrap(t, x.i[l]);
      }
      return v;
    }
    if (auto* b = as_binary(e)) {
      Value x = eval(b->a), y = eval(b->b), v = make(t, n);
      bool fl = x.is_float;
      for (int l = 0; l < n; ++l) {
        if (fl) {
          double p = x.f[l], q = y.f[l], r = 0;
          switch (e.kind()) {
            case ExprKind::Add:
              r = p + q;
              break;
            case ExprKind::Sub:
              r = p - q;
              break;
            case ExprKind::Mul:
              r = p * q;
              break;
            case ExprKind::Div:
              r = p / q;
              break;
            case ExprKind::Mod:
              r = p - std::floor(p / q) * q;
              break;
            case ExprKind::Min:
              r = std::min(p, q);
              break;
            case ExprKind::Max:
              r = std::max(p, q);
              break;
            case ExprKind::EQ:
              v.i[l] = p == q;
              continue;
            case ExprKind::NE:
              v.i[l] = p != q;
              continue;
            case ExprKind::LT:
              v.i[l] = p < q;
              continue;
            case ExprKind::LE:
              v.i[l] = p <= q;
              continue;
            case ExprKind::GT:
              v.i[l] = p > q;
              continue;
            case ExprKind::GE:
              v.i[l] = p >= q;
              continue;
            default:
              LOOM_THROW(RuntimeError, "interpreter: bad float op in ", to_string(e));
          }
          v.f[l] = round_to(t, r);
        } else {
          int64_t p = x.i[l], q = y.i[l], r = 0;
          bool u = b->a.type().is_uint();
          switch (e.kind()) {
            case ExprKind::Add:
              r = p + q;
              break;
            case ExprKind::Sub:
              r = p - q;
              break;
            case ExprKind::Mul:
              r = int64_t(uint64_t(p) * uint64_t(q));
              break;
            case ExprKind::Div:
              r = fdiv(p, q);
              break;
            case ExprKind::Mod:
              r = p - fdiv(p, q) * q;
              break;
            case ExprKind::Min:
              r = u ? int64_t(std::min(uint64_t(p), uint64_t(q))) : std::min(p, q);
              break;
            case ExprKind::Max:
              r = u ? int64_t(std::max(uint64_t(p), uint64_t(q))) : std::max(p, q);
              break;
            case ExprKind::EQ:
              r = p == q;
              break;
            case ExprKind::NE:
              r = p != q;
              break;
            case ExprKind::LT:
              r = p < q;
              break;
            case ExprKind::LE:
              r = p <= q;
              break;
            case ExprKind::GT:
              r = p > q;
              break;
            case ExprKind::GE:
              r = p >= q;
              break;
            case ExprKind::And:
              r = p && q;
              break;
            case ExprKind::Or:
              r = p || q;
              break;
            default:
              break;
          }
          v.i[l] = wrap(t, r);
        }
      }
      return v;
    }
    if (auto* nn = e.as<NotNode>()) {
      Value x = eval(nn->a);
      for (auto& i : x.i) i = !i;
      return x;
    }
    if (auto* s = e.as<SelectNode>()) {
      Value c = eval(s->cond), a = eval(s->true_value), b = eval(s->false_value);
      for (int l = 0; l < n; ++l) {
        if (c.i[c.lanes() == 1 ? 0 : l]) continue;
        if (a.is_float)
          a.f[l] = b.f[l];
        else
          a.i[l] = b.i[l];
      }
      return a;
    }
    if (auto* r = e.as<RampNode>()) {
      Value base = eval(r->base), stride = eval(r->stride), v = make(t, n);
      for (int l = 0; l < n; ++l) v.i[l] = wrap(t, base.i[0] + l * stride.i[0]);
      return v;
    }
    if (auto* bc = e.as<BroadcastNode>()) {
      Value x = eval(bc->value), v = make(t, n);
      for (int l = 0; l < n; ++l) {
        if (x.is_float)
          v.f[l] = x.f[0];
        else
          v.i[l] = x.i[0];
      }
      return v;
    }
    if (auto* c = e.as<CallNode>(); c && c->name == "if_then_else") {
      if (c->args[0].type().is_vector()) LOOM_THROW(RuntimeError, "interpreter: vector if_then_else condition");
      return eval(eval(c->args[0]).i[0] ? c->args[1] : c->args[2]);
    }
    if (auto* c = e.as<CallNode>(); c && c->name == kShiftRight && c->args.size() == 2) {
      Value x = eval(c->args[0]), s = eval(c->args[1]), v = make(t, n);
      for (int l = 0; l < n; ++l) {
        int64_t a = x.i[x.i.size() == 1 ? 0 : l], b = s.i[s.i.size() == 1 ? 0 : l];
        int32_t a32 = int32_t(a);
        v.i[l] = b >= 0 ? a32 >> std::min<int64_t>(b, 31) : int32_t(uint32_t(a32) << std::min<int64_t>(-b, 31));
      }
      return v;
    }
    if (auto* c = e.as<CallNode>()) {
      std::vector<Value> args;
      for (auto& a : c->args) args.push_back(eval(a));
      Value v = make(t, n);
      for (int l = 0; l < n; ++l) {
        double x = args.empty() ? 0 : args[0].as_double(l), r;
        if (c->name == "exp")
          r = std::exp(x);
        else if (c->name == "log")
          r = std::log(x);
        else if (c->name == "sqrt")
          r = std::sqrt(x);
        else if (c->name == "tanh")
          r = std::tanh(x);
        else if (c->name == "recip_finite")
          r = 1.0 / x;
        else if (c->name == "sigmoid")
          r = 1.0 / (1.0 + std::exp(-x));
        else if (c->name == "fabs")
          r = std::fabs(x);
        else if (c->name == "floor")
          r = std::floor(x);
        else if (c->name == "ceil")
          r = std::ceil(x);
        else if (c->name == "round")
          r = std::round(x);
        else if (c->name == "roundeven")
          r = std::nearbyint(x);  // the default rounding mode: to nearest, halves to even
        else if (c->name == "sin")
          r = std::sin(x);
        else if (c->name == "cos")
          r = std::cos(x);
        else if (c->name == "trunc")
          r = std::trunc(x);
        else if (c->name == "pow")
          r = std::pow(x, args.at(1).as_double(l));
        else
          LOOM_THROW(RuntimeError, "interpreter: unknown intrinsic '", c->name, "'");
        if (t.is_float())
          v.f[l] = round_to(t, r);
        else
          v.i[l] = wrap(t, int64_t(r));
      }
      return v;
    }
    if (auto* lt = e.as<LetNode>()) {
      vars[lt->var.get()] = eval(lt->value);
      return eval(lt->body);
    }
    return eval_other(e);
  }

 protected:
  virtual Value eval_other(const Expr& e) {
    LOOM_THROW(RuntimeError, "interpreter: cannot evaluate '", to_string(e), "'");
  }

  static Value read(const NDArray& a, int64_t idx, DataType t, const std::string& what) {
    if (idx < 0 || idx >= a.numel())
      LOOM_THROW(RuntimeError, "interpreter: index ", idx, " out of bounds of '", what, "' (", a.numel(), " elements)");
    Value v = make(t, 1);
    if (t.is_float())
      v.f[0] = a.get_as_double(idx);
    else
      v.i[0] = wrap(t, int64_t(a.get_as_double(idx)));
    if (!t.is_float() && t.bits() == 64)
      v.i[0] = t.is_int() ? a.data<int64_t>()[idx] : int64_t(a.data<uint64_t>()[idx]);
    return v;
  }
  static void write(NDArray& a, int64_t idx, const Value& v, int lane, const std::string& what) {
    if (idx < 0 || idx >= a.numel())
      LOOM_THROW(RuntimeError, "interpreter: store index ", idx, " out of bounds of '", what, "' (", a.numel(),
                 " elements)");
    if (a.dtype().is_integer() && a.dtype().bits() == 64) {
      a.data<int64_t>()[idx] = v.as_int(lane);
      return;
    }
    a.set_from_double(idx, v.as_double(lane));
  }
};

// ---- reference evaluation of tensor expressions ----
class RefEval : public Evaluator {
 public:
  std::map<const Operation*, NDArray> done;

  // The op's values, computed on first use (a reference into `done`, which never moves).
  const NDArray& compute(const OpRef& op) {
    if (auto it = done.find(op.get()); it != done.end()) return it->second;
    if (op->is_placeholder()) LOOM_THROW(RuntimeError, "reference: no data for input '", op->name, "'");
    std::vector<int64_t> shape;
    for (auto& e : op->shape) {
      auto* c = as_const_int(e);
      if (!c) LOOM_THROW(RuntimeError, "reference: '", op->name, "' has a symbolic shape");
      shape.push_back(*c);
    }
    for (auto& in : op->input_tensors()) compute(in.op());
    NDArray out = NDArray::empty(shape, op->dtype);
    std::vector<int64_t> idx(shape.size(), 0);
    for (int64_t flat = 0; flat < out.numel(); ++flat) {
      int64_t rem = flat;
      for (size_t d = shape.size(); d-- > 0;) {
        idx[d] = rem % shape[d];
        rem /= shape[d];
      }
      for (size_t d = 0; d < shape.size(); ++d) {
        Value v = make(DataType::Int(32), 1);
        v.i[0] = idx[d];
        vars[op->axis[d]->var.get()] = v;
      }
      write(out, flat, eval(op->body), 0, op->name);
    }
    return done[op.get()] = out;
  }

 protected:
  Value eval_other(const Expr& e) override {
    if (auto* r = e.as<TensorReadNode>()) {
      const NDArray& a = compute(r->op);
      int64_t flat = 0;
      for (size_t d = 0; d < r->indices.size(); ++d) {
        int64_t i = eval(r->indices[d]).i[0];
        if (i < 0 || i >= a.shape()[d])
          LOOM_THROW(RuntimeError, "reference: '", r->op->name, "' read at index ", i, " in dimension ", d, " (extent ",
                     a.shape()[d], ")");
        flat = flat * a.shape()[d] + i;
      }
      return read(a, flat, r->type, r->op->name);
    }
    if (auto* red = e.as<ReduceNode>()) {
      Value acc = eval(reduce_identity(red->reduce_kind, red->type));
      // acc = combine(acc, x), built once for the whole reduction.
      Var a("acc", red->type), b("x", red->type);
      const Expr combine = reduce_combine(red->reduce_kind, a, b);
      std::function<void(size_t)> loop = [&](size_t k) {
        if (k == red->axes.size()) {
          if (red->condition.defined() && !eval(red->condition).i[0]) return;
          vars[b.get()] = eval(red->source);
          vars[a.get()] = acc;
          acc = eval(combine);
          return;
        }
        const auto& ax = red->axes[k];
        int64_t mn = eval(ax->dom.min).i[0], ext = eval(ax->dom.extent).i[0];
        for (int64_t i = mn; i < mn + ext; ++i) {
          Value v = make(DataType::Int(32), 1);
          v.i[0] = i;
          vars[ax->var.get()] = v;
          loop(k + 1);
        }
      };
      loop(0);
      return acc;
    }
    return Evaluator::eval_other(e);
  }
};

// ---- loop IR interpreter ----
class Interp : public Evaluator {
 public:
  std::map<const BufferNode*, NDArray> mem;

  void exec(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::LetStmt: {
        auto* l = s.as<LetStmtNode>();
        vars[l->var.get()] = eval(l->value);
        exec(l->body);
        return;
      }
      case StmtKind::Attr:
        exec(s.as<AttrNode>()->body);
        return;
      case StmtKind::Assert: {
        auto* a = s.as<AssertNode>();
        if (!eval(a->cond).i[0]) LOOM_THROW(RuntimeError, "assertion failed: ", a->message);
        return;
      }
      case StmtKind::For:
        exec_for(s.as<ForNode>());
        return;
      case StmtKind::Store: {
        auto* st = s.as<StoreNode>();
        if (skip_store(st->buffer)) return;  // the whole statement: its loads are not made either
        Value v = eval(st->value), idx = eval(st->index);
        NDArray& a = buffer(st->buffer);
        for (int l = 0; l < idx.lanes(); ++l) {
          note_access(st->buffer, idx.i[l], true);
          write(a, idx.i[l], v, v.lanes() == 1 ? 0 : l, st->buffer->name);
        }
        return;
      }
      case StmtKind::Allocate:
        exec_allocate(s.as<AllocateNode>());
        return;
      case StmtKind::Seq:
        for (auto& c : s.as<SeqNode>()->seq) exec(c);
        return;
      case StmtKind::IfThenElse: {
        auto* i = s.as<IfThenElseNode>();
        if (eval(i->cond).i[0])
          exec(i->then_case);
        else
          exec(i->else_case);
        return;
      }
      case StmtKind::Evaluate:
        exec_evaluate(s);
        return;
      default:
        LOOM_THROW(RuntimeError, "interpreter: statement not lowered: ", to_string(s));
    }
  }

 protected:
  virtual void exec_for(const ForNode* f) {
    int64_t mn = eval(f->min).i[0], ext = eval(f->extent).i[0];
    for (int64_t i = mn; i < mn + ext; ++i) {
      set_var(f->var, i);
      exec(f->body);
    }
  }
  void set_var(const Var& var, int64_t i) {
    Value v = make(var.type(), 1);
    v.i[0] = i;
    vars[var.get()] = v;
  }
  virtual void exec_allocate(const AllocateNode* a) {
    int64_t size = constant_size(a->buffer);
    if (size < 0) LOOM_THROW(RuntimeError, "interpreter: allocation '", a->buffer->name, "' has no constant size");
    mem[a->buffer.get()] = NDArray::zeros({size}, a->buffer->dtype);
    exec(a->body);
    mem.erase(a->buffer.get());
  }
  virtual void exec_evaluate(const Stmt& s) {
    const Expr& v = s.as<EvaluateNode>()->value;
    if (as_mma(s) || as_ldmatrix(s))
      LOOM_THROW(RuntimeError, "interpreter: ", as_mma(s) ? kMmaM16N8K16 : kLdMatrixX4,
                 " is a warp instruction: run the function on the grid interpreter (interpret_grid)");
    if (auto c = as_cp_async(s)) {  // threads run one after another: the copy lands at once
      int64_t d = eval(c->dst->index).i[0], src = eval(c->src->index).i[0];
      for (int64_t i = 0; i < c->elements; ++i)
        write(buffer(c->dst->buffer), d + i,
              read(buffer(c->src->buffer), src + i, c->src->buffer->dtype, c->src->buffer->name), 0,
              c->dst->buffer->name);
      return;
    }
    if (is_cp_async_commit(s) || as_cp_async_wait(s)) return;
    if (!is_sync_threads(s) && !as_prefetch(v.as<CallNode>())) eval(v);  // a prefetch is only a hint
  }
  // Whether this thread leaves stores out (the grid interpreter: ir/gpu.h's store rule).
  virtual bool skip_store(const Buffer&) { return false; }
  // Every element a Load or Store touches, before it does (the grid interpreter's race check).
  virtual void note_access(const Buffer&, int64_t, bool) {}
  virtual NDArray& buffer(const Buffer& b) {
    auto it = mem.find(b.get());
    if (it == mem.end()) LOOM_THROW(RuntimeError, "interpreter: buffer '", b->name, "' is not allocated here");
    return it->second;
  }
  Value eval_other(const Expr& e) override {
    if (auto* l = e.as<LoadNode>()) {
      Value idx = eval(l->index);
      NDArray& a = buffer(l->buffer);
      Value v = make(e.type(), idx.lanes());
      for (int k = 0; k < idx.lanes(); ++k) {
        note_access(l->buffer, idx.i[k], false);
        Value x = read(a, idx.i[k], l->buffer->dtype, l->buffer->name);
        if (v.is_float)
          v.f[k] = x.f[0];
        else
          v.i[k] = x.i[0];
      }
      return v;
    }
    return Evaluator::eval_other(e);
  }
};

// ---- grid interpreter: each block's threads as real threads meeting at barriers, races checked ----

// Who made an access: block, thread, and how many barriers the thread had passed.
struct Who {
  std::array<int64_t, 3> block{}, thread{};
  uint64_t phase = 0;
  bool valid = false;
};
struct Cell {
  Who w, r;
  bool r_many = false, r_cross_block = false;  // another thread (of the phase) / block also read it
};

std::string xyz(const std::array<int64_t, 3>& v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
}

// The race check of one kernel launch (every block, every thread).
class RaceTracker {
 public:
  explicit RaceTracker(const GpuKernel& k, const std::string& func) : k_(k), func_(func) {}
  void access(const Buffer& b, int64_t idx, bool is_write, const Who& me) {
    int64_t n = constant_size(b);
    if (idx < 0 || idx >= n) return;  // the access itself reports it
    std::lock_guard<std::mutex> lock(mu_);
    auto& cells = cells_[b.get()];
    if (cells.empty()) cells.resize(size_t(n));
    Cell& c = cells[size_t(idx)];
    if (c.w.valid && races(c.w, me)) fail(b, idx, c.w, "wrote", me, is_write ? "writes" : "reads");
    if (is_write) {
      if (c.r.valid && (races(c.r, me) || c.r_cross_block || (c.r_many && c.r.phase == me.phase)))
        fail(b, idx, c.r, c.r_many || c.r_cross_block ? "(and others) read" : "read", me, "writes");
      c.w = me;
    } else {
      if (!c.r.valid) {
      } else if (c.r.block != me.block) {
        c.r_cross_block = true;
      } else if (c.r.phase != me.phase) {
        c.r_many = false;
      } else if (c.r.thread != me.thread) {
        c.r_many = true;
      }
      c.r = me;
    }
  }
  void reset_shared() {  // shared memory is per block
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& b : k_.shared) cells_.erase(b.get());
  }

 private:
  // Two accesses race when another block made one, or another thread of the block made it since
  // the last barrier.
  static bool races(const Who& a, const Who& b) {
    return a.block != b.block || (a.thread != b.thread && a.phase == b.phase);
  }
  [[noreturn]] void fail(const Buffer& b, int64_t idx, const Who& first, const char* did, const Who& second,
                         const char* does) const {
    bool same_block = first.block == second.block;
    LOOM_THROW(RuntimeError, func_, ": kernel ", k_.name, ": race on ", b->scope, " buffer '", b->name, "' element ",
               idx, ": thread ", xyz(first.thread), " of block ", xyz(first.block), " ", did, " it and thread ",
               xyz(second.thread), " of block ", xyz(second.block), " ", does, " it ",
               same_block ? "with no barrier between (a __syncthreads is missing)"
                          : "in the same kernel (blocks are not ordered)");
  }
  const GpuKernel& k_;
  const std::string& func_;
  std::mutex mu_;
  std::map<const BufferNode*, std::vector<Cell>> cells_;
};

// One GPU thread running a kernel's statement.
class ThreadInterp : public Interp {
 public:
  ThreadInterp(const GpuKernel& k, RaceTracker& races, std::barrier<>& bar, WarpExchange& warps, int64_t linear, Who me)
      : k_(k), races_(races), bar_(bar), warps_(warps), linear_(linear), me_(me) {}
  void run(const Stmt& kernel) { exec(kernel); }

 protected:
  void exec_for(const ForNode* f) override {
    auto tag = f->for_kind == ForKind::ThreadBinding ? parse_thread_tag(f->thread_tag) : std::nullopt;
    if (!tag) {
      Interp::exec_for(f);
      return;
    }
    int64_t idx = tag->block ? me_.block[tag->dim] : me_.thread[tag->dim];
    if (idx >= eval(f->extent).i[0]) return;
    set_var(f->var, idx);
    if (!tag->block) ++bound_[tag->dim];
    exec(f->body);
    if (!tag->block) --bound_[tag->dim];
  }
  void exec_evaluate(const Stmt& s) override {
    if (auto m = as_mma(s)) return mma(*m, s.get());
    if (auto l = as_ldmatrix(s)) return ldmatrix(*l, s.get());
    if (auto c = as_cp_async(s)) return cp_async(*c);
    if (is_cp_async_commit(s)) {
      groups_.push_back(std::move(open_group_));
      open_group_.clear();
      return;
    }
    if (auto n = as_cp_async_wait(s)) {
      while (groups_.size() > size_t(*n)) land(groups_.front()), groups_.pop_front();
      return;
    }
    if (!is_sync_threads(s)) return Interp::exec_evaluate(s);
    warps_.at_barrier(linear_, me_.phase);
    bar_.arrive_and_wait();
    warps_.left_barrier(linear_);
    ++me_.phase;
    // A copy still in flight may land in this phase too: its elements are written in it as well.
    auto claim = [&](const PendingCopy& p) {
      for (size_t i = 0; i < p.values.size(); ++i) races_.access(p.dst->buffer, p.first + int64_t(i), true, me_);
    };
    for (auto& p : open_group_) claim(p);
    for (auto& group : groups_)
      for (auto& p : group) claim(p);
  }
  // Hardware alignment of a warp or copy operand: element index `i` of `b` a multiple of `n`.
  void require_aligned(const LoadNode* at, int64_t i, int64_t n, const char* what, const char* operand) {
    if (i % n == 0) return;
    LOOM_THROW(RuntimeError, "grid interpreter: kernel ", k_.name, ": thread ", xyz(me_.thread), " of block ",
               xyz(me_.block), ": ", what, "'s ", operand, " ", at->buffer->name, "[", i, "] is not aligned to ",
               n * at->buffer->dtype.bytes(), " bytes (an element index that is a multiple of ", n, ")");
  }
  // `n` elements of a local or shared buffer from the element `at` names.
  LaneValues read_elements(const LoadNode* at, size_t n, int64_t* first = nullptr) {
    int64_t i0 = eval(at->index).i[0];
    NDArray& a = buffer(at->buffer);
    LaneValues v(n);
    for (size_t i = 0; i < n; ++i) {
      note_access(at->buffer, i0 + int64_t(i), false);
      v[i] = read(a, i0 + int64_t(i), at->buffer->dtype, at->buffer->name).as_double(0);
    }
    if (first) *first = i0;
    return v;
  }
  void write_elements(const Buffer& b, int64_t i0, const LaneValues& v) {
    NDArray& a = buffer(b);
    for (size_t i = 0; i < v.size(); ++i) {
      Value x = make(b->dtype, 1);
      if (x.is_float)
        x.f[0] = v[i];
      else
        x.i[0] = int64_t(v[i]);
      note_access(b, i0 + int64_t(i), true);
      write(a, i0 + int64_t(i), x, 0, b->name);
    }
  }
  void write_elements(const LoadNode* at, const LaneValues& v) { write_elements(at->buffer, eval(at->index).i[0], v); }
  // The lane's fragments out of its local buffers, the warp's result back into its C fragment.
  void mma(const MmaOperands& m, const void* site) {
    int64_t a0 = 0, b0 = 0;
    LaneValues in = read_elements(m.a, 8, &a0), b = read_elements(m.b, 4, &b0), c = read_elements(m.c, 4);
    require_aligned(m.a, a0, 2, kMmaM16N8K16, "A fragment");  // pairs of float16 in 32-bit registers
    require_aligned(m.b, b0, 2, kMmaM16N8K16, "B fragment");
    in.insert(in.end(), b.begin(), b.end());
    in.insert(in.end(), c.begin(), c.end());
    static const WarpSemantics semantics = mma_m16n8k16_semantics;
    write_elements(m.c, warps_.exchange(linear_, me_.phase, site, kMmaM16N8K16, std::move(in), semantics));
  }
  void ldmatrix(const LdMatrixOperands& l, const void* site) {
    static const WarpSemantics plain = [](const std::vector<LaneValues>& r) { return ldmatrix_x4_semantics(r, false); };
    static const WarpSemantics trans = [](const std::vector<LaneValues>& r) { return ldmatrix_x4_semantics(r, true); };
    int64_t r0 = 0;
    LaneValues row = read_elements(l.row, 8, &r0);
    require_aligned(l.row, r0, 8, kLdMatrixX4, "row");
    require_aligned(l.fragment, eval(l.fragment->index).i[0], 2, kLdMatrixX4, "fragment");
    write_elements(l.fragment,
                   warps_.exchange(linear_, me_.phase, site, kLdMatrixX4, std::move(row), l.trans ? trans : plain));
  }
  // An asynchronous copy: the source read and the destination claimed now (for the race check),
  // the data written when a wait lands its group.
  struct PendingCopy {
    const LoadNode* dst;
    int64_t first;
    LaneValues values;
  };
  void cp_async(const CpAsyncOperands& c) {
    int64_t src0 = 0;
    PendingCopy p{c.dst, 0, read_elements(c.src, size_t(c.elements), &src0)};
    p.first = eval(c.dst->index).i[0];
    require_aligned(c.src, src0, c.elements, kCpAsync16, "source");
    require_aligned(c.dst, p.first, c.elements, kCpAsync16, "destination");
    for (int64_t i = 0; i < c.elements; ++i) {
      note_access(c.dst->buffer, p.first + i, true);
      ++in_flight_[{c.dst->buffer.get(), p.first + i}];
    }
    open_group_.push_back(std::move(p));
  }
  void land(const std::vector<PendingCopy>& group) {
    for (auto& p : group) {
      for (size_t i = 0; i < p.values.size(); ++i) {
        auto it = in_flight_.find({p.dst->buffer.get(), p.first + int64_t(i)});
        if (--it->second == 0) in_flight_.erase(it);
      }
      write_elements(p.dst->buffer, p.first, p.values);
    }
  }
  void exec_allocate(const AllocateNode* a) override {
    if (a->buffer->scope == scope::kShared) return exec(a->body);  // the block's, made before its threads
    Interp::exec_allocate(a);                                      // local: this thread's own
  }
  bool skip_store(const Buffer&) override {
    for (int d = 0; d < 3; ++d)
      if (k_.block[d] > 1 && bound_[d] == 0 && me_.thread[d] != 0) return true;
    return false;
  }
  void note_access(const Buffer& b, int64_t idx, bool is_write) override {
    if (!is_write && !in_flight_.empty() && in_flight_.count({b.get(), idx}))
      LOOM_THROW(RuntimeError, "grid interpreter: kernel ", k_.name, ": thread ", xyz(me_.thread), " of block ",
                 xyz(me_.block), " reads ", b->name, "[", idx,
                 "] before its own cp.async into it has landed (a cp_async_wait is missing)");
    if (b->scope != scope::kLocal) races_.access(b, idx, is_write, me_);
  }

 private:
  const GpuKernel& k_;
  RaceTracker& races_;
  std::barrier<>& bar_;
  WarpExchange& warps_;
  std::vector<PendingCopy> open_group_;                             // copies since the last commit
  std::deque<std::vector<PendingCopy>> groups_;                     // committed, not landed, oldest first
  std::map<std::pair<const BufferNode*, int64_t>, int> in_flight_;  // element -> copies into it in flight
  int64_t linear_;  // the thread's index in its block, x fastest (its warp: linear_ / 32)
  Who me_;
  std::array<int, 3> bound_{0, 0, 0};
};

// The host part: runs the function's host code, each kernel block by block.
class GridInterp : public Interp {
 public:
  GridInterp(const LoweredFunc& f) : func_(f.name), split_(split_gpu_kernels(f)) {}

 protected:
  void exec_for(const ForNode* f) override {
    const GpuKernel* k = nullptr;
    for (auto& kk : split_.kernels)
      if (kk.body.get() == static_cast<const StmtNode*>(f)) k = &kk;
    if (!k) return Interp::exec_for(f);
    RaceTracker races(*k, func_);
    const int64_t threads = k->block[0] * k->block[1] * k->block[2];
    Stmt body = k->body;
    for (int64_t bz = 0; bz < k->grid[2]; ++bz)
      for (int64_t by = 0; by < k->grid[1]; ++by)
        for (int64_t bx = 0; bx < k->grid[0]; ++bx) {
          races.reset_shared();
          std::map<const BufferNode*, NDArray> block_mem = mem;
          for (auto& b : k->shared) block_mem[b.get()] = NDArray::zeros({constant_size(b)}, b->dtype);
          std::barrier<> bar(threads);
          WarpExchange warps(threads);
          // The first error thrown is the cause: a failing lane ends, and its warp-mates then fail
          // for want of it.
          std::mutex error_mu;
          std::exception_ptr first_error;
          std::vector<std::thread> pool;
          for (int64_t t = 0; t < threads; ++t) {
            Who me;
            me.valid = true;
            me.block = {bx, by, bz};
            me.thread = {t % k->block[0], (t / k->block[0]) % k->block[1], t / (k->block[0] * k->block[1])};
            pool.emplace_back([&, me, t] {
              try {
                ThreadInterp ti(*k, races, bar, warps, t, me);
                ti.mem = block_mem;
                ti.vars = vars;
                ti.run(body);
              } catch (...) {
                std::lock_guard<std::mutex> lock(error_mu);
                if (!first_error) first_error = std::current_exception();
              }
              warps.exited(t);
              bar.arrive_and_drop();  // a finished (or failed) thread no longer holds barriers up
            });
          }
          for (auto& th : pool) th.join();
          if (first_error) std::rethrow_exception(first_error);
        }
  }

 private:
  std::string func_;
  GpuSplit split_;
};

void bind_args(Interp& in, const LoweredFunc& f, const std::vector<NDArray>& args) {
  if (args.size() != f.args.size())
    LOOM_THROW(ShapeError, f.name, ": expects ", f.args.size(), " arguments, got ", args.size());
  // Symbolic extents: a variable that is a whole dimension takes that dimension's value.
  for (size_t i = 0; i < args.size(); ++i)
    for (size_t d = 0; d < f.args[i]->shape.size() && d < args[i].shape().size(); ++d)
      if (auto* v = f.args[i]->shape[d].as<VarNode>()) {
        Value x = make(v->type, 1);
        x.i[0] = args[i].shape()[d];
        in.vars[v] = x;
      }
  for (size_t i = 0; i < args.size(); ++i) {
    bool fits = args[i].dtype() == f.args[i]->dtype && args[i].shape().size() == f.args[i]->shape.size();
    for (size_t d = 0; fits && d < f.args[i]->shape.size(); ++d)
      fits = in.eval(f.args[i]->shape[d]).i[0] == args[i].shape()[d];
    if (!fits)
      LOOM_THROW(ShapeError, f.name, ": argument '", f.args[i]->name, "' has the wrong shape or dtype (got ",
                 args[i].describe(), ")");
    in.mem[f.args[i].get()] = args[i];
  }
}

}  // namespace

std::vector<NDArray> reference_eval(const std::vector<Tensor>& outputs,
                                    const std::map<const Operation*, NDArray>& inputs) {
  RefEval r;
  r.done = inputs;
  std::vector<NDArray> out;
  for (auto& t : outputs) out.push_back(r.compute(t.op()));
  return out;
}

void interpret(const LoweredFunc& f, const std::vector<NDArray>& args) {
  Interp in;
  bind_args(in, f, args);
  in.exec(f.body);
}

void interpret_grid(const LoweredFunc& f, const std::vector<NDArray>& args) {
  GridInterp in(f);  // the host/device split: the same checks the CUDA backend makes
  bind_args(in, f, args);
  in.exec(f.body);
}

}  // namespace loom::ir
