// Expressions of the LLVM translation: arithmetic with Loom's semantics (wrap-around integers,
// floor division), vectors (Ramp/Broadcast, contiguous and gathered loads), casts and intrinsics.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <cmath>

#include "codegen_llvm.h"
#include "loom/ir/lane_offsets.h"
#include "loom/ir/printer.h"
#include "loom/ir/tensor.h"

namespace loom::codegen::llvm_backend {

using namespace loom::ir;

// ---------------------------------------------------------------------------------------------
// Types and helpers

llvm::Type* CodeGenLLVM::type_of(DataType t) {
  llvm::Type* s = nullptr;
  if (t.is_bool())
    s = i1_;
  else if (t.is_int() || t.is_uint())
    s = llvm::Type::getIntNTy(ctx_, t.bits());
  else if (t.is_float() && t.bits() == 16)
    s = llvm::Type::getHalfTy(ctx_);
  else if (t.is_float() && t.bits() == 32)
    s = llvm::Type::getFloatTy(ctx_);
  else if (t.is_float() && t.bits() == 64)
    s = llvm::Type::getDoubleTy(ctx_);
  else
    fail("unsupported data type " + t.str());
  return t.lanes() > 1 ? llvm::FixedVectorType::get(s, t.lanes()) : s;
}

llvm::Type* CodeGenLLVM::memory_type_of(DataType t) { return type_of(t.is_bool() ? DataType::UInt(8, t.lanes()) : t); }

llvm::Value* CodeGenLLVM::to_memory(DataType t, llvm::Value* v) {
  return t.is_bool() ? builder_.CreateZExt(v, memory_type_of(t)) : v;
}

llvm::Value* CodeGenLLVM::from_memory(DataType t, llvm::Value* v) {
  return t.is_bool() ? builder_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType())) : v;
}

llvm::Value* CodeGenLLVM::const_int(DataType t, int64_t v) {
  return llvm::ConstantInt::get(type_of(t), v, /*IsSigned=*/true);
}

llvm::Value* CodeGenLLVM::splat_if_vector(llvm::Value* v, int lanes) {
  if (lanes <= 1 || v->getType()->isVectorTy()) return v;
  return builder_.CreateVectorSplat(lanes, v);
}

llvm::Function* CodeGenLLVM::runtime_function(const char* name, llvm::Type* ret,
                                              const std::vector<llvm::Type*>& params) {
  auto callee = module_.getOrInsertFunction(name, llvm::FunctionType::get(ret, params, false));
  return llvm::cast<llvm::Function>(callee.getCallee());
}

llvm::Function* CodeGenLLVM::intrinsic(llvm::Intrinsic::ID id, const std::vector<llvm::Type*>& types) {
  return llvm::Intrinsic::getDeclaration(&module_, id, types);
}

llvm::Value* CodeGenLLVM::lookup(const VarNode* v) {
  auto it = state_.vars.find(v);
  if (it == state_.vars.end()) fail("variable '" + v->name + "' is used outside its definition");
  return it->second;
}

llvm::Value* CodeGenLLVM::buffer_ptr(const Buffer& b) {
  auto it = state_.vars.find(b->data.get());
  if (it == state_.vars.end()) fail("buffer '" + b->name + "' is neither an argument nor allocated here");
  return it->second;
}

llvm::Value* CodeGenLLVM::element_ptr(const Buffer& b, llvm::Type* elem, llvm::Value* index) {
  llvm::Type* idx_ty = index->getType()->isVectorTy()
                           ? static_cast<llvm::Type*>(llvm::VectorType::get(
                                 i64_, llvm::cast<llvm::VectorType>(index->getType())->getElementCount()))
                           : i64_;
  return builder_.CreateInBoundsGEP(elem, buffer_ptr(b), builder_.CreateSExt(index, idx_ty));
}

// ---------------------------------------------------------------------------------------------
// Expressions

llvm::Value* CodeGenLLVM::emit(const Expr& e) {
  if (!e.defined()) fail("undefined expression");
  switch (e.kind()) {
    case ExprKind::IntImm:
      return const_int(e.type(), e.as<IntImmNode>()->value);
    case ExprKind::FloatImm:
      return llvm::ConstantFP::get(type_of(e.type()), e.as<FloatImmNode>()->value);
    case ExprKind::StringImm:
      return builder_.CreateGlobalString(e.as<StringImmNode>()->value, "loom.str", 0, &module_);
    case ExprKind::Var:
      return lookup(e.as<VarNode>());
    case ExprKind::Cast: {
      auto* op = e.as<CastNode>();
      return emit_cast(e.type(), op->value.type(), emit(op->value));
    }
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Mod:
    case ExprKind::Min:
    case ExprKind::Max:
    case ExprKind::EQ:
    case ExprKind::NE:
    case ExprKind::LT:
    case ExprKind::LE:
    case ExprKind::GT:
    case ExprKind::GE:
    case ExprKind::And:
    case ExprKind::Or:
      return emit_binary(e);
    case ExprKind::Not:
      return builder_.CreateNot(emit(e.as<NotNode>()->a));
    case ExprKind::Select: {
      auto* op = e.as<SelectNode>();
      llvm::Value* c = emit(op->cond);
      llvm::Value* t = emit(op->true_value);
      llvm::Value* f = emit(op->false_value);
      return builder_.CreateSelect(c, t, f);
    }
    case ExprKind::Load:
      return emit_load(e.as<LoadNode>());
    case ExprKind::Ramp:
      return emit_ramp(e.as<RampNode>());
    case ExprKind::Broadcast: {
      auto* op = e.as<BroadcastNode>();
      return builder_.CreateVectorSplat(op->lanes, emit(op->value));
    }
    case ExprKind::Call:
      return emit_call(e.as<CallNode>());
    case ExprKind::Let: {
      auto* op = e.as<LetNode>();
      llvm::Value* v = emit(op->value);
      auto it = state_.vars.find(op->var.get());
      llvm::Value* shadowed = it == state_.vars.end() ? nullptr : it->second;
      state_.vars[op->var.get()] = v;
      llvm::Value* r = emit(op->body);
      if (shadowed)
        state_.vars[op->var.get()] = shadowed;
      else
        state_.vars.erase(op->var.get());
      return r;
    }
    case ExprKind::TensorRead:
      fail("tensor read '" + to_string(e) + "' reached code generation (storage flattening must run first)");
    case ExprKind::Reduce:
      fail("reduction '" + to_string(e) + "' reached code generation (it must be lowered to loops first)");
  }
  fail("unknown expression kind");
}

llvm::Value* CodeGenLLVM::emit_binary(const Expr& e) {
  auto* op = as_binary(e);
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  DataType t = op->a.type();
  int lanes = std::max(t.lanes(), op->b.type().lanes());
  a = splat_if_vector(a, lanes);
  b = splat_if_vector(b, lanes);
  bool is_float = t.is_float();
  bool is_signed = t.is_int();
  switch (e.kind()) {
    case ExprKind::Add:
      return is_float ? builder_.CreateFAdd(a, b) : builder_.CreateAdd(a, b);
    case ExprKind::Sub:
      return is_float ? builder_.CreateFSub(a, b) : builder_.CreateSub(a, b);
    case ExprKind::Mul:
      return is_float ? builder_.CreateFMul(a, b) : builder_.CreateMul(a, b);
    case ExprKind::Div:
    case ExprKind::Mod:
      return emit_div_mod(e, a, b);
    // Same operand order as std::min / std::max (the interpreter's semantics).
    case ExprKind::Min: {
      llvm::Value* b_lt_a = is_float    ? builder_.CreateFCmpOLT(b, a)
                            : is_signed ? builder_.CreateICmpSLT(b, a)
                                        : builder_.CreateICmpULT(b, a);
      return builder_.CreateSelect(b_lt_a, b, a);
    }
    case ExprKind::Max: {
      llvm::Value* a_lt_b = is_float    ? builder_.CreateFCmpOLT(a, b)
                            : is_signed ? builder_.CreateICmpSLT(a, b)
                                        : builder_.CreateICmpULT(a, b);
      return builder_.CreateSelect(a_lt_b, b, a);
    }
    case ExprKind::EQ:
      return is_float ? builder_.CreateFCmpOEQ(a, b) : builder_.CreateICmpEQ(a, b);
    case ExprKind::NE:
      return is_float ? builder_.CreateFCmpUNE(a, b) : builder_.CreateICmpNE(a, b);
    case ExprKind::LT:
      return is_float    ? builder_.CreateFCmpOLT(a, b)
             : is_signed ? builder_.CreateICmpSLT(a, b)
                         : builder_.CreateICmpULT(a, b);
    case ExprKind::LE:
      return is_float    ? builder_.CreateFCmpOLE(a, b)
             : is_signed ? builder_.CreateICmpSLE(a, b)
                         : builder_.CreateICmpULE(a, b);
    case ExprKind::GT:
      return is_float    ? builder_.CreateFCmpOGT(a, b)
             : is_signed ? builder_.CreateICmpSGT(a, b)
                         : builder_.CreateICmpUGT(a, b);
    case ExprKind::GE:
      return is_float    ? builder_.CreateFCmpOGE(a, b)
             : is_signed ? builder_.CreateICmpSGE(a, b)
                         : builder_.CreateICmpUGE(a, b);
    case ExprKind::And:
      return builder_.CreateAnd(a, b);
    case ExprKind::Or:
      return builder_.CreateOr(a, b);
    default:
      break;
  }
  fail("unknown binary operator in '" + to_string(e) + "'");
}

// Positive constant divisor of `e` (scalar or broadcast), or 0.
static int64_t positive_const_divisor(const Expr& e) {
  const Expr& s = e.as<BroadcastNode>() ? e.as<BroadcastNode>()->value : e;
  const int64_t* c = as_const_int(s);
  return c && *c > 0 ? *c : 0;
}

// Integer division and modulus round towards negative infinity (Halide's semantics):
//   7 / -2 = -4, -7 / 2 = -4, -7 % 2 = 1, 7 % -2 = -1.
llvm::Value* CodeGenLLVM::emit_div_mod(const Expr& e, llvm::Value* a, llvm::Value* b) {
  auto* op = as_binary(e);
  DataType t = op->a.type();
  bool is_div = e.kind() == ExprKind::Div;
  if (t.is_float()) {
    llvm::Value* q = builder_.CreateFDiv(a, b);
    if (is_div) return q;
    llvm::Value* fq = builder_.CreateCall(intrinsic(llvm::Intrinsic::floor, {q->getType()}), {q});
    return builder_.CreateFSub(a, builder_.CreateFMul(fq, b));
  }
  if (!t.is_int()) return is_div ? builder_.CreateUDiv(a, b) : builder_.CreateURem(a, b);
  llvm::Type* ty = a->getType();
  llvm::Value* zero = llvm::Constant::getNullValue(ty);
  if (int64_t c = positive_const_divisor(op->b)) {
    if ((c & (c - 1)) == 0) {  // power of two: arithmetic shift / mask are exact floor semantics
      int shift = 0;
      while ((int64_t{1} << shift) < c) ++shift;
      return is_div ? builder_.CreateAShr(a, llvm::ConstantInt::get(ty, shift))
                    : builder_.CreateAnd(a, llvm::ConstantInt::get(ty, c - 1));
    }
    if (is_div) {
      // Flip negative dividends to non-negative (a ^ -1 = -a - 1), divide, flip back.
      llvm::Value* sign = builder_.CreateAShr(a, llvm::ConstantInt::get(ty, t.bits() - 1));
      return builder_.CreateXor(builder_.CreateUDiv(builder_.CreateXor(a, sign), b), sign);
    }
    llvm::Value* r = builder_.CreateSRem(a, b);
    return builder_.CreateSelect(builder_.CreateICmpSLT(r, zero), builder_.CreateAdd(r, b), r);
  }
  llvm::Value* q = builder_.CreateSDiv(a, b);
  llvm::Value* r = builder_.CreateSRem(a, b);
  // Truncation differs from floor when the remainder is non-zero and its sign differs from b's.
  llvm::Value* adjust =
      builder_.CreateAnd(builder_.CreateICmpNE(r, zero), builder_.CreateICmpSLT(builder_.CreateXor(r, b), zero));
  if (is_div) return builder_.CreateSub(q, builder_.CreateZExt(adjust, ty));
  return builder_.CreateSelect(adjust, builder_.CreateAdd(r, b), r);
}

llvm::Value* CodeGenLLVM::emit_cast(DataType to, DataType from, llvm::Value* v) {
  if (to.lanes() != from.lanes()) {
    if (from.lanes() != 1) fail("cast from " + from.str() + " to " + to.str() + " changes the number of lanes");
    v = builder_.CreateVectorSplat(to.lanes(), v);
    from = from.with_lanes(to.lanes());
  }
  if (to == from) return v;
  llvm::Type* ty = type_of(to);
  if (to.is_bool()) {
    llvm::Value* zero = llvm::Constant::getNullValue(v->getType());
    return from.is_float() ? builder_.CreateFCmpUNE(v, zero) : builder_.CreateICmpNE(v, zero);
  }
  if (from.is_bool()) return to.is_float() ? builder_.CreateUIToFP(v, ty) : builder_.CreateZExt(v, ty);
  if (to.is_float() && from.is_float()) return builder_.CreateFPCast(v, ty);
  if (to.is_float()) return from.is_int() ? builder_.CreateSIToFP(v, ty) : builder_.CreateUIToFP(v, ty);
  if (from.is_float()) return to.is_int() ? builder_.CreateFPToSI(v, ty) : builder_.CreateFPToUI(v, ty);
  // Integer to integer: truncation wraps around; widening extends by the source's signedness.
  return builder_.CreateIntCast(v, ty, from.is_int());
}

llvm::Value* CodeGenLLVM::emit_ramp(const RampNode* op) {
  llvm::Value* base = emit(op->base);
  llvm::Value* stride = emit(op->stride);
  std::vector<llvm::Constant*> steps;
  for (int i = 0; i < op->lanes; ++i) steps.push_back(llvm::ConstantInt::get(base->getType(), i));
  llvm::Value* offsets =
      builder_.CreateMul(builder_.CreateVectorSplat(op->lanes, stride), llvm::ConstantVector::get(steps));
  return builder_.CreateAdd(builder_.CreateVectorSplat(op->lanes, base), offsets);
}

llvm::Value* CodeGenLLVM::emit_load(const LoadNode* op) {
  DataType t = op->type;
  llvm::Type* elem = memory_type_of(t.element_of());
  llvm::Align align(elem->getPrimitiveSizeInBits() / 8);
  if (t.lanes() != op->index.type().lanes())
    fail("load of " + t.str() + " from '" + op->buffer->name + "' with index '" + to_string(op->index) +
         "' of another width");
  if (t.lanes() == 1)
    return from_memory(t, builder_.CreateAlignedLoad(elem, element_ptr(op->buffer, elem, emit(op->index)), align));
  llvm::Type* vty = memory_type_of(t);
  if (auto* r = op->index.as<RampNode>(); r && is_const_int(r->stride, 1)) {
    // Contiguous lanes: one (possibly unaligned) vector load.
    llvm::Value* addr = element_ptr(op->buffer, elem, emit(r->base));
    return from_memory(t, builder_.CreateAlignedLoad(vty, addr, align));
  }
  if (auto* bc = op->index.as<BroadcastNode>()) {
    llvm::Value* s = builder_.CreateAlignedLoad(elem, element_ptr(op->buffer, elem, emit(bc->value)), align);
    return from_memory(t, builder_.CreateVectorSplat(t.lanes(), s));
  }
  if (llvm::Value* v = emit_load_of_runs(op, elem, align)) return from_memory(t, v);
  llvm::Value* addrs = element_ptr(op->buffer, elem, emit(op->index));
  return from_memory(t, builder_.CreateMaskedGather(vty, addrs, align));
}

// A load whose lanes read constant offsets from one base, in at most kMaxLoadRuns runs of
// consecutive elements: each run loaded once (a scalar or a vector), the lanes shuffled out of
// them. nullptr where the index is not of that form.
llvm::Value* CodeGenLLVM::emit_load_of_runs(const LoadNode* op, llvm::Type* elem, llvm::Align align) {
  constexpr size_t kMaxLoadRuns = 4;
  std::optional<LaneOffsets> d = constant_lane_offsets(op->index);
  if (!d) return nullptr;
  std::vector<OffsetRun> runs = offset_runs(d->offsets);
  if (runs.size() > kMaxLoadRuns) return nullptr;
  llvm::Value* base = emit(d->base);
  // The distinct elements in order of offset, gathered into one vector of `distinct` lanes.
  int distinct = 0;
  for (const OffsetRun& r : runs) distinct += int(r.length);
  llvm::Value* all = nullptr;
  int have = 0;
  for (const OffsetRun& r : runs) {
    llvm::Value* at = builder_.CreateAdd(base, llvm::ConstantInt::get(base->getType(), r.start));
    llvm::Value* ptr = element_ptr(op->buffer, elem, at);
    llvm::Value* piece = r.length == 1 ? builder_.CreateVectorSplat(1, builder_.CreateAlignedLoad(elem, ptr, align))
                                       : static_cast<llvm::Value*>(builder_.CreateAlignedLoad(
                                             llvm::FixedVectorType::get(elem, unsigned(r.length)), ptr, align));
    // Widened to `distinct` lanes (the rest poison), then merged after the pieces before it.
    std::vector<int> widen(static_cast<size_t>(distinct), -1), merge(static_cast<size_t>(distinct));
    for (int i = 0; i < int(r.length); ++i) widen[size_t(i)] = i;
    llvm::Value* wide = distinct == int(r.length) ? piece : builder_.CreateShuffleVector(piece, widen);
    for (int i = 0; i < distinct; ++i)
      merge[size_t(i)] = i < have ? i : i < have + int(r.length) ? distinct + i - have : -1;
    all = all ? builder_.CreateShuffleVector(all, wide, merge) : wide;
    have += int(r.length);
  }
  // Each lane's element: its offset's position among the distinct ones.
  std::vector<int> mask;
  for (int64_t off : d->offsets) {
    int pos = 0;
    for (const OffsetRun& r : runs) {
      if (off >= r.start && off < r.start + r.length) {
        pos += int(off - r.start);
        break;
      }
      pos += int(r.length);
    }
    mask.push_back(pos);
  }
  bool identity = distinct == int(mask.size());
  for (size_t i = 0; identity && i < mask.size(); ++i) identity = mask[i] == int(i);
  return identity ? all : builder_.CreateShuffleVector(all, mask);
}

// ---------------------------------------------------------------------------------------------
// Calls

llvm::Value* CodeGenLLVM::emit_call(const CallNode* op) {
  if (op->call_type == CallNode::CallType::Extern) {
    std::vector<llvm::Value*> args;
    std::vector<llvm::Type*> types;
    for (auto& a : op->args) {
      args.push_back(emit(a));
      types.push_back(args.back()->getType());
    }
    llvm::Function* fn = runtime_function(op->name.c_str(), type_of(op->type), types);
    if (fn->getFunctionType() != llvm::FunctionType::get(type_of(op->type), types, false))
      fail("extern function '" + op->name + "' is called with different signatures");
    return builder_.CreateCall(fn, args);
  }
  if (op->name == "if_then_else") return emit_lazy_select(op);
  return emit_math(op);
}

// if_then_else evaluates only the chosen branch (the other may read out of bounds).
llvm::Value* CodeGenLLVM::emit_lazy_select(const CallNode* op) {
  if (op->args.size() != 3) fail("if_then_else needs 3 arguments");
  llvm::Value* cond = emit(op->args[0]);
  if (cond->getType()->isVectorTy())  // per-lane conditions: both sides are evaluated
    return builder_.CreateSelect(cond, emit(op->args[1]), emit(op->args[2]));
  llvm::Function* fn = state_.fn;
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "ite_then", fn);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "ite_else", fn);
  auto* end_bb = llvm::BasicBlock::Create(ctx_, "ite_end", fn);
  builder_.CreateCondBr(cond, then_bb, else_bb);
  builder_.SetInsertPoint(then_bb);
  llvm::Value* t = emit(op->args[1]);
  llvm::BasicBlock* then_end = builder_.GetInsertBlock();
  builder_.CreateBr(end_bb);
  builder_.SetInsertPoint(else_bb);
  llvm::Value* f = emit(op->args[2]);
  llvm::BasicBlock* else_end = builder_.GetInsertBlock();
  builder_.CreateBr(end_bb);
  builder_.SetInsertPoint(end_bb);
  llvm::PHINode* phi = builder_.CreatePHI(t->getType(), 2);
  phi->addIncoming(t, then_end);
  phi->addIncoming(f, else_end);
  return phi;
}

llvm::Value* CodeGenLLVM::emit_math(const CallNode* op) {
  static const std::map<std::string, std::pair<llvm::Intrinsic::ID, size_t>> kFloatIntrinsics = {
      {"exp", {llvm::Intrinsic::exp, 1}},     {"exp2", {llvm::Intrinsic::exp2, 1}},
      {"log", {llvm::Intrinsic::log, 1}},     {"log2", {llvm::Intrinsic::log2, 1}},
      {"log10", {llvm::Intrinsic::log10, 1}}, {"sqrt", {llvm::Intrinsic::sqrt, 1}},
      {"fabs", {llvm::Intrinsic::fabs, 1}},   {"floor", {llvm::Intrinsic::floor, 1}},
      {"ceil", {llvm::Intrinsic::ceil, 1}},   {"trunc", {llvm::Intrinsic::trunc, 1}},
      {"round", {llvm::Intrinsic::round, 1}}, {"roundeven", {llvm::Intrinsic::roundeven, 1}},
      {"sin", {llvm::Intrinsic::sin, 1}},     {"cos", {llvm::Intrinsic::cos, 1}},
      {"tanh", {llvm::Intrinsic::tanh, 1}},   {"pow", {llvm::Intrinsic::pow, 2}},
      {"fma", {llvm::Intrinsic::fma, 3}},
  };
  std::string where = "call '" + op->name + "'";
  DataType t = op->type;
  std::vector<llvm::Value*> args;
  for (auto& a : op->args) args.push_back(splat_if_vector(emit(a), t.lanes()));
  if (op->name == "abs" && op->args.size() == 1 && !t.is_float()) {
    if (t.is_uint() || t.is_bool()) return args[0];
    return builder_.CreateCall(intrinsic(llvm::Intrinsic::abs, {args[0]->getType()}), {args[0], builder_.getFalse()});
  }
  if (op->name == ir::kShiftRight && args.size() == 2 && t.is_int()) {
    // Right by min(s, 31) for s >= 0, else left by min(-s, 31) (wrapping), as the accelerator's ALU.
    llvm::Value *x = args[0], *s = args[1];
    llvm::Type* ty = x->getType();
    llvm::Value* k31 = llvm::ConstantInt::get(ty, 31);
    llvm::Value* right = builder_.CreateAShr(x, builder_.CreateSelect(builder_.CreateICmpSGT(s, k31), k31, s));
    llvm::Value* neg = builder_.CreateNeg(s);
    llvm::Value* left = builder_.CreateShl(
        x, builder_.CreateSelect(builder_.CreateICmpSLT(s, llvm::ConstantInt::get(ty, -31)), k31, neg));
    return builder_.CreateSelect(builder_.CreateICmpSGE(s, llvm::ConstantInt::get(ty, 0)), right, left);
  }
  std::string name = op->name == "abs" ? "fabs" : op->name;
  if (name == "recip_finite" && t.is_float() && args.size() == 1) return emit_recip_finite(args[0]);
  if (name == "sigmoid" && t.is_float() && args.size() == 1) {
    // Half is computed in float, like the other math below.
    llvm::Value* a = args[0];
    if (t.bits() == 16) a = builder_.CreateFPExt(a, type_of(DataType::Float(32, t.lanes())));
    llvm::Value* r;
    if (t.bits() <= 32 && t.lanes() > 1) {
      r = emit_vector_sigmoid_f32(a);
    } else {
      llvm::Value* one = llvm::ConstantFP::get(a->getType(), 1.0);
      llvm::Value* e = builder_.CreateCall(intrinsic(llvm::Intrinsic::exp, {a->getType()}), {builder_.CreateFNeg(a)});
      r = builder_.CreateFDiv(one, builder_.CreateFAdd(one, e));
    }
    return t.bits() == 16 ? builder_.CreateFPTrunc(r, type_of(t)) : r;
  }
  // LLVM scalarizes vector llvm.exp and llvm.tanh into per-lane libm calls; compute them inline.
  if (name == "exp" && t.is_float() && t.bits() == 32 && t.lanes() > 1 && args.size() == 1)
    return emit_vector_exp_f32(args[0]);
  if (name == "tanh" && t.is_float() && t.bits() == 32 && t.lanes() > 1 && args.size() == 1)
    return emit_vector_tanh_f32(args[0]);
  auto it = kFloatIntrinsics.find(name);
  if (it == kFloatIntrinsics.end())
    fail("intrinsic '" + op->name +
         "' is not supported by the CPU backend (accelerator intrinsics need codegen/accel)");
  if (!t.is_float()) fail(where + " on " + t.str() + " (expects a float type)");
  if (args.size() != it->second.second)
    fail(where + " has " + std::to_string(args.size()) + " arguments, expects " + std::to_string(it->second.second));
  // Half math is computed in float: x86 has no half libm, and rounding once matches the interpreter.
  bool widen = t.bits() == 16;
  llvm::Type* ty = widen ? type_of(DataType::Float(32, t.lanes())) : type_of(t);
  for (auto& a : args)
    if (widen) a = builder_.CreateFPExt(a, ty);
  llvm::Value* r = builder_.CreateCall(intrinsic(it->second.first, {ty}), args);
  return widen ? builder_.CreateFPTrunc(r, type_of(t)) : r;
}

// 1 / x. arcp + ninf: LLVM's x86 lowering of a float vector division to a reciprocal estimate
// (rcpps, vrcp14ps) and one Newton step; a scalar or a double stays a division. Not on AMD Zen,
// whose divider runs beside the FMA pipes: there the estimate's three FMA-pipe operations made
// EfficientNet-B0's SiLU kernels slower than the division. Keyed on the target CPU's
// name: a generic x86-64 target gets the estimate.
llvm::Value* CodeGenLLVM::emit_recip_finite(llvm::Value* x) {
  auto* div = llvm::cast<llvm::Instruction>(builder_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), x));
  if (!tm_.getTargetCPU().starts_with("znver")) {
    llvm::FastMathFlags fmf;
    fmf.setAllowReciprocal();
    fmf.setNoInfs();
    div->setFastMathFlags(fmf);
  }
  return div;
}

// 1 / (1 + e^-x) for float32 vectors: x clamped to [-87, 87] (comparisons and selects, so NaN
// stays NaN), where e^-x is finite and its core (emit_vector_exp_f32_core) needs none of exp's
// edge handling; then recip_finite. At the clamps the value is within 2e-38 of the true one.
// Fewer vector operations than exp's and a division (SiLU epilogues are bound by them).
llvm::Value* CodeGenLLVM::emit_vector_sigmoid_f32(llvm::Value* x) {
  llvm::Type* ty = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  llvm::Value* xc = builder_.CreateSelect(builder_.CreateFCmpOLT(x, c(-87.0)), c(-87.0), x);
  xc = builder_.CreateSelect(builder_.CreateFCmpOGT(xc, c(87.0)), c(87.0), xc);
  llvm::Value* e = emit_vector_exp_f32_core(builder_.CreateFNeg(xc));
  return emit_recip_finite(builder_.CreateFAdd(c(1.0), e));
}

// tanh(x) for float32 vectors. |x| < 0.5: x P(x^2), P of degree 5 fitted for relative error
// (below 1e-7 in float arithmetic); above: (1 - e) / (1 + e) with e = e^-2|x|, whose subtraction
// loses nothing there, and the sign of x. |x| is clamped to 9 (tanh(9) rounds to 1) by a select,
// so NaN stays NaN and +-inf gives +-1.
llvm::Value* CodeGenLLVM::emit_vector_tanh_f32(llvm::Value* x) {
  llvm::Type* ty = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  auto call = [&](llvm::Intrinsic::ID id, std::vector<llvm::Value*> a) {
    return builder_.CreateCall(intrinsic(id, {ty}), a);
  };
  llvm::Value* a = call(llvm::Intrinsic::fabs, {x});
  llvm::Value* ac = builder_.CreateSelect(builder_.CreateFCmpOGT(a, c(9.0)), c(9.0), a);
  llvm::Value* e = emit_vector_exp_f32_core(builder_.CreateFMul(ac, c(-2.0)));
  llvm::Value* large = builder_.CreateFDiv(builder_.CreateFSub(c(1.0), e), builder_.CreateFAdd(c(1.0), e));
  large = call(llvm::Intrinsic::copysign, {large, x});
  llvm::Value* u = builder_.CreateFMul(x, x);
  llvm::Value* p = c(-0.0066438522189855576);
  for (double k : {0.021294981241226196, -0.05389826372265816, 0.13332951068878174, -0.33333325386047363, 1.0})
    p = builder_.CreateFAdd(builder_.CreateFMul(p, u), c(k));
  llvm::Value* small = builder_.CreateFMul(p, x);
  return builder_.CreateSelect(builder_.CreateFCmpOLT(a, c(0.5)), small, large);
}

// exp(x) for float32 vectors, Cephes-style: x = n*ln2 + r with |r| <= ln2/2 (ln2 split in two
// parts so r is exact), e^r by a degree-7 polynomial (max relative error ~1e-7), 2^n by building
// the exponent bits. Overflow gives +inf, results below the smallest normal float flush to 0 (as
// with -ffast-math), NaN stays NaN.
llvm::Value* CodeGenLLVM::emit_vector_exp_f32(llvm::Value* x) {
  llvm::Type* ty = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  auto call = [&](llvm::Intrinsic::ID id, std::vector<llvm::Value*> a) {
    return builder_.CreateCall(intrinsic(id, {ty}), a);
  };
  llvm::Value* xc =
      call(llvm::Intrinsic::maxnum, {call(llvm::Intrinsic::minnum, {x, c(88.3762626647949)}), c(-87.3365447504019)});
  llvm::Value* result = emit_vector_exp_f32_core(xc);
  result = builder_.CreateSelect(builder_.CreateFCmpOGT(x, c(88.72283905206835)), c(HUGE_VAL), result);
  result = builder_.CreateSelect(builder_.CreateFCmpOLT(x, c(-87.3365447504019)), c(0.0), result);
  return builder_.CreateSelect(builder_.CreateFCmpUNO(x, x), x, result);
}

// e^x for x in [-87.34, 88.38] (no edge handling): the range reduction, polynomial and exponent
// bits of emit_vector_exp_f32.
llvm::Value* CodeGenLLVM::emit_vector_exp_f32_core(llvm::Value* xc) {
  llvm::Type* ty = xc->getType();
  auto* vty = llvm::cast<llvm::FixedVectorType>(ty);
  auto c = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  auto call = [&](llvm::Intrinsic::ID id, std::vector<llvm::Value*> a) {
    return builder_.CreateCall(intrinsic(id, {ty}), a);
  };
  llvm::Value* n = call(llvm::Intrinsic::rint, {builder_.CreateFMul(xc, c(1.44269504088896341))});
  llvm::Value* r = builder_.CreateFSub(xc, builder_.CreateFMul(n, c(0.693359375)));
  r = builder_.CreateFSub(r, builder_.CreateFMul(n, c(-2.12194440e-4)));
  llvm::Value* p = c(1.9875691500E-4);
  for (double k : {1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1})
    p = builder_.CreateFAdd(builder_.CreateFMul(p, r), c(k));
  llvm::Value* y =
      builder_.CreateFAdd(builder_.CreateFAdd(builder_.CreateFMul(p, builder_.CreateFMul(r, r)), r), c(1.0));
  auto* ity = llvm::FixedVectorType::get(i32_, vty->getNumElements());
  // Frozen: a NaN input (sigmoid passes NaN through its clamps) makes fptosi poison; frozen it is
  // some integer, and the NaN polynomial times any power of two is NaN.
  llvm::Value* bits = builder_.CreateShl(
      builder_.CreateAdd(builder_.CreateFreeze(builder_.CreateFPToSI(n, ity)), llvm::ConstantInt::get(ity, 127)), 23);
  return builder_.CreateFMul(y, builder_.CreateBitCast(bits, ty));
}

}  // namespace loom::codegen::llvm_backend
