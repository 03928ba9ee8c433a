#include "loom/ir/gpu.h"

#include <algorithm>
#include <set>

#include "loom/ir/functor.h"
#include "loom/ir/intrinsics.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"

namespace loom::ir {

Stmt sync_threads() { return evaluate(call_intrinsic(DataType::Int(32), kSyncThreads, {})); }

bool is_sync_threads(const Stmt& s) {
  auto* e = s.as<EvaluateNode>();
  auto* c = e ? e->value.as<CallNode>() : nullptr;
  return c && c->name == kSyncThreads;
}

namespace {
// The element an address names when its buffer is in `scope` (and of type `t`); else nullptr.
const LoadNode* address_in(const Expr& address, const char* scope, std::optional<DataType> t) {
  const LoadNode* l = as_address_of(address);
  return l && l->buffer->scope == scope && (!t || l->buffer->dtype == *t) ? l : nullptr;
}
const CallNode* call_of(const Stmt& s) {
  auto* e = s.as<EvaluateNode>();
  return e ? e->value.as<CallNode>() : nullptr;
}
}  // namespace

Stmt mma_m16n8k16(Expr a_fragment, Expr b_fragment, Expr c_fragment) {
  Stmt s = evaluate(call_intrinsic(DataType::Int(32), kMmaM16N8K16,
                                   {std::move(a_fragment), std::move(b_fragment), std::move(c_fragment)}));
  as_mma(s);  // checks the operands
  return s;
}

std::optional<MmaOperands> as_mma(const CallNode* c) {
  if (!c || c->name != kMmaM16N8K16) return std::nullopt;
  if (c->args.size() != 3) LOOM_THROW(LoweringError, kMmaM16N8K16, ": expects 3 operands, got ", c->args.size());
  const LoadNode* ops[3];
  static const char* kRole[] = {"A", "B", "C"};
  const DataType want[] = {DataType::Float(16), DataType::Float(16), DataType::Float(32)};
  for (int i = 0; i < 3; ++i) {
    ops[i] = address_in(c->args[size_t(i)], scope::kLocal, want[i]);
    if (!ops[i])
      LOOM_THROW(LoweringError, kMmaM16N8K16, ": the ", kRole[i],
                 " fragment must be the address of an element of a local ", want[i].str(), " buffer, got ",
                 to_string(c->args[size_t(i)]));
  }
  return MmaOperands{ops[0], ops[1], ops[2]};
}
std::optional<MmaOperands> as_mma(const Stmt& s) { return as_mma(call_of(s)); }

Stmt ldmatrix_x4(Expr fragment, Expr row, bool trans) {
  Stmt s =
      evaluate(call_intrinsic(DataType::Int(32), kLdMatrixX4, {std::move(fragment), std::move(row), Expr(int(trans))}));
  as_ldmatrix(s);
  return s;
}
std::optional<LdMatrixOperands> as_ldmatrix(const Stmt& s) { return as_ldmatrix(call_of(s)); }
std::optional<LdMatrixOperands> as_ldmatrix(const CallNode* c) {
  if (!c || c->name != kLdMatrixX4) return std::nullopt;
  auto* trans = c->args.size() == 3 ? c->args[2].as<IntImmNode>() : nullptr;
  const LoadNode* frag = c->args.size() == 3 ? address_in(c->args[0], scope::kLocal, DataType::Float(16)) : nullptr;
  const LoadNode* row = c->args.size() == 3 ? address_in(c->args[1], scope::kShared, DataType::Float(16)) : nullptr;
  if (!trans || !frag || !row)
    LOOM_THROW(LoweringError, kLdMatrixX4,
               ": expects the address of a local float16 fragment, the address of a shared float16 row and 0/1 "
               "(trans), got ",
               to_string(call_intrinsic(DataType::Int(32), c->name, c->args)));
  return LdMatrixOperands{frag, row, trans->value != 0};
}

Stmt cp_async16(Expr dst, Expr src) {
  Stmt s = evaluate(call_intrinsic(DataType::Int(32), kCpAsync16, {std::move(dst), std::move(src)}));
  as_cp_async(s);
  return s;
}
Stmt cp_async_commit() { return evaluate(call_intrinsic(DataType::Int(32), kCpAsyncCommit, {})); }
Stmt cp_async_wait(int in_flight) {
  if (in_flight < 0) LOOM_THROW(LoweringError, kCpAsyncWait, ": groups in flight must be >= 0, got ", in_flight);
  return evaluate(call_intrinsic(DataType::Int(32), kCpAsyncWait, {Expr(in_flight)}));
}
std::optional<CpAsyncOperands> as_cp_async(const Stmt& s) { return as_cp_async(call_of(s)); }
std::optional<CpAsyncOperands> as_cp_async(const CallNode* c) {
  if (!c || c->name != kCpAsync16) return std::nullopt;
  const LoadNode* dst = c->args.size() == 2 ? address_in(c->args[0], scope::kShared, std::nullopt) : nullptr;
  const LoadNode* src = c->args.size() == 2 ? as_address_of(c->args[1]) : nullptr;
  bool global = src && (src->buffer->scope == scope::kGlobal || src->buffer->scope.empty());
  if (!dst || !global || src->buffer->dtype != dst->buffer->dtype || 16 % dst->buffer->dtype.bytes() != 0)
    LOOM_THROW(LoweringError, kCpAsync16,
               ": expects the address of a shared element and of a global one of the same type, got ",
               to_string(call_intrinsic(DataType::Int(32), c->name, c->args)));
  return CpAsyncOperands{dst, src, 16 / dst->buffer->dtype.bytes()};
}
bool is_cp_async_commit(const Stmt& s) {
  auto* c = call_of(s);
  return c && c->name == kCpAsyncCommit;
}
std::optional<int> as_cp_async_wait(const Stmt& s) {
  auto* c = call_of(s);
  if (!c || c->name != kCpAsyncWait) return std::nullopt;
  auto* n = c->args.size() == 1 ? c->args[0].as<IntImmNode>() : nullptr;
  if (!n) LOOM_THROW(LoweringError, kCpAsyncWait, ": expects a constant count of groups in flight");
  return int(n->value);
}

// The PTX ISA's tables, with groupID = lane / 4 and threadID_in_group = lane % 4.
MatrixElement mma_m16n8k16_a(int lane, int i) {
  return {lane / 4 + 8 * ((i / 2) % 2), (lane % 4) * 2 + i % 2 + 8 * (i / 4)};
}
MatrixElement mma_m16n8k16_b(int lane, int i) { return {(lane % 4) * 2 + i % 2 + 8 * (i / 2), lane / 4}; }
MatrixElement mma_m16n8k16_c(int lane, int i) { return {lane / 4 + 8 * (i / 2), (lane % 4) * 2 + i % 2}; }

std::optional<ThreadTag> parse_thread_tag(const std::string& tag) {
  static const char* kNames[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  for (int i = 0; i < 6; ++i)
    if (tag == kNames[i]) return ThreadTag{i < 3, i % 3};
  return std::nullopt;
}

namespace {

const char* kDimName[] = {"x", "y", "z"};

// Walks one kernel: launch dimensions, buffers, and the checks of gpu.h.
class KernelScan : public IRVisitor {
 public:
  KernelScan(GpuKernel& k, const std::string& func) : k_(k), func_(func) {}

  void finish(const GpuLimits& lim) {
    int64_t threads = k_.block[0] * k_.block[1] * k_.block[2];
    if (threads > lim.max_threads_per_block)
      fail("a block of " + std::to_string(threads) + " threads exceeds the limit of " +
           std::to_string(lim.max_threads_per_block) + " threads per block");
    for (int d = 0; d < 3; ++d) {
      if (k_.block[d] > lim.max_block_dim[d])
        fail(std::string("threadIdx.") + kDimName[d] + " extent " + std::to_string(k_.block[d]) +
             " exceeds the limit " + std::to_string(lim.max_block_dim[d]));
      if (k_.grid[d] > lim.max_grid_dim[d])
        fail(std::string("blockIdx.") + kDimName[d] + " extent " + std::to_string(k_.grid[d]) + " exceeds the limit " +
             std::to_string(lim.max_grid_dim[d]));
    }
    if (uses_warp_instructions_ && threads % kWarpSize != 0)
      fail("a block of " + std::to_string(threads) +
           " threads runs warp instructions (mma, ldmatrix): the block's threads must be a multiple of 32");
    if (k_.shared_bytes > lim.max_shared_bytes)
      fail(std::to_string(k_.shared_bytes) + " bytes of shared memory exceed the limit of " +
           std::to_string(lim.max_shared_bytes) + " bytes per block");
  }

 protected:
  void visit_for(const ForNode* op) override {
    if (op->for_kind != ForKind::ThreadBinding) {
      IRVisitor::visit_for(op);
      return;
    }
    auto tag = parse_thread_tag(op->thread_tag);
    if (!tag) fail("loop '" + op->var.name() + "' is bound to unknown thread tag '" + op->thread_tag + "'");
    if (tag->block && thread_depth_ > 0)
      fail("loop '" + op->var.name() + "' is bound to " + op->thread_tag + " inside a threadIdx loop");
    const Expr extent = simplify(op->extent);  // held: as_const_int points into it
    auto* ext = as_const_int(extent);
    if (!ext || *ext < 1 || !is_zero(simplify(op->min)))
      fail("loop '" + op->var.name() + "' bound to " + op->thread_tag + " needs min 0 and a constant extent, has [" +
           to_string(op->min) + ", +" + to_string(op->extent) + ")");
    auto& dims = tag->block ? k_.grid : k_.block;
    dims[tag->dim] = std::max(dims[tag->dim], *ext);
    if (!tag->block) ++thread_depth_;
    visit(op->body);
    if (!tag->block) --thread_depth_;
  }
  void visit_allocate(const AllocateNode* op) override {
    const Buffer& b = op->buffer;
    if (b->scope == scope::kShared) {
      int64_t n = constant_size(b);
      if (n < 0) fail("shared buffer '" + b->name + "' has no constant size");
      if (std::find(k_.shared.begin(), k_.shared.end(), b) == k_.shared.end()) {  // loop partitions copy it
        k_.shared.push_back(b);
        k_.shared_bytes += n * b->dtype.bytes();
      }
    } else if (b->scope == scope::kLocal) {
      if (constant_size(b) < 0) fail("local buffer '" + b->name + "' has no constant size");
    } else {
      fail("buffer '" + b->name + "' in scope '" + b->scope +
           "' is allocated inside the kernel: give its stage scope 'shared' or 'local', or compute it at root");
    }
    IRVisitor::visit_allocate(op);
  }
  void visit_store(const StoreNode* op) override {
    use(op->buffer);
    if (op->buffer->scope == scope::kGlobal || op->buffer->scope.empty()) {
      if (std::find(written_.begin(), written_.end(), op->buffer->name) == written_.end()) {
        written_.push_back(op->buffer->name);
        k_.stages += (k_.stages.empty() ? "" : ", ") + op->buffer->name;
      }
    }
    IRVisitor::visit_store(op);
  }
  void visit_load(const LoadNode* op) override {
    use(op->buffer);
    IRVisitor::visit_load(op);
  }
  void visit_call(const CallNode* op) override {
    if (auto l = as_ldmatrix(op)) {
      uses_warp_instructions_ = true;
      check_fragment(l->fragment, 8, kLdMatrixX4);
    }
    as_cp_async(op);
    if (auto m = as_mma(op)) {
      uses_warp_instructions_ = true;
      const std::pair<const LoadNode*, int64_t> frags[] = {{m->a, 8}, {m->b, 4}, {m->c, 4}};
      for (auto [f, n] : frags) check_fragment(f, n, kMmaM16N8K16);
    }
    IRVisitor::visit_call(op);
  }
  void check_fragment(const LoadNode* f, int64_t n, const char* what) {
    const Expr index = simplify(f->index);
    const int64_t* off = as_const_int(index);
    if (off && (*off < 0 || *off + n > constant_size(f->buffer)))
      fail(std::string(what) + ": the fragment of " + std::to_string(n) + " elements at '" + f->buffer->name + "[" +
           std::to_string(*off) + "]' is outside its " + std::to_string(constant_size(f->buffer)) + " elements");
  }

 public:
  using IRVisitor::visit;

 private:
  void use(const Buffer& b) {
    if (b->scope != scope::kGlobal && !b->scope.empty()) return;
    for (auto& p : k_.params)
      if (p.get() == b.get()) return;
    k_.params.push_back(b);
  }
  [[noreturn]] void fail(const std::string& what) const {
    LOOM_THROW(LoweringError, func_, ": kernel ", k_.name, " (writes ", k_.stages.empty() ? "nothing" : k_.stages,
               "): ", what);
  }
  GpuKernel& k_;
  const std::string& func_;
  int thread_depth_ = 0;
  bool uses_warp_instructions_ = false;
  std::vector<std::string> written_;
};

// First buffer a statement stores to, for messages about host code.
std::string first_store(const Stmt& s) {
  std::string name;
  struct V : IRVisitor {
    std::string* out;
    void visit_store(const StoreNode* op) override {
      if (out->empty()) *out = op->buffer->name;
    }
  } v;
  v.out = &name;
  v.visit(s);
  return name;
}

class HostWalk {
 public:
  HostWalk(const LoweredFunc& f, const GpuLimits& lim) : f_(f), lim_(lim) {}

  void walk(const Stmt& s) {
    if (!s.defined()) return;
    if (auto* q = s.as<SeqNode>()) {
      for (auto& c : q->seq) walk(c);
    } else if (auto* a = s.as<AllocateNode>()) {
      if (a->buffer->scope != scope::kGlobal && !a->buffer->scope.empty())
        LOOM_THROW(LoweringError, f_.name, ": buffer '", a->buffer->name, "' in scope '", a->buffer->scope,
                   "' is allocated outside every kernel: attach its stage inside a loop bound to blockIdx");
      if (constant_size(a->buffer) < 0)
        LOOM_THROW(LoweringError, f_.name, ": workspace '", a->buffer->name, "' has no constant size");
      out.workspaces.push_back(a->buffer);
      walk(a->body);
    } else if (auto* at = s.as<AttrNode>()) {
      walk(at->body);
    } else if (auto* fl = s.as<ForNode>(); fl && fl->for_kind == ForKind::ThreadBinding) {
      GpuKernel k;
      k.name = f_.name + "_kernel" + std::to_string(out.kernels.size());
      k.body = s;
      KernelScan scan(k, f_.name);
      scan.visit(s);
      scan.finish(lim_);
      out.kernels.push_back(std::move(k));
    } else if (auto* ev = s.as<EvaluateNode>(); ev && ev->value.as<IntImmNode>()) {
      // a no-op
    } else if (fl) {
      std::string w = first_store(s);
      LOOM_THROW(LoweringError, f_.name, ": loop '", fl->var.name(), "'", w.empty() ? "" : " (writing '" + w + "')",
                 " runs on the host: bind the stage's outer loops to blockIdx/threadIdx (e.g. fuse, split, bind)");
    } else {
      std::string w = first_store(s);
      LOOM_THROW(LoweringError, f_.name, ": ", w.empty() ? "a statement" : "the store to '" + w + "'",
                 " is outside every loop bound to blockIdx/threadIdx: bind the stage's loops");
    }
  }
  GpuSplit out;

 private:
  const LoweredFunc& f_;
  const GpuLimits& lim_;
};

}  // namespace

GpuSplit split_gpu_kernels(const LoweredFunc& f, const GpuLimits& limits) {
  HostWalk w(f, limits);
  w.walk(f.body);
  return std::move(w.out);
}

}  // namespace loom::ir
