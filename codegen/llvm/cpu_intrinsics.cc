// Tensor intrinsics of the CPU (ir/intrinsics.h): the calls tensorize leaves for a CPU operation,
// emitted as the target's instructions.
// "cpu.dot2_i16x<L>": L int32 accumulators, each plus the dot product of a broadcast int16 pair
// with its own int16 pair: x86's pmaddwd (one instruction for L = 4/8/16 with SSE2/AVX2/
// AVX-512BW), fused with the add into vpdpwssd on VNNI targets; other targets get the widening
// multiply and pairwise add, which their backends select.
// "cpu.dot4_u8s7x<L>": the same with a broadcast group of 4 uint8 and L groups of 4 int8:
// vpdpbusd with VNNI; vpmaddubsw + pmaddwd by ones on AVX2/AVX-512BW (exact for the 7-bit weight
// pairs the intrinsic's contract demands); widening multiplies elsewhere.
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
  const LoadNode* ld = as_address_of(address);
  if (!ld) fail(where + ": expected address_of(buffer[index]), got '" + to_string(address) + "'");
  if (ld->buffer->dtype != want)
    fail(where + ": operand '" + ld->buffer->name + "' is " + ld->buffer->dtype.str() + ", the intrinsic takes " +
         want.str());
  if (ld->index.type().lanes() != 1) fail(where + ": operand '" + ld->buffer->name + "' has a vector address");
  return element_ptr(ld->buffer, memory_type_of(want), emit(ld->index));
}

bool CodeGenLLVM::has_vnni(int lanes) const {
  if (!tm_.getTargetTriple().isX86()) return false;
  if (lanes == 16) return has_feature("avx512vnni");
  return (lanes == 8 || lanes == 4) &&
         ((has_feature("avx512vnni") && has_feature("avx512vl")) || (lanes == 8 && has_feature("avxvnni")));
}

// pmaddwd for the lanes where x86 has it (SSE2 / AVX2 / AVX-512BW), else nullptr.
llvm::Value* CodeGenLLVM::emit_pmaddwd(llvm::Value* a, llvm::Value* b, int lanes) {
  if (!tm_.getTargetTriple().isX86()) return nullptr;
  if (lanes == 16 && has_feature("avx512bw"))
    return builder_.CreateCall(intrinsic(llvm::Intrinsic::x86_avx512_pmaddw_d_512, {}), {a, b});
  if (lanes == 8 && has_feature("avx2"))
    return builder_.CreateCall(intrinsic(llvm::Intrinsic::x86_avx2_pmadd_wd, {}), {a, b});
  if (lanes == 4 && has_feature("sse2"))
    return builder_.CreateCall(intrinsic(llvm::Intrinsic::x86_sse2_pmadd_wd, {}), {a, b});
  return nullptr;
}

// Sum of each group of `group` neighbouring lanes of the products of a and b (widened to int32 as
// their signedness says): the generic form every backend can select.
llvm::Value* CodeGenLLVM::emit_grouped_dot(llvm::Value* a, bool a_unsigned, llvm::Value* b, int lanes, int group) {
  auto* wide_ty = llvm::FixedVectorType::get(i32_, unsigned(group * lanes));
  llvm::Value* p = builder_.CreateMul(a_unsigned ? builder_.CreateZExt(a, wide_ty) : builder_.CreateSExt(a, wide_ty),
                                      builder_.CreateSExt(b, wide_ty));
  llvm::Value* sum = nullptr;
  for (int j = 0; j < group; ++j) {
    std::vector<int> idx;
    for (int l = 0; l < lanes; ++l) idx.push_back(group * l + j);
    llvm::Value* part = builder_.CreateShuffleVector(p, idx);
    sum = sum ? builder_.CreateAdd(sum, part) : part;
  }
  return sum;
}

bool CodeGenLLVM::emit_cpu_tensor_intrin(const TensorIntrinCall& c) {
  std::optional<int> pairs = cpu_dot2_i16_lanes(c.intrinsic), quads = cpu_dot4_u8s7_lanes(c.intrinsic);
  if (!pairs && !quads) return false;
  const int L = pairs ? *pairs : *quads, group = pairs ? 2 : 4;
  const DataType a_type = pairs ? DataType::Int(16) : DataType::UInt(8),
                 b_type = pairs ? DataType::Int(16) : DataType::Int(8);
  const std::string where = "tensor intrinsic '" + c.intrinsic + "." + to_string(c.part) + "'";
  auto* acc_ty = llvm::FixedVectorType::get(i32_, unsigned(L));
  // a's group broadcast to every lane as one 32-bit value; b's L groups in one vector.
  auto* group_ty = llvm::FixedVectorType::get(pairs ? llvm::Type::getInt16Ty(ctx_) : i8_, unsigned(group * L));
  const size_t want_args = c.part == TensorIntrinPart::Reset ? 1 : 3;
  if (c.addresses.size() != want_args)
    fail(where + ": " + std::to_string(c.addresses.size()) + " operands, expects " + std::to_string(want_args));
  llvm::Value* out = intrinsic_operand(c.addresses.back(), where, DataType::Int(32));
  if (c.part == TensorIntrinPart::Reset) {
    builder_.CreateAlignedStore(llvm::Constant::getNullValue(acc_ty), out, llvm::Align(4));
    return true;
  }
  llvm::Value* a_ptr = intrinsic_operand(c.addresses[0], where, a_type);
  llvm::Value* b_ptr = intrinsic_operand(c.addresses[1], where, b_type);
  llvm::Value* a = builder_.CreateBitCast(
      builder_.CreateVectorSplat(unsigned(L), builder_.CreateAlignedLoad(i32_, a_ptr, llvm::Align(1))), group_ty);
  llvm::Value* b = builder_.CreateAlignedLoad(group_ty, b_ptr, llvm::Align(1));
  llvm::Value* acc = c.part == TensorIntrinPart::Update
                         ? static_cast<llvm::Value*>(builder_.CreateAlignedLoad(acc_ty, out, llvm::Align(4)))
                         : llvm::Constant::getNullValue(acc_ty);
  llvm::Value* result = nullptr;
  if (has_vnni(L)) {
    // The multiply, the group sum and the accumulation in one instruction.
    using namespace llvm::Intrinsic;
    ID id = pairs ? (L == 16  ? x86_avx512_vpdpwssd_512
                     : L == 8 ? x86_avx512_vpdpwssd_256
                              : x86_avx512_vpdpwssd_128)
                  : (L == 16  ? x86_avx512_vpdpbusd_512
                     : L == 8 ? x86_avx512_vpdpbusd_256
                              : x86_avx512_vpdpbusd_128);
    result = builder_.CreateCall(intrinsic(id, {}),
                                 {acc, builder_.CreateBitCast(a, acc_ty), builder_.CreateBitCast(b, acc_ty)});
  } else {
    llvm::Value* dot = nullptr;
    if (pairs) {
      dot = emit_pmaddwd(a, b, L);
    } else if (tm_.getTargetTriple().isX86() &&
               ((L == 16 && has_feature("avx512bw")) || (L == 8 && has_feature("avx2")))) {
      // uint8 x int8 pairs summed into int16 (saturating: exact for the contract's 7-bit pairs),
      // then the int16 pairs summed into int32 by a multiply with ones.
      auto id = L == 16 ? llvm::Intrinsic::x86_avx512_pmaddubs_w_512 : llvm::Intrinsic::x86_avx2_pmadd_ub_sw;
      llvm::Value* pair_sums = builder_.CreateCall(intrinsic(id, {}), {a, b});
      auto* i16x = llvm::FixedVectorType::get(llvm::Type::getInt16Ty(ctx_), unsigned(2 * L));
      dot = emit_pmaddwd(pair_sums, llvm::ConstantInt::get(i16x, 1), L);
    }
    if (!dot) dot = emit_grouped_dot(a, !pairs, b, L, group);
    result = builder_.CreateAdd(acc, dot);
  }
  builder_.CreateAlignedStore(result, out, llvm::Align(4));
  return true;
}

}  // namespace loom::codegen::llvm_backend
