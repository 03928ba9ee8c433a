// Functions and statements of the LLVM translation: entry points, loops (serial, parallel via
// outlining into loom_parallel_for bodies), allocations, asserts and stores.
#include "codegen_llvm.h"
#include "loom/ir/lane_offsets.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <limits>
#include <set>

#include "loom/codegen/llvm.h"
#include "loom/ir/functor.h"
#include "loom/ir/printer.h"
#include "loom/runtime/module.h"

namespace loom::codegen::llvm_backend {

using namespace loom::ir;

namespace {

// Temporaries up to this size live on the stack; larger ones on the heap.
constexpr int64_t kMaxStackBytes = 64 * 1024;
constexpr unsigned kBufferAlign = 64;

// Variables (and buffer base pointers) a statement reads, in first-use order.
class FreeVarCollector : public IRVisitor {
 public:
  std::vector<const VarNode*> order;
  using IRVisitor::visit;

 protected:
  void add(const VarNode* v) {
    if (seen_.insert(v).second) order.push_back(v);
  }
  void visit_var(const VarNode* v) override { add(v); }
  void visit_load(const LoadNode* op) override {
    add(op->buffer->data.get());
    IRVisitor::visit_load(op);
  }
  void visit_store(const StoreNode* op) override {
    add(op->buffer->data.get());
    IRVisitor::visit_store(op);
  }
  void visit_allocate(const AllocateNode* op) override {
    for (auto& e : op->buffer->shape) visit(e);
    IRVisitor::visit_allocate(op);
  }

 private:
  std::set<const VarNode*> seen_;
};

}  // namespace

CodeGenLLVM::CodeGenLLVM(llvm::Module& module, llvm::TargetMachine& tm, int vector_width)
    : ctx_(module.getContext()), module_(module), tm_(tm), builder_(module.getContext()), vector_width_(vector_width) {
  i1_ = llvm::Type::getInt1Ty(ctx_);
  i8_ = llvm::Type::getInt8Ty(ctx_);
  i32_ = llvm::Type::getInt32Ty(ctx_);
  i64_ = llvm::Type::getInt64Ty(ctx_);
  ptr_ = llvm::PointerType::get(ctx_, 0);
}

void CodeGenLLVM::fail(const std::string& what) {
  LOOM_THROW(CodegenError, "llvm codegen: function '", func_name_, "': ", what);
}

// ---------------------------------------------------------------------------------------------
// Functions

void CodeGenLLVM::set_function_attributes(llvm::Function* fn) {
  fn->addFnAttr("target-cpu", tm_.getTargetCPU());
  fn->addFnAttr("target-features", tm_.getTargetFeatureString());
  if (vector_width_ > 0) {
    // Without these the x86 backend splits 512-bit vectors in two on CPUs that prefer 256 bits.
    fn->addFnAttr("prefer-vector-width", std::to_string(vector_width_));
    fn->addFnAttr("min-legal-vector-width", std::to_string(vector_width_));
  }
  fn->addFnAttr(llvm::Attribute::NoUnwind);
}

llvm::Function* CodeGenLLVM::new_function(const std::string& name, llvm::Type* ret,
                                          const std::vector<llvm::Type*>& params, bool internal) {
  if (module_.getFunction(name)) fail("a function named '" + name + "' is already defined in this module");
  auto* fty = llvm::FunctionType::get(ret, params, false);
  auto* fn = llvm::Function::Create(fty, internal ? llvm::Function::InternalLinkage : llvm::Function::ExternalLinkage,
                                    name, module_);
  set_function_attributes(fn);
  return fn;
}

void CodeGenLLVM::add_function(const LoweredFunc& f, const std::string& symbol) {
  func_name_ = f.name;
  symbol_ = symbol.empty() ? f.name : symbol;
  parallel_count_ = 0;
  signature_of(f);  // rejects extents that are not affine in the shape variables
  std::set<const VarNode*> distinct;
  for (auto& b : f.args)
    if (!distinct.insert(b->data.get()).second)
      fail("buffer '" + b->name + "' is passed twice; arguments must not alias");
  const std::vector<Var> shape_vars = ir::shape_vars(f);

  // The loop nest, with the argument pointers as noalias, 64-byte aligned parameters, then the
  // shape variables' values.
  std::vector<llvm::Type*> params(f.args.size(), ptr_);
  for (const Var& v : shape_vars) params.push_back(type_of(v.type()));
  llvm::Function* compute = new_function(symbol_ + ".compute", i32_, params, /*internal=*/true);
  state_ = FunctionState{compute, {}, {}};
  for (size_t i = 0; i < shape_vars.size(); ++i) {
    llvm::Argument* a = compute->getArg(f.args.size() + i);
    a->setName(shape_vars[i].name());
    state_.vars[shape_vars[i].get()] = a;
  }
  for (size_t i = 0; i < f.args.size(); ++i) {
    llvm::Argument* a = compute->getArg(i);
    a->setName(f.args[i]->name);
    a->addAttr(llvm::Attribute::NoAlias);
    a->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(kBufferAlign)));
    int64_t bytes = constant_size(f.args[i]) * memory_type_of(f.args[i]->dtype)->getPrimitiveSizeInBits() / 8;
    if (bytes > 0) a->addAttr(llvm::Attribute::getWithDereferenceableBytes(ctx_, bytes));
    state_.vars[f.args[i]->data.get()] = a;
  }
  builder_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", compute));
  emit(f.body);
  if (!builder_.GetInsertBlock()->getTerminator()) emit_return(llvm::ConstantInt::get(i32_, 0));

  // The exported entry point: int32_t f(void** args).
  llvm::Function* entry = new_function(symbol_, i32_, {ptr_}, /*internal=*/false);
  entry->getArg(0)->setName("args");
  builder_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
  std::vector<llvm::Value*> ptrs;
  for (size_t i = 0; i < f.args.size(); ++i) {
    llvm::Value* slot = builder_.CreateConstInBoundsGEP1_64(ptr_, entry->getArg(0), i);
    ptrs.push_back(builder_.CreateAlignedLoad(ptr_, slot, llvm::Align(8), f.args[i]->name));
  }
  if (!shape_vars.empty()) {  // args[n]: the shape variables' int64_t values (module.h)
    llvm::Value* slot = builder_.CreateConstInBoundsGEP1_64(ptr_, entry->getArg(0), f.args.size());
    llvm::Value* values = builder_.CreateAlignedLoad(ptr_, slot, llvm::Align(8), "shape_vars");
    for (size_t i = 0; i < shape_vars.size(); ++i) {
      llvm::Value* at = builder_.CreateConstInBoundsGEP1_64(i64_, values, i);
      llvm::Value* v = builder_.CreateAlignedLoad(i64_, at, llvm::Align(8), shape_vars[i].name());
      ptrs.push_back(builder_.CreateSExtOrTrunc(v, type_of(shape_vars[i].type())));
    }
  }
  builder_.CreateRet(builder_.CreateCall(compute, ptrs));
  state_ = FunctionState{};
}

void CodeGenLLVM::add_forwarder(const std::string& name, const std::string& target) {
  func_name_ = name;
  llvm::Function* callee = runtime_function(target.c_str(), i32_, {ptr_});
  llvm::Function* entry = new_function(name, i32_, {ptr_}, /*internal=*/false);
  entry->getArg(0)->setName("args");
  builder_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
  llvm::CallInst* call = builder_.CreateCall(callee, {entry->getArg(0)});
  call->setTailCallKind(llvm::CallInst::TCK_Tail);
  builder_.CreateRet(call);
}

void CodeGenLLVM::add_metadata(const std::string& json) {
  auto* init = llvm::ConstantDataArray::getString(ctx_, json, /*AddNull=*/true);
  auto* gv = new llvm::GlobalVariable(module_, init->getType(), /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
                                      init, runtime::kMetadataSymbol);
  gv->setAlignment(llvm::Align(1));
}

void CodeGenLLVM::emit_return(llvm::Value* code) {
  llvm::Function* free_fn = runtime_function("loom_free", llvm::Type::getVoidTy(ctx_), {ptr_});
  for (auto it = state_.heap_allocs.rbegin(); it != state_.heap_allocs.rend(); ++it)
    builder_.CreateCall(free_fn, {*it});
  builder_.CreateRet(code);
}

void CodeGenLLVM::emit_failure(const std::string& message, int code) {
  llvm::Function* set_error = runtime_function("loom_set_last_error", llvm::Type::getVoidTy(ctx_), {ptr_});
  builder_.CreateCall(set_error, {builder_.CreateGlobalString(message, "loom.msg", 0, &module_)});
  emit_return(llvm::ConstantInt::get(i32_, code));
}

void CodeGenLLVM::emit_check_code(llvm::Value* code) {
  llvm::Function* fn = state_.fn;
  auto* fail_bb = llvm::BasicBlock::Create(ctx_, "call_failed", fn);
  auto* ok_bb = llvm::BasicBlock::Create(ctx_, "call_ok", fn);
  llvm::MDBuilder md(ctx_);
  builder_.CreateCondBr(builder_.CreateICmpEQ(code, llvm::ConstantInt::get(i32_, 0)), ok_bb, fail_bb,
                        md.createLikelyBranchWeights());
  builder_.SetInsertPoint(fail_bb);
  emit_return(code);
  builder_.SetInsertPoint(ok_bb);
}

// ---------------------------------------------------------------------------------------------
// Statements

void CodeGenLLVM::emit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::LetStmt: {
      auto* op = s.as<LetStmtNode>();
      llvm::Value* v = emit(op->value);
      v->setName(op->var.name());
      auto saved = state_.vars.find(op->var.get());
      llvm::Value* shadowed = saved == state_.vars.end() ? nullptr : saved->second;
      state_.vars[op->var.get()] = v;
      emit(op->body);
      if (shadowed)
        state_.vars[op->var.get()] = shadowed;
      else
        state_.vars.erase(op->var.get());
      return;
    }
    case StmtKind::Attr:
      emit_attr(s.as<AttrNode>());
      return;
    case StmtKind::Assert:
      emit_assert(s.as<AssertNode>());
      return;
    case StmtKind::For:
      emit_for(s.as<ForNode>());
      return;
    case StmtKind::Store:
      emit_store(s.as<StoreNode>());
      return;
    case StmtKind::Allocate:
      emit_allocate(s.as<AllocateNode>());
      return;
    case StmtKind::Seq:
      for (auto& c : s.as<SeqNode>()->seq) emit(c);
      return;
    case StmtKind::IfThenElse:
      emit_if(s.as<IfThenElseNode>());
      return;
    case StmtKind::Evaluate: {
      const Expr& v = s.as<EvaluateNode>()->value;
      if (auto c = as_tensor_intrin_call(v.as<CallNode>()); c && emit_cpu_tensor_intrin(*c)) return;
      if (const LoadNode* element = as_prefetch(v.as<CallNode>())) {
        emit_prefetch(element);
        return;
      }
      emit(v);
      return;
    }
    case StmtKind::Provide:
      fail("Provide of '" + s.as<ProvideNode>()->op->name +
           "' reached code generation (storage flattening must run first)");
    case StmtKind::Realize:
      fail("Realize of '" + s.as<RealizeNode>()->op->name +
           "' reached code generation (storage flattening must run first)");
  }
  fail("unknown statement kind");
}

// A read prefetch into the L2 (locality 2 of 3; the L1 is left to the hardware's own prefetcher)
// of the line holding the element, whose address may lie past its buffer: no inbounds GEP.
void CodeGenLLVM::emit_prefetch(const LoadNode* element) {
  llvm::Value* base = buffer_ptr(element->buffer);
  llvm::Value* ptr =
      builder_.CreateGEP(memory_type_of(element->buffer->dtype), base, builder_.CreateSExt(emit(element->index), i64_));
  builder_.CreateCall(intrinsic(llvm::Intrinsic::prefetch, {ptr->getType()}),
                      {ptr, builder_.getInt32(0), builder_.getInt32(2), builder_.getInt32(1)});
}

void CodeGenLLVM::emit_assert(const AssertNode* op) {
  llvm::Value* cond = emit(op->cond);
  if (cond->getType()->isVectorTy()) cond = builder_.CreateAndReduce(cond);
  llvm::Function* fn = state_.fn;
  auto* fail_bb = llvm::BasicBlock::Create(ctx_, "assert_failed", fn);
  auto* ok_bb = llvm::BasicBlock::Create(ctx_, "assert_ok", fn);
  llvm::MDBuilder md(ctx_);
  builder_.CreateCondBr(cond, ok_bb, fail_bb, md.createLikelyBranchWeights());
  builder_.SetInsertPoint(fail_bb);
  emit_failure(op->message, -1);
  builder_.SetInsertPoint(ok_bb);
}

void CodeGenLLVM::emit_if(const IfThenElseNode* op) {
  llvm::Value* cond = emit(op->cond);
  if (cond->getType()->isVectorTy()) fail("if with a vector condition '" + to_string(op->cond) + "'");
  llvm::Function* fn = state_.fn;
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "if_then", fn);
  auto* end_bb = llvm::BasicBlock::Create(ctx_, "if_end", fn);
  auto* else_bb = op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "if_else", fn) : end_bb;
  builder_.CreateCondBr(cond, then_bb, else_bb);
  builder_.SetInsertPoint(then_bb);
  emit(op->then_case);
  builder_.CreateBr(end_bb);
  if (op->else_case.defined()) {
    builder_.SetInsertPoint(else_bb);
    emit(op->else_case);
    builder_.CreateBr(end_bb);
  }
  builder_.SetInsertPoint(end_bb);
}

// `pragma llvm_unroll` (schedule: stage.pragma(iv, "llvm_unroll", n)) tells LLVM's unroller what
// to do with a serial loop the schedule keeps rolled: 0 leaves it rolled, n unrolls it n times.
// A conv's inner reduction fully unrolled by LLVM let its scheduler hoist every weight load of
// the unrolled body and spill the register tile.
void CodeGenLLVM::emit_attr(const AttrNode* op) {
  if (op->key == "pragma_llvm_unroll") {
    const auto* imm = op->value.as<IntImmNode>();
    if (!imm || imm->value < 0 || imm->value == 1 || imm->value > std::numeric_limits<int32_t>::max())
      fail("pragma llvm_unroll needs a constant factor, 0 (keep the loop rolled) or >= 2, not " +
           ir::to_string(op->value));
    // The passes keep this pragma on its loop (IRMutator::mutate_attr); no loop under it: one
    // of one iteration, removed.
    if (const ForNode* loop = annotated_loop(op->body)) unroll_pragmas_[loop] = imm->value;
  }
  // The lowering's work count of a parallel loop (schedule::LowerOptions::parallel_work_hints): the
  // runtime runs it serially below its host's measured threshold.
  if (op->key == ir::attr_key::kParallelWork) {
    const auto* imm = op->value.as<IntImmNode>();
    if (!imm || imm->value < 0) fail("parallel_work needs a constant count >= 0, not " + ir::to_string(op->value));
    if (const ForNode* loop = annotated_loop(op->body); loop && loop->for_kind == ForKind::Parallel)
      parallel_work_[loop] = imm->value;
  }
  // `pragma alternate_order` (schedule: stage.pragma(iv, "alternate_order")) on a parallel loop:
  // successive calls run it in alternating directions (loom_parallel_for_alternating). A loop
  // serialized for its small work ignores it: its data is small enough to stay cached anyway.
  if (op->key == "pragma_alternate_order") {
    const auto* imm = op->value.as<IntImmNode>();
    if (!imm || imm->value != 1) fail("pragma alternate_order takes the value 1, not " + ir::to_string(op->value));
    if (const ForNode* loop = annotated_loop(op->body); loop && loop->for_kind == ForKind::Parallel)
      alternating_.insert(loop);
  }
  emit(op->body);
}

llvm::MDNode* CodeGenLLVM::loop_metadata(ForKind kind, int64_t unroll) {
  std::vector<llvm::Metadata*> props;
  auto flag = [&](const char* name) {
    props.push_back(llvm::MDNode::get(
        ctx_, {llvm::MDString::get(ctx_, name), llvm::ConstantAsMetadata::get(llvm::ConstantInt::getTrue(ctx_))}));
  };
  auto name_only = [&](const char* name) {
    props.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name)}));
  };
  // A loop the vectorize pass could not widen: ask LLVM's loop vectorizer to try.
  if (kind == ForKind::Vectorized) flag("llvm.loop.vectorize.enable");
  // Unrolling is done by lowering; one that remains is a hint for LLVM's unroller.
  if (kind == ForKind::Unrolled && unroll < 0) name_only("llvm.loop.unroll.enable");  // a pragma overrides the hint
  if (unroll == 0) name_only("llvm.loop.unroll.disable");
  if (unroll >= 2)
    props.push_back(llvm::MDNode::get(
        ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.count"),
               llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx_), unroll))}));
  if (props.empty()) return nullptr;
  props.insert(props.begin(), nullptr);
  llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, props);
  loop_id->replaceOperandWith(0, loop_id);
  return loop_id;
}

void CodeGenLLVM::emit_for(const ForNode* op) {
  switch (op->for_kind) {
    case ForKind::Serial:
    case ForKind::Unrolled:
    case ForKind::Vectorized:
    case ForKind::VirtualThread: {  // on a CPU, virtual threads are just iterations
      llvm::Value* begin = emit(op->min);
      llvm::Value* end = builder_.CreateAdd(begin, emit(op->extent), op->var.name() + ".end");
      emit_serial_for(op, begin, end);
      return;
    }
    case ForKind::Parallel:
      emit_parallel_for(op);
      return;
    case ForKind::ThreadBinding:
      fail("loop '" + op->var.name() + "' is bound to GPU thread '" + op->thread_tag +
           "', which the CPU backend cannot run");
  }
}

void CodeGenLLVM::emit_serial_for(const ForNode* op, llvm::Value* begin, llvm::Value* end) {
  if (!op->var.type().is_int() || !op->var.type().is_scalar())
    fail("loop variable '" + op->var.name() + "' must be a signed integer");
  llvm::Function* fn = state_.fn;
  llvm::BasicBlock* pre_bb = builder_.GetInsertBlock();
  auto* head_bb = llvm::BasicBlock::Create(ctx_, "for_" + op->var.name(), fn);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "for_body_" + op->var.name(), fn);
  auto* exit_bb = llvm::BasicBlock::Create(ctx_, "for_end_" + op->var.name(), fn);
  builder_.CreateBr(head_bb);
  builder_.SetInsertPoint(head_bb);
  llvm::PHINode* iv = builder_.CreatePHI(begin->getType(), 2, op->var.name());
  iv->addIncoming(begin, pre_bb);
  builder_.CreateCondBr(builder_.CreateICmpSLT(iv, end), body_bb, exit_bb);
  builder_.SetInsertPoint(body_bb);
  auto it = state_.vars.find(op->var.get());
  llvm::Value* shadowed = it == state_.vars.end() ? nullptr : it->second;
  state_.vars[op->var.get()] = iv;
  emit(op->body);
  if (shadowed)
    state_.vars[op->var.get()] = shadowed;
  else
    state_.vars.erase(op->var.get());
  // iv < end, so iv + 1 cannot overflow.
  llvm::Value* next =
      builder_.CreateAdd(iv, llvm::ConstantInt::get(iv->getType(), 1), op->var.name() + ".next", false, true);
  llvm::BranchInst* back = builder_.CreateBr(head_bb);
  auto pragma = unroll_pragmas_.find(op);
  if (llvm::MDNode* md = loop_metadata(op->for_kind, pragma == unroll_pragmas_.end() ? -1 : pragma->second))
    back->setMetadata(llvm::LLVMContext::MD_loop, md);
  iv->addIncoming(next, builder_.GetInsertBlock());
  builder_.SetInsertPoint(exit_bb);
}

// A parallel loop becomes
//   closure = {captured values..., min};  rc = loom_parallel_for(extent, f.parallel.N, &closure)
// (loom_parallel_for_work(..., work) for a loop with a work hint; loom_parallel_for_alternating
// for one under `pragma alternate_order`, with a direction word of its own)
// where f.parallel.N(begin, end, closure) unpacks the closure and calls f.parallel.N.body, whose
// buffer pointers are noalias parameters (so the body optimizes like the compute function).
void CodeGenLLVM::emit_parallel_for(const ForNode* op) {
  if (!op->var.type().is_int() || !op->var.type().is_scalar())
    fail("loop variable '" + op->var.name() + "' must be a signed integer");
  llvm::Value* min = emit(op->min);
  llvm::Value* extent = emit(op->extent);

  FreeVarCollector collect;
  collect.visit(op->body);
  std::vector<const VarNode*> captured;
  std::vector<llvm::Value*> values;
  for (const VarNode* v : collect.order) {
    if (v == op->var.get()) continue;
    auto it = state_.vars.find(v);
    if (it == state_.vars.end()) continue;  // defined inside the loop (or unbound: reported there)
    captured.push_back(v);
    values.push_back(it->second);
  }
  std::vector<llvm::Type*> field_types;
  for (auto* v : values) field_types.push_back(v->getType());
  field_types.push_back(min->getType());
  auto* closure_ty = llvm::StructType::get(ctx_, field_types);

  // The closure lives in the caller's frame for the duration of the (blocking) parallel call.
  llvm::Value* closure;
  {
    llvm::IRBuilder<> entry_builder(&state_.fn->getEntryBlock(), state_.fn->getEntryBlock().begin());
    closure = entry_builder.CreateAlloca(closure_ty, nullptr, "closure");
  }
  for (size_t i = 0; i < values.size(); ++i)
    builder_.CreateStore(values[i], builder_.CreateStructGEP(closure_ty, closure, i));
  builder_.CreateStore(min, builder_.CreateStructGEP(closure_ty, closure, values.size()));

  std::string name = symbol_ + ".parallel." + std::to_string(parallel_count_++);
  FunctionState saved = std::move(state_);
  llvm::IRBuilderBase::InsertPoint saved_ip = builder_.saveIP();

  // Body: i32 (i64 begin, i64 end, captured..., min)
  std::vector<llvm::Type*> body_params = {i64_, i64_};
  body_params.insert(body_params.end(), field_types.begin(), field_types.end());
  llvm::Function* body_fn = new_function(name + ".body", i32_, body_params, true);
  state_ = FunctionState{body_fn, {}, {}};
  for (size_t i = 0; i < captured.size(); ++i) {
    llvm::Argument* a = body_fn->getArg(2 + i);
    a->setName(captured[i]->name);
    if (a->getType()->isPointerTy()) {
      a->addAttr(llvm::Attribute::NoAlias);
      a->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(kBufferAlign)));
    }
    state_.vars[captured[i]] = a;
  }
  builder_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body_fn));
  llvm::Type* iv_ty = min->getType();
  llvm::Value* lo = body_fn->getArg(2 + captured.size());
  llvm::Value* begin = builder_.CreateAdd(lo, builder_.CreateTrunc(body_fn->getArg(0), iv_ty));
  llvm::Value* end = builder_.CreateAdd(lo, builder_.CreateTrunc(body_fn->getArg(1), iv_ty));
  emit_serial_for(op, begin, end);
  emit_return(llvm::ConstantInt::get(i32_, 0));

  // Trampoline with the loom_parallel_for signature.
  llvm::Function* tramp = new_function(name, i32_, {i64_, i64_, ptr_}, true);
  builder_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", tramp));
  std::vector<llvm::Value*> args = {tramp->getArg(0), tramp->getArg(1)};
  for (size_t i = 0; i < field_types.size(); ++i)
    args.push_back(builder_.CreateLoad(field_types[i], builder_.CreateStructGEP(closure_ty, tramp->getArg(2), i)));
  builder_.CreateRet(builder_.CreateCall(body_fn, args));

  state_ = std::move(saved);
  builder_.restoreIP(saved_ip);
  llvm::Value* n = builder_.CreateSExt(extent, i64_);
  auto hint = parallel_work_.find(op);
  if (alternating_.count(op)) {
    // The loop's direction word: one per loop of this module, 0 (forwards) at load.
    auto* direction = new llvm::GlobalVariable(module_, i32_, /*isConstant=*/false, llvm::GlobalValue::InternalLinkage,
                                               llvm::ConstantInt::get(i32_, 0), name + ".direction");
    llvm::Function* pfor = runtime_function("loom_parallel_for_alternating", i32_, {i64_, ptr_, ptr_, i64_, ptr_});
    int64_t work = hint == parallel_work_.end() ? -1 : hint->second;
    emit_check_code(builder_.CreateCall(pfor, {n, tramp, closure, llvm::ConstantInt::get(i64_, work), direction}));
  } else if (hint == parallel_work_.end()) {
    llvm::Function* pfor = runtime_function("loom_parallel_for", i32_, {i64_, ptr_, ptr_});
    emit_check_code(builder_.CreateCall(pfor, {n, tramp, closure}));
  } else {
    llvm::Function* pfor = runtime_function("loom_parallel_for_work", i32_, {i64_, ptr_, ptr_, i64_});
    emit_check_code(builder_.CreateCall(pfor, {n, tramp, closure, llvm::ConstantInt::get(i64_, hint->second)}));
  }
}

void CodeGenLLVM::emit_allocate(const AllocateNode* op) {
  const Buffer& b = op->buffer;
  if (b->scope != scope::kLocal && b->scope != scope::kGlobal && !b->scope.empty())
    fail("allocation of '" + b->name + "' in memory scope '" + b->scope +
         "' (the CPU backend supports 'local' and 'global')");
  llvm::Type* elem = memory_type_of(b->dtype);
  int64_t elem_bytes = elem->getPrimitiveSizeInBits() / 8;
  int64_t count = constant_size(b);
  llvm::Value* ptr;
  bool on_heap = count < 0 || count * elem_bytes > kMaxStackBytes;
  if (!on_heap) {
    // Hoisted to the entry block: one stack slot however often the scope is entered.
    llvm::IRBuilder<> entry_builder(&state_.fn->getEntryBlock(), state_.fn->getEntryBlock().begin());
    auto* slot = entry_builder.CreateAlloca(llvm::ArrayType::get(elem, std::max<int64_t>(count, 1)), nullptr, b->name);
    slot->setAlignment(llvm::Align(kBufferAlign));
    ptr = slot;
  } else {
    llvm::Value* bytes = llvm::ConstantInt::get(i64_, elem_bytes);
    for (auto& e : b->shape) bytes = builder_.CreateMul(bytes, builder_.CreateSExtOrTrunc(emit(e), i64_));
    llvm::Function* alloc_fn = runtime_function("loom_alloc", ptr_, {i64_, i64_});
    ptr = builder_.CreateCall(alloc_fn, {bytes, llvm::ConstantInt::get(i64_, kBufferAlign)}, b->name);
    llvm::Function* fn = state_.fn;
    auto* fail_bb = llvm::BasicBlock::Create(ctx_, "alloc_failed", fn);
    auto* ok_bb = llvm::BasicBlock::Create(ctx_, "alloc_ok", fn);
    llvm::MDBuilder md(ctx_);
    builder_.CreateCondBr(builder_.CreateIsNull(ptr), fail_bb, ok_bb, md.createUnlikelyBranchWeights());
    builder_.SetInsertPoint(fail_bb);
    emit_failure("out of memory allocating temporary '" + b->name + "'", -2);
    builder_.SetInsertPoint(ok_bb);
    state_.heap_allocs.push_back(ptr);
  }
  state_.vars[b->data.get()] = ptr;
  emit(op->body);
  state_.vars.erase(b->data.get());
  if (on_heap) {
    state_.heap_allocs.pop_back();
    builder_.CreateCall(runtime_function("loom_free", llvm::Type::getVoidTy(ctx_), {ptr_}), {ptr});
  }
}

void CodeGenLLVM::emit_store(const StoreNode* op) {
  DataType t = op->value.type();
  llvm::Type* elem = memory_type_of(t.element_of());
  llvm::Align align(elem->getPrimitiveSizeInBits() / 8);
  llvm::Value* value = emit(op->value);
  int lanes = t.lanes();
  int index_lanes = op->index.type().lanes();
  if (lanes == 1 && index_lanes > 1) {  // the same value to every address
    value = builder_.CreateVectorSplat(index_lanes, value);
    t = t.with_lanes(index_lanes);
    lanes = index_lanes;
  }
  if (lanes != index_lanes)
    fail("store of " + t.str() + " to '" + op->buffer->name + "' with index '" + to_string(op->index) +
         "' of another width");
  value = to_memory(t, value);
  auto* r = op->index.as<RampNode>();
  if (lanes == 1 || (r && is_const_int(r->stride, 1))) {
    llvm::Value* addr = element_ptr(op->buffer, elem, emit(r ? r->base : op->index));
    builder_.CreateAlignedStore(value, addr, align);
    return;
  }
  // Lanes at consecutive constant offsets from one base (a column pair of a half-vector block,
  // (f / 8) * 8 + f % 8): one vector store.
  if (std::optional<ir::LaneOffsets> d = ir::constant_lane_offsets(op->index)) {
    bool consecutive = true;
    for (int i = 0; consecutive && i < lanes; ++i) consecutive = d->offsets[size_t(i)] == i;
    if (consecutive) {
      builder_.CreateAlignedStore(value, element_ptr(op->buffer, elem, emit(d->base)), align);
      return;
    }
  }
  llvm::Value* addrs = element_ptr(op->buffer, elem, emit(op->index));
  builder_.CreateMaskedScatter(value, addrs, align);
}

}  // namespace loom::codegen::llvm_backend
