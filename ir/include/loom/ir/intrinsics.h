// Typed builders and readers for the intrinsic calls that lowering hands to backends, so no pass or
// code generator decodes argument positions or name prefixes itself:
//   dma_copy(dst, src, pad_value, ndim, {extent, dst_stride, src_stride, pad_before, pad_after} x ndim)
//     a copy between two buffers (inject_dma_copy), outermost dimension first, strides in elements,
//     src the address of the first element inside the padding box;
//   prefetch(address_of(buffer[index]))
//     a hint that the cache line holding buffer[index] will be read soon (prefetch_ahead);
//   "<intrinsic>.<part>"(addresses...)
//     one part (full / reset / update) of a declared tensor intrinsic (tensorize), with the
//     addresses of its inputs (not for reset) and then its output.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/expr.h"

namespace loom::ir {

inline constexpr const char* kDmaCopy = "dma_copy";
inline constexpr const char* kAccelGemm = "accel.gemm";  // the accelerator's GEMM block (ops/accel_schedules.h)

// The CPU's pairwise integer dot product (ops::cpu_dot2_i16_intrin), "cpu.dot2_i16x<L>": for
// l < L, out[l] (+)= int32(a[0]) * int32(b[l][0]) + int32(a[1]) * int32(b[l][1]) with int16
// a[2], b[L][2] and int32 out[L], exactly (no saturation). The LLVM backend emits pmaddwd
// (vpdpwssd with VNNI) on x86 and widening multiplies elsewhere. The addresses are those of
// compact blocks (a's group, b's L groups one after another, out's L lanes): the operator's
// packing lays them out so (ops/gemm_int8.h).
inline constexpr const char* kCpuDot2I16 = "cpu.dot2_i16x";
std::string cpu_dot2_i16_name(int lanes);
// L of a "cpu.dot2_i16x<L>" intrinsic name; nullopt for other names.
std::optional<int> cpu_dot2_i16_lanes(const std::string& intrinsic);

// The CPU's byte dot product (ops::cpu_dot4_u8s7_intrin), "cpu.dot4_u8s7x<L>": for l < L,
// out[l] (+)= sum over j < 4 of int32(a[j]) * int32(b[l][j]) with uint8 a[4], int8 b[L][4], int32
// out[L]. Exact on VNNI targets (vpdpbusd) and in the generic form for any b; without VNNI, x86
// multiplies with vpmaddubsw, whose int16 pair sums a0 b0 + a1 b1 saturate beyond 2^15 - 1: exact
// when each pair of b satisfies |b[l][0]| + |b[l][1]| <= 128 and |b[l][2]| + |b[l][3]| <= 128
// ("7-bit" weights, ops::int8_weights_fit_bytes4) or when every a <= 127 (inputs known to be
// non-negative int8, ops::conv2d_nchwc's byte groups): the operator using it must guarantee one.
inline constexpr const char* kCpuDot4U8S7 = "cpu.dot4_u8s7x";
std::string cpu_dot4_u8s7_name(int lanes);
std::optional<int> cpu_dot4_u8s7_lanes(const std::string& intrinsic);

// shift_right(x, s): an int32 x shifted arithmetically right by the int32 s, or left by -s when s
// is negative, the amount saturating at 31 either way (left shifts wrap) -- the accelerator ALU's
// SHR, whose amount may come from a second accumulator entry (a per-channel requantization). The
// interpreter and the LLVM backend compute it too.
inline constexpr const char* kShiftRight = "shift_right";
Expr make_shift_right(Expr x, Expr amount);
// address_of(element): the address of one element (a load; a tensor read before storage
// flattening), the operand form of the intrinsics below and of tensor intrinsics.
inline constexpr const char* kAddressOf = "address_of";
Expr make_address_of(Expr element);
// The load an address_of call names; nullptr for anything else.
const LoadNode* as_address_of(const Expr& address);

// A hint to bring the cache line of buffer[index] into the cache (schedule pass prefetch_ahead,
// CPU lowering): the LLVM backend emits llvm.prefetch (a read, kept in the L2: locality 2); the
// interpreter ignores it. The address may lie past the buffer's end (prefetches never fault).
inline constexpr const char* kPrefetch = "prefetch";
Expr make_prefetch(const Buffer& buffer, Expr index);
// The element a prefetch call names (a scalar load); nullptr for other calls, InternalError for a
// malformed prefetch.
const LoadNode* as_prefetch(const CallNode* call);

struct DmaDim {
  Expr extent, dst_stride, src_stride, pad_before, pad_after;
};
struct DmaCopy {
  Expr dst, src, pad_value;
  std::vector<DmaDim> dims;  // outermost first
};
Expr make_dma_copy(const DmaCopy& copy);
// The copy a call describes; nullopt for other calls. InternalError for a malformed dma_copy.
std::optional<DmaCopy> as_dma_copy(const CallNode* call);

// Which part of a reduction a tensor-intrinsic call performs.
enum class TensorIntrinPart : uint8_t { Full, Reset, Update };
const char* to_string(TensorIntrinPart p);

struct TensorIntrinCall {
  std::string intrinsic;  // the declared name, e.g. "accel.gemm"
  TensorIntrinPart part = TensorIntrinPart::Full;
  std::vector<Expr> addresses;  // inputs (none for Reset), then the output
};
Expr make_tensor_intrin_call(const TensorIntrinCall& call);
// The tensor-intrinsic call a call is; nullopt for calls that are not "<name>.<full|reset|update>"
// with at least one address.
std::optional<TensorIntrinCall> as_tensor_intrin_call(const CallNode* call);

}  // namespace loom::ir
