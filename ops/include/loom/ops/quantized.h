// int8 operators in the blocked layouts a GEMM-block accelerator consumes (VTA style), with
// requantization (arithmetic shift right + clamp + narrow to int8) and the layout transforms
// to and from plain NCHW / NC / OI layouts.
//
// Blocked layouts, for blocks (batch b, input channels bi, output channels bo):
//   activations NCHW   -> [N/b, C/bi, H, W, b, bi]
//   conv weights OIHW  -> [O/bo, I/bi, KH, KW, bo, bi]
//   dense input NC     -> [N/b, C/bi, b, bi]
//   dense weights OI   -> [O/bo, I/bi, bo, bi]
#pragma once
#include "loom/ops/nn.h"

namespace loom::ops {

struct Blocking {
  int batch = 1, block_in = 16, block_out = 16;
};

// The requantization of an int32 accumulator to int8: floor(acc / 2^shift), an arithmetic shift
// right (rounding_bias adds 2^(shift-1) to a bias to round half up), then clamped to
// [relu ? max(0, clip_lo) : clip_lo, clip_hi]. The shift must lie in [0, 31] and the clamp within
// [-128, 127] with clip_lo <= clip_hi (ALU immediates, and the result is int8): the operators
// below throw ShapeError naming the operator otherwise.
struct Requantize {
  int shift = 8;                      // arithmetic shift right of the int32 accumulator, 0..31
  bool relu = false;                  // clamp at 0 before the upper clamp
  int clip_lo = -128, clip_hi = 127;  // within [-128, 127]
};

Tensor pack_nchw(const Tensor& X, int b, int bi, const std::string& name = "packed");     // NCHW -> blocked
Tensor unpack_nchw(const Tensor& Xp, const std::string& name = "unpacked");               // blocked -> NCHW
Tensor pack_oihw(const Tensor& W, int bo, int bi, const std::string& name = "w_packed");  // OIHW -> blocked
Tensor pack_nc(const Tensor& X, int b, int bi, const std::string& name = "packed");
Tensor unpack_nc(const Tensor& Xp, const std::string& name = "unpacked");
Tensor pack_oi(const Tensor& W, int bo, int bi, const std::string& name = "w_packed");
// The same packs for shapes that are not whole blocks: dimension 0 is zero-padded to n_padded and
// dimension 1 to c_padded (multiples of b and bi); the unpacks crop back to n x c.
Tensor pack_padded(const Tensor& X, int b, int bi, int64_t n_padded, int64_t c_padded,
                   const std::string& name = "packed");
Tensor unpack_cropped(const Tensor& Xp, int64_t n, int64_t c, const std::string& name = "unpacked");

// Stages of a quantized layer: the int32 accumulation, the bias add (layers given a bias), then
// element-wise requantization stages (shift, clamps) in int32, then the narrowing to int8.
struct QuantizedStages {
  Tensor acc, biased, shr, clip_lo, clip_hi, out;
  Tensor shifts;  // the per-channel shift amounts shr reads, when it shifts per channel
  // Weights in passes (conv2d_int8_blocked_passes): the GEMM stage [N/b, P, C/bo, H, W, b, bo],
  // and the element-wise stages that combine its passes into acc (a shift, an add per pass).
  Tensor passes;
  std::vector<Tensor> combine;
};

// A bias is int32 per output channel in blocks, [C/bo, b, bo] (the same value for every batch
// lane), added to the accumulator before the shift. A model's round-to-nearest requantization,
// (x + 2^(s-1)) >> s, is this floor shift with 2^(s-1) folded into the bias.

// Blocked int8 conv2d (stride/padding in both dims), int32 accumulate, requantize to int8.
QuantizedStages conv2d_int8_blocked(const Tensor& data, const Tensor& kernel, int stride, int pad, const Requantize& rq,
                                    const std::string& name = "conv");
QuantizedStages conv2d_int8_blocked(const Tensor& data, const Tensor& kernel, const Tensor& bias, int stride, int pad,
                                    const Requantize& rq, const std::string& name = "conv");
// Blocked int8 dense layer, requantized to int8.
QuantizedStages dense_int8_blocked(const Tensor& data, const Tensor& weight, const Requantize& rq,
                                   const std::string& name = "dense");
QuantizedStages dense_int8_blocked(const Tensor& data, const Tensor& weight, const Tensor& bias, const Requantize& rq,
                                   const std::string& name = "dense");
// The same layers requantized per output channel: `shifts`, int32 blocked like the bias, holds
// each channel's right shift (rq.shift is unused), a per-channel power-of-two requantization; the
// accelerator's ALU shifts by the amounts of a second accumulator entry.
QuantizedStages conv2d_int8_blocked(const Tensor& data, const Tensor& kernel, const Tensor& bias, const Tensor& shifts,
                                    int stride, int pad, const Requantize& rq, const std::string& name = "conv");
QuantizedStages dense_int8_blocked(const Tensor& data, const Tensor& weight, const Tensor& bias, const Tensor& shifts,
                                   const Requantize& rq, const std::string& name = "dense");
// Weights wider than the multipliers as passes of narrower signed digits: kernel
// [O/bo, I/bi, P, KH, KW, bo, bi] holds P digits of each weight, w = sum_p d_p 2^(p digit_bits)
// (digits of 2 or 4 bits); each pass accumulates on its own, and the passes combine most
// significant first, c = (c << digit_bits) + pass p, before the bias and requantization (shifts
// may be undefined: one shift, rq.shift).
QuantizedStages conv2d_int8_blocked_passes(const Tensor& data, const Tensor& kernel, const Tensor& bias,
                                           const Tensor& shifts, int stride, int pad, int digit_bits,
                                           const Requantize& rq, const std::string& name = "conv");
// A bias with 2^(shift-1) added (saturating), so the floor shift rounds half up like a model's requantize.
std::vector<int32_t> rounding_bias(const std::vector<int32_t>& bias, int shift);
// Element-wise add of two int8 blocked tensors in int32 with requantization (residual connections).
QuantizedStages add_int8(const Tensor& a, const Tensor& b, const Requantize& rq, const std::string& name = "add");

// The same add in the form a GEMM-block accelerator runs: its ALU works on int32 accumulators,
// so each int8 operand is first widened into the accumulator by a GEMM with `eye`, an identity
// block [b, b] (block_in == block_out) given as an extra input (fill it with identity_block);
// the sum and the requantization are then ALU stages. Equal to add_int8 when eye is the identity.
// `eye` may instead be [2, b, b]: a's and b's blocks, the identity scaled by 2^lshift_a and
// 2^lshift_b (scaled_identity_blocks; shifts up to kMaxEyeShift), so that the widening GEMMs
// shift the operands and no ALU stage does.
struct AddWidenStages {
  Tensor widen_a, widen_b;    // int32 copies of a and b: sum_k a[..., k] * eye[c, k]
  std::vector<Tensor> scale;  // ALU stages a << lshift_a, b << lshift_b (those not zero)
  Tensor rounded;             // the sum + 2^(shift-1) (AddShifts::round), else undefined
  QuantizedStages q;          // q.acc = the sum, then the requantization stages
};
// A model's residual add (add_shifted + requantize): both operands brought to a common exponent
// by left shifts, and the requantization rounded half up, (x + 2^(s-1)) >> s.
struct AddShifts {
  int lshift_a = 0, lshift_b = 0;  // 0..14 (ALU multiply immediates)
  bool round = false;              // needs shift 1..15 (the ALU add immediate)
};
AddWidenStages add_int8_widening(const Tensor& a, const Tensor& b, const Tensor& eye, const Requantize& rq,
                                 const std::string& name = "add", const AddShifts& shifts = {});
// Row-major int8 identity matrix of `n` x `n`, the `eye` input of add_int8_widening.
std::vector<int8_t> identity_block(int n);
// The largest shift a scaled int8 identity holds (2^6; 2^7 is beyond int8).
constexpr int kMaxEyeShift = 6;
// Two `n` x `n` identities scaled by 2^lshift_a and 2^lshift_b, [2, n, n] row-major: the `eye`
// input of add_int8_widening that shifts the operands in the GEMMs.
std::vector<int8_t> scaled_identity_blocks(int n, int lshift_a, int lshift_b);

}  // namespace loom::ops
