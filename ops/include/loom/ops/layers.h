// Operators of whole models (the graph layer's operator set) as tensor expressions: general
// conv2d (groups, dilation, asymmetric padding, pre-packed weights), dense, batched matmul,
// numpy-broadcasting element-wise ops, pooling, softmax over any axis, and data movement
// (reshape, transpose, concat, pad, nearest resize). Shapes are static but for the operators
// that take symbolic extents (docs/dynamic_shapes.md: element-wise, reshape, transpose, slice,
// dense, batched matmul, softmax, reductions). Operators with several stages tag their main
// stage ("conv2d", "dense", "pool", ...) for the schedules.
#pragma once
#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "loom/ir/tensor.h"
#include "loom/ops/conv_shape.h"
#include "loom/runtime/dim_expr.h"
#include "loom/runtime/ndarray.h"

namespace loom::ops {

using ir::Expr;
using ir::Tensor;
using Shape = std::vector<int64_t>;
using loom::shape_str;

Shape shape_of(const Tensor& t);  // constant shape; ShapeError naming the tensor otherwise
std::vector<Expr> shape_exprs(const Shape& s);

// Symbolic extents. While a ShapeVarMaxima scope is alive on this thread (graph::build sets one
// per kernel), max_shape_of gives a tensor's shape with every shape variable at its maximum:
// what an operator that takes symbolic extents uses for decisions of structure (which axes
// broadcast, which axes a slice cuts), never for extents or reduction axes, which come from the
// tensor's own shape. ShapeError naming the tensor outside a scope or for a variable it lacks.
// The scope also holds the kernel's one ir::Var per shape variable (shape_var_extent).
class ShapeVarMaxima {
 public:
  explicit ShapeVarMaxima(std::map<std::string, int64_t> maxima);
  ~ShapeVarMaxima();
  ShapeVarMaxima(const ShapeVarMaxima&) = delete;
  ShapeVarMaxima& operator=(const ShapeVarMaxima&) = delete;
  // The kernel's variable of that name (made on first use).
  ir::Var var(const std::string& name) const { return vars_.try_emplace(name, ir::Var(name)).first->second; }

 private:
  std::map<std::string, int64_t> maxima_;
  mutable std::map<std::string, ir::Var> vars_;
  const ShapeVarMaxima* outer_;
  friend Shape max_shape_of(const Tensor& t);
};
Shape max_shape_of(const Tensor& t);
bool has_symbolic_extent(const Tensor& t);
// Whether two extents are the same dimension: equal constants, or the same affine form over
// shape variables.
bool same_extent(const Expr& a, const Expr& b);
// A dimension as an extent over the scope's shape variables (ShapeError outside a scope).
Expr shape_var_extent(const runtime::DimExpr& d);
// The extents of a shape whose symbolic dimensions are affine forms over the shape variables
// (a node's output type): the variables the tensors' extents use, else the scope's.
std::vector<Expr> extents_over(const runtime::ShapeExpr& dims, const std::vector<Tensor>& tensors);

// a * b, in int32 when the operands are narrower integers: conv2d, dense and their blocked
// forms take int8 inputs (with int32 bias) and accumulate and return int32.
Expr widening_mul(Expr a, Expr b);

struct Conv2dParams {
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right (ONNX order)
  std::array<int64_t, 2> dilations{1, 1};
  int64_t groups = 1;
  // 0: weights are OIHW. b > 0: weights are pre-packed as [O/b, C/groups, kh, kw, b] (output
  // channels innermost, so vectors over output channels are contiguous).
  int64_t oc_block = 0;
  // Interleaved groups (pass interleave_narrow_groups): group g holds channels g, g + groups,
  // g + 2 groups, ... instead of g Cg .. g Cg + Cg - 1; output channel f reads input channels
  // f % groups + j groups. Blocked, weights [O/b, Cg, kh, kw, b].
  bool interleaved_groups = false;
  // The byte-group int8 form (G = 4) reads a signed int8 input plus 128 as uint8 (exact with VNNI's
  // vpdpbusd; the padding, added before, reads as 128 too): the accumulator is the int8 one plus
  // 128 x the sum of the output channel's weights, which the caller takes out of the bias.
  bool input_offset = false;
};
// Output shape of conv2d(X, W) for an NCHW input and OIHW weights (before packing).
Shape conv2d_shape(const Shape& x, const Shape& w_oihw, const Conv2dParams& p);
// NCHW convolution; zero padding is a separate stage tagged "pad". `bias` (per output channel)
// may be undefined; it is added by a stage after the reduction (tag "conv2d" is the reduction).
Tensor conv2d(const Tensor& X, const Tensor& W, const Tensor& bias, const Conv2dParams& p, const std::string& name);
// Packs OIHW weights as conv2d expects them for oc_block = b (a constant transformation).
Shape packed_conv_weight_shape(const Shape& oihw, int64_t b);

// conv2d on channel-blocked activations (TVM's NCHWc): X is [N, C/ib, H, W, ib], Y is
// [N, O/ob, OH, OW, ob] with ob = p.oc_block, so vectors over channels are contiguous in memory
// everywhere. Weights: [O/ob, C/ib, kh, kw, ib, ob] for groups = 1; for depthwise convolutions
// (groups = C = O, ib = ob) [C/ob, kh, kw, ob]; for interleaved groups (p.interleaved_groups, C =
// O, ib = ob dividing the groups) [C/b, Cg, kh, kw, b], output block ob reading the same lane of
// input blocks j (groups / b) + ob % (groups / b). `bias` is per output channel, [O].
// int8 data with weights grouped along input channels, [O/ob, C/ib, kh, kw, ib/G, ob, G]
// (pack_conv_weights_int8_groups), is one of the grouped int8 forms, where each group of G input
// channels meets the output block's weight groups in one dot-product instruction; the padded
// input is converted once (a stage tagged "widen"):
//  - G = 2, int16 weights: the input widened to int16; ops::cpu_dot2_i16_intrin (pmaddwd,
//    vpdpwssd). Exact for any int8 values.
//  - G = 4, int8 weights: the input read as uint8; ops::cpu_dot4_u8s7_intrin (vpmaddubsw +
//    pmaddwd, vpdpbusd). The data must lie in [0, 127] (e.g. after a ReLU), which also keeps
//    vpmaddubsw's int16 pair sums exact for any int8 weights (|2 x 127 x -128| < 2^15).
Shape conv2d_nchwc_shape(const Shape& x, const Shape& w, const Conv2dParams& p);
Tensor conv2d_nchwc(const Tensor& X, const Tensor& W, const Tensor& bias, const Conv2dParams& p,
                    const std::string& name);
// Winograd convolution F(m x m, 3 x 3), m = 2 or 4, for 3x3 float convolutions with stride and
// dilation 1 on NCHWc activations: each m x m output tile costs (m + 2)^2 multiply-adds per input
// and output channel pair instead of 9 m^2 (2.25x fewer for m = 2, 4x for m = 4), plus input and
// output transforms linear in the channels. Stages (tags): the padded input ("pad"), B^T d and
// d B ("winograd_transform", V: [alpha^2, N, C/ib, tiles high, tiles wide, ib]), alpha^2 products
// over the input channels ("winograd_gemm"), A^T M and M A ("winograd_transform", then the output,
// "winograd_output", with the bias). U: the weights transformed once, G g G^T, as
// [alpha^2, O/ob, C/ib, ib, ob] (pack_winograd_weights). Grouped convolutions whose groups are
// whole blocks (ib = ob; ResNeXt's narrow groups after alter_layout regroups them into blocks):
// p.groups, U [alpha^2, O/ob, C/groups/ib, ib, ob], each output block reading its group's.
// Lavin and Gray's matrices: Y = A^T [(G g G^T) .* (B^T d B)] A for an m x m output tile, an
// alpha x alpha input tile d (alpha = m + 2) and a 3 x 3 kernel g. ShapeError for other m.
struct WinogradMatrices {
  int m, alpha;
  std::vector<std::vector<double>> bt, g, at;  // alpha x alpha, alpha x 3, m x alpha
};
const WinogradMatrices& winograd_matrices(int m);
int winograd_alpha(int m);
Shape conv2d_winograd_shape(const Shape& x, const Shape& u, const Conv2dParams& p, int m);
NDArray pack_winograd_weights(const NDArray& oihw, int m, int64_t ib, int64_t ob);
Tensor conv2d_winograd_nchwc(const Tensor& X, const Tensor& U, const Tensor& bias, const Conv2dParams& p, int m,
                             const std::string& name);
// OIHW int8 weights as the grouped form G (2 or 4) reads them, [O/ob, C/ib, kh, kw, ib/G, ob, G]
// (int16 for G = 2, int8 for G = 4; G dividing ib, ob and ib dividing O and C).
NDArray pack_conv_weights_int8_groups(const NDArray& oihw, int64_t ib, int64_t ob, int group);
// G of grouped-form weights (rank 7, last dimension 2 or 4), else 0.
int int8_conv_weight_group(const Shape& w);
// NCHW <-> NCHW{b}c.
Tensor to_nchwc(const Tensor& X, int64_t b, const std::string& name);
Tensor from_nchwc(const Tensor& X, const std::string& name);

// Y[m, n] = sum_k X[m, k] * W[n, k] (+ bias[n]). With n_block > 0, W is pre-packed as
// [N/b, K, b].
Tensor dense(const Tensor& X, const Tensor& W, const Tensor& bias, int64_t n_block, const std::string& name);
// Batched matrix product with numpy broadcasting of the batch dimensions (ONNX MatMul); 1-D
// operands are promoted as numpy does.
Shape matmul_shape(const Shape& a, const Shape& b);
Tensor batch_matmul(const Tensor& A, const Tensor& B, const std::string& name);

// Numpy broadcasting of two shapes (ShapeError naming both if incompatible).
Shape broadcast_shape(const Shape& a, const Shape& b);
enum class BinaryOp { Add, Sub, Mul, Div, Max, Min, Pow };  // Pow: float operands
Tensor binary(BinaryOp op, const Tensor& A, const Tensor& B, const std::string& name);
// f of the operands' elements at each index of their numpy broadcast (any number of operands,
// any element types; tag "elemwise" when no operand is broadcast, else "broadcast").
Tensor broadcast_map(const std::vector<Tensor>& operands, const std::function<Expr(const std::vector<Expr>&)>& f,
                     const std::string& name);
// Element-wise map of one tensor (tag "elemwise").
Tensor unary(const Tensor& X, const std::function<Expr(Expr)>& f, const std::string& name);
Expr sigmoid(Expr x);
// atan of a float (Cephes' single-precision range reduction and polynomial: float32 error below
// 2 ulp, so about 1e-7 relative for float64 too): selects and arithmetic only, so it vectorizes
// where libm's atan would not.
Expr atan(Expr x);

struct Pool2dParams {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  std::array<int64_t, 2> dilations{1, 1};
  bool ceil_mode = false;
  bool count_include_pad = false;  // average pooling only
};
Shape pool2d_shape(const Shape& x, const Pool2dParams& p);
Tensor max_pool2d(const Tensor& X, const Pool2dParams& p, const std::string& name);
Tensor avg_pool2d(const Tensor& X, const Pool2dParams& p, const std::string& name);
Tensor global_avg_pool2d(const Tensor& X, const std::string& name);  // NCHW -> NC11

// Softmax along `axis` (max, exp, sum, divide stages).
Tensor softmax(const Tensor& X, int axis, const std::string& name);

// Reductions over a set of axes (ONNX's Reduce* operators).
enum class ReduceKind : uint8_t { Sum, Mean, Max, Min, SumSquare, L1, L2, LogSum, LogSumExp, Prod };
const char* to_string(ReduceKind kind);  // "sum", "mean", "max", ... (the graph operator is reduce_<name>)
// `axes`: distinct, each in [-rank, rank); empty: every axis. Reduced axes stay as size-1
// dimensions with keepdims, else they are dropped (a full reduction without keepdims is rank 0).
// ShapeError naming the axis otherwise.
Shape reduce_shape(const Shape& x, const std::vector<int64_t>& axes, bool keepdims);
// Mean, L2, LogSum and LogSumExp (reduce_needs_float) need floating-point data (TypeError
// otherwise); LogSumExp subtracts the maximum first, so large inputs do not overflow.
bool reduce_needs_float(ReduceKind kind);
Tensor reduce(const Tensor& X, ReduceKind kind, const std::vector<int64_t>& axes, bool keepdims,
              const std::string& name);

// The int64 index of the maximum (or minimum) along `axis`: the first such, or the last with
// `last`; the axis stays as size 1 with keepdims.
Tensor arg_reduce(const Tensor& X, bool max, int64_t axis, bool keepdims, bool last, const std::string& name);

// ---- Data movement on run-time data (layers_data.cc) ----
// Element type conversion: floats to integers round towards zero, anything to bool is != 0.
Tensor cast(const Tensor& X, DataType to, const std::string& name);
// A strided slice, per input dimension: the first element, the step (negative: backwards) and
// the count; slice_axes computes it from ONNX's starts/ends/axes/steps with ONNX's clamping.
struct SliceAxes {
  std::vector<int64_t> begin, step, count;
};
SliceAxes slice_axes(const Shape& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                     const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);
Tensor strided_slice(const Tensor& X, const SliceAxes& s, const std::string& name);
// Where the first indices or the extents are symbolic (a slice from a symbolic axis' end).
Tensor strided_slice(const Tensor& X, const std::vector<Expr>& begin, const std::vector<int64_t>& step,
                     const std::vector<Expr>& extents, const std::string& name);
// X indexed along `axis` by every element of I (numpy's take); negative indices count from the
// end, indices out of range are clamped (a kernel cannot raise, and must not read outside X).
Tensor gather(const Tensor& X, const Tensor& I, int64_t axis, const std::string& name);
// y[i] = X[i with axis replaced by I[i]] (ONNX GatherElements; same index rules as gather).
Tensor gather_elements(const Tensor& X, const Tensor& I, int64_t axis, const std::string& name);
// X broadcast (numpy rules) with `shape`.
Tensor expand(const Tensor& X, const Shape& shape, const std::string& name);
// To the output's extents (symbolic where the node's dims are; the caller's type inference broadcast them).
Tensor expand(const Tensor& X, const std::vector<Expr>& out, const std::string& name);
Tensor tile(const Tensor& X, const std::vector<int64_t>& repeats, const std::string& name);
// The upper (column - row >= k) or lower (<= k) triangle of the last two dimensions, zeros elsewhere.
Tensor trilu(const Tensor& X, int64_t k, bool upper, const std::string& name);
// Running sums along `axis` (exclusive: without the element itself; reverse: from the end).
Tensor cumsum(const Tensor& X, int64_t axis, bool exclusive, bool reverse, const std::string& name);
// values[1] where the index equals the position along the new axis `axis` (of size depth),
// values[0] elsewhere; `values` is [off, on].
Tensor one_hot(const Tensor& I, const Tensor& values, int64_t depth, int64_t axis, const std::string& name);
// Separable resampling along `axis`: y[.., o, ..] = sum_t weight[t, o] * X[.., index[t, o], ..]
// (+ bias[o] if defined: the value outside a crop); index and weight are [taps, out], so that a
// vector of outputs along the innermost axis reads each tap's indices and weights contiguously.
Tensor resample_axis(const Tensor& X, const Tensor& index, const Tensor& weight, const Tensor& bias, int64_t axis,
                     const std::string& name);
// The k largest (or smallest) elements along `axis`, in order, ties by position; their values
// or (indices) their int64 positions. Sorting by ranks: O(n^2) per row, for modest axes.
Tensor top_k(const Tensor& X, int64_t k, int64_t axis, bool largest, bool indices, const std::string& name);
// The index of an operand of shape `s` broadcast (numpy rules) to an output indexed by `v`.
std::vector<Expr> broadcast_index(const Shape& s, const std::vector<ir::Var>& v);

// ---- Scatters, N-d gathers and Einstein sums (layers_scatter.cc) ----
// How a scatter meets the element it writes: None replaces it (where several updates land on one
// element, ONNX leaves the result undefined; here the last in row-major order wins), the others
// combine the element with every update that lands on it.
enum class ScatterReduction : uint8_t { None, Add, Mul, Max, Min };
// "none", "add", "mul", "max", "min" (ModelError naming the value otherwise), and back.
ScatterReduction scatter_reduction(const std::string& s);
const char* to_string(ScatterReduction r);
// Scatter indices: negative values count from the end; a value out of range updates nothing.
// ONNX ScatterElements: a copy of X where, for every position j of I (and of U, of I's shape),
// the element at j with `axis` replaced by I[j] meets U[j]. X, I and U have one rank and I's
// extents are at most X's. Returns the axis in [0, rank); ShapeError naming what disagrees.
size_t scatter_elements_check(const Shape& x, const Shape& i, const Shape& u, int64_t axis);
Tensor scatter_elements(const Tensor& X, const Tensor& I, const Tensor& U, int64_t axis, ScatterReduction r,
                        const std::string& name);
// ONNX ScatterND: I is [..., k] with 1 <= k <= rank(X), U is I's shape without its last
// dimension followed by X's shape after its first k; a copy of X where the slice X[I[p]] meets
// U[p] for every position p. ShapeError naming what disagrees.
void scatter_nd_check(const Shape& x, const Shape& i, const Shape& u);
Tensor scatter_nd(const Tensor& X, const Tensor& I, const Tensor& U, ScatterReduction r, const std::string& name);
// ONNX GatherND: I is [..., k]; the first batch_dims dimensions of X and I agree, and
// y[p, rest] = X[p's batch part, I[p], rest]. Indices count from the end when negative and are
// clamped into range (as gather's). The shape is I's without its last dimension followed by X's
// after its first batch_dims + k; a rank-0 result is [1] (graph tensors have rank 1 or more).
Shape gather_nd_shape(const Shape& x, const Shape& i, int64_t batch_dims);
Tensor gather_nd(const Tensor& X, const Tensor& I, int64_t batch_dims, const std::string& name);
// ONNX Einsum, numpy's einsum rules: "ij,jk->ik", the implicit form "ij,jk" (the output is the
// labels that occur once, in ASCII order, after any ellipsis dimensions), "..." standing for
// dimensions that broadcast like numpy's, labels repeated in one operand (diagonals) and
// dimensions of 1 that broadcast. Labels are letters; spaces are ignored. Each label has an id:
// 0-25 'A'-'Z', 26-51 'a'-'z', 52 + e the ellipsis' e-th dimension (of the widest ellipsis).
struct EinsumSpec {
  std::vector<std::vector<int>> inputs;  // each operand's dimensions as label ids
  std::vector<int> output;               // the result's dimensions as label ids
  std::vector<int> reduced;              // the labels summed over (in no output dimension), ascending
  std::vector<int64_t> extent;           // per label id (0 where a label does not occur)
};
// ModelError for an equation that does not parse, ShapeError where it does not fit the shapes.
EinsumSpec einsum_spec(const std::string& equation, const std::vector<Shape>& shapes);
// The result's shape: [1] for a full contraction (rank 0 in ONNX).
Shape einsum_shape(const EinsumSpec& s);
// sum over the reduced labels of the product of the operands (one reduction, none if no label
// is reduced); the operands have one element type.
Tensor einsum(const std::vector<Tensor>& operands, const std::string& equation, const std::string& name);

Tensor reshape(const Tensor& X, const Shape& shape, const std::string& name);
// To extents that may be symbolic (the caller knows they hold X's elements: a node's type).
Tensor reshape(const Tensor& X, const std::vector<Expr>& shape, const std::string& name);
Tensor transpose(const Tensor& X, const std::vector<int64_t>& perm, const std::string& name);
Tensor concat(const std::vector<Tensor>& inputs, int axis, const std::string& name);
enum class PadMode { Constant, Reflect, Edge };
// pads: begin of every dimension, then end of every dimension (ONNX order); non-negative.
Tensor pad(const Tensor& X, const std::vector<int64_t>& pads, PadMode mode, double value, const std::string& name);
// out[n, c, y, x] = X[n, c, ymap[y], xmap[x]] with int32 index maps (computed by the caller
// from the resize's coordinate mode, so any ONNX nearest mode is exact).
Tensor resize_nearest(const Tensor& X, const Tensor& ymap, const Tensor& xmap, const std::string& name);

// ---- int8 quantization with power-of-two scales (layers_quant.cc) ----
// A value v is represented by the integer q with v = q * 2^exponent. Rounding is half away from
// zero; shifts right round by adding half a step first, so every stage is exact integer
// arithmetic a GEMM-block accelerator's ALU reproduces bit for bit (add, arithmetic shift, clamp).
//
// float -> int8: clamp(round(x * 2^-exponent), lo, hi).
Tensor quantize(const Tensor& X, int exponent, int lo, int hi, const std::string& name);
// int -> float32: x * 2^exponent.
Tensor dequantize(const Tensor& X, int exponent, const std::string& name);
// int32 -> int8: clamp((x + 2^(shift-1)) >> shift, lo, hi) for shift > 0, clamp(x << -shift) for
// shift <= 0 (arithmetic shifts; relu is lo = 0). A left shift clamps x to
// int8 first so it cannot wrap; the rounding add wraps like the accelerator's int32 ALU.
Tensor requantize(const Tensor& X, int shift, int lo, int hi, const std::string& name);
// int32 sum of two same-shaped integer tensors brought to one exponent: (a << la) + (b << lb).
Tensor add_shifted(const Tensor& A, const Tensor& B, int la, int lb, const std::string& name);
// Per-channel requantization with fixed-point multipliers (per-channel weight scales, CPU):
// int32 -> int8, clamp((x * M[c] + 2^(shift-1)) >> shift) in 64-bit arithmetic. X is NC, NCHW or
// NCHWc (the channel of an NCHWc element is outer * block + inner); M is int32 [C].
Tensor requantize_channel(const Tensor& X, const Tensor& M, int shift, int lo, int hi, const std::string& name);
// Simulated quantization in float32: clamp(round(x * 2^-exponent), lo, hi) * 2^exponent.
Tensor fake_quantize(const Tensor& X, int exponent, int lo, int hi, const std::string& name);

}  // namespace loom::ops
