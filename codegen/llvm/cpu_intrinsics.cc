// Tensor intrinsics of the CPU (ir/intrinsics.h): the calls tensorize leaves for a CPU operation,
// emitted as the target's instructions. "cpu.dot2_i16x<L>": L int32 accumulators, each plus the
// dot product of a broadcast int16 pair with its own int16 pair: x86's pmaddwd (one instruction
// for L = 4/8/16 with SSE2/AVX2/AVX-512BW), fused with the add into vpdpwssd on VNNI targets;
// other targets get the widening multiply and pairwise add, which their backends select.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/MC/MCSubtargetInfo.h>

#include "codegen_llvm.h"
#include "loom/ir/printer.h"

namespace loom::codegen::llvm_backend {

using namespace loom::ir;

bool CodeGenLLVM::has_feature(const char* feature) const {
  const llvm::MCSubtargetInfo* sti = tm_.getMCSubtargetInfo();
  return sti && sti->checkFeatures(std::string("+") + feature);
}

// The pointer an intrinsic operand address_of(buffer[index]) denotes, and the buffer's element type.
llvm::Value* CodeGenLLVM::intrinsic_operand(const Expr& address, const std::string& where, DataType want) {
  auto* call = address.as<CallNode>();
  auto* ld = call && call->name == "address_of" && call->args.size() == 1 ? call->args[0].as<LoadNode>() : nullptr;
  if (!ld) fail(where + ": expected address_of(buffer[index]), got '" + to_string(address) + "'");
  if (ld->buffer->dtype != want)
    fail(where + ": operand '" + ld->buffer->name + "' is " + ld->buffer->dtype.str() + ", the intrinsic takes " + want.str());
  if (ld->index.type().lanes() != 1) fail(where + ": operand '" + ld->buffer->name + "' has a vector address");
  return element_ptr(ld->buffer, memory_type_of(want), emit(ld->index));
}

bool CodeGenLLVM::emit_cpu_tensor_intrin(const TensorIntrinCall& c) {
  std::optional<int> lanes = cpu_dot2_i16_lanes(c.intrinsic);
  if (!lanes) return false;
  const int L = *lanes;
  const std::string where = "tensor intrinsic '" + c.intrinsic + "." + to_string(c.part) + "'";
  auto* acc_ty = llvm::FixedVectorType::get(i32_, unsigned(L));
  auto* pair_ty = llvm::FixedVectorType::get(llvm::Type::getInt16Ty(ctx_), unsigned(2 * L));
  const size_t want_args = c.part == TensorIntrinPart::Reset ? 1 : 3;
  if (c.addresses.size() != want_args) fail(where + ": " + std::to_string(c.addresses.size()) + " operands, expects " + std::to_string(want_args));
  llvm::Value* out = intrinsic_operand(c.addresses.back(), where, DataType::Int(32));
  if (c.part == TensorIntrinPart::Reset) {
    builder_.CreateAlignedStore(llvm::Constant::getNullValue(acc_ty), out, llvm::Align(4));
    return true;
  }
  llvm::Value* a_ptr = intrinsic_operand(c.addresses[0], where, DataType::Int(16));
  llvm::Value* b_ptr = intrinsic_operand(c.addresses[1], where, DataType::Int(16));
  // a's pair broadcast to every lane as one 32-bit value; b's L pairs in one vector.
  llvm::Value* a = builder_.CreateBitCast(builder_.CreateVectorSplat(unsigned(L), builder_.CreateAlignedLoad(i32_, a_ptr, llvm::Align(2))), pair_ty);
  llvm::Value* b = builder_.CreateAlignedLoad(pair_ty, b_ptr, llvm::Align(2));
  llvm::Value* acc = c.part == TensorIntrinPart::Update ? static_cast<llvm::Value*>(builder_.CreateAlignedLoad(acc_ty, out, llvm::Align(4)))
                                                        : llvm::Constant::getNullValue(acc_ty);
  const bool x86 = tm_.getTargetTriple().isX86();
  llvm::Value* result = nullptr;
  // VNNI: the multiply, the pairwise add and the accumulation in one instruction.
  if (x86 && ((L == 16 && has_feature("avx512vnni")) || (L == 8 && ((has_feature("avx512vnni") && has_feature("avx512vl")) || has_feature("avxvnni"))) ||
              (L == 4 && has_feature("avx512vnni") && has_feature("avx512vl")))) {
    auto id = L == 16 ? llvm::Intrinsic::x86_avx512_vpdpwssd_512 : L == 8 ? llvm::Intrinsic::x86_avx512_vpdpwssd_256 : llvm::Intrinsic::x86_avx512_vpdpwssd_128;
    llvm::Value* ai = builder_.CreateBitCast(a, acc_ty), *bi = builder_.CreateBitCast(b, acc_ty);
    result = builder_.CreateCall(intrinsic(id, {}), {acc, ai, bi});
  } else {
    llvm::Value* dot = nullptr;
    if (x86 && L == 16 && has_feature("avx512bw")) dot = builder_.CreateCall(intrinsic(llvm::Intrinsic::x86_avx512_pmaddw_d_512, {}), {a, b});
    else if (x86 && L == 8 && has_feature("avx2")) dot = builder_.CreateCall(intrinsic(llvm::Intrinsic::x86_avx2_pmadd_wd, {}), {a, b});
    else if (x86 && L == 4 && has_feature("sse2")) dot = builder_.CreateCall(intrinsic(llvm::Intrinsic::x86_sse2_pmadd_wd, {}), {a, b});
    else {
      // Widen, multiply, add each even lane to the odd one after it.
      auto* wide_ty = llvm::FixedVectorType::get(i32_, unsigned(2 * L));
      llvm::Value* p = builder_.CreateMul(builder_.CreateSExt(a, wide_ty), builder_.CreateSExt(b, wide_ty));
      std::vector<int> even, odd;
      for (int l = 0; l < L; ++l) even.push_back(2 * l), odd.push_back(2 * l + 1);
      dot = builder_.CreateAdd(builder_.CreateShuffleVector(p, even), builder_.CreateShuffleVector(p, odd));
    }
    result = builder_.CreateAdd(acc, dot);
  }
  builder_.CreateAlignedStore(result, out, llvm::Align(4));
  return true;
}

}  // namespace loom::codegen::llvm_backend
