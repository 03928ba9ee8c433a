// Graph passes, one per file under graph/src/passes/, run in the order listed in
// graph/src/pipeline.cc. Every pass takes the graph by reference and leaves it verified and typed.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/graph/graph.h"
#include "loom/graph/op_registry.h"

namespace loom::graph {

// Fills every node's output type; errors name the node and its operator.
void infer_types(Graph& g);
// A copy of a graph with shape variables with every variable at its value in `at`: static types
// (the operators' type functions there), attributes at their values there, no shape variables.
// ModelError naming the point where the graph does not type.
Graph graph_at(const Graph& g, const std::map<std::string, int64_t>& at);
// Graph::verify, then every typed operator node's type is the one its operator infers from its
// inputs' types and its attributes now (a pass that edited a node without re-inferring shows
// here). ModelError naming the node.
void verify_types(const Graph& g);
// Drops nodes the outputs do not depend on.
void eliminate_dead_nodes(Graph& g);
// Removes identities (pads of zero width too) and rewrites batch_norm for inference (TVM's SimplifyInference): folded
// into a preceding conv2d/dense whose weights are constants, otherwise a multiply and an add
// with per-channel constants.
void simplify_inference(Graph& g);
// Cuts the kernel rows and columns of a convolution with constant weights that read only zero
// padding at every output position (dilated convolutions over maps smaller than the dilation),
// shrinking its pads so that every output stays the same.
void prune_conv_taps(Graph& g);
// An average pool (avg_pool2d whose every output is its window's in-bounds values over their
// count, or global_avg_pool2d) of a 1x1, stride-1, unpadded float conv2d's output, the conv's only
// reader, becomes the conv of the pooled input where that does fewer operations (DenseNet's
// transitions: a quarter of the multiply-adds). The conv's affine map is the same at every pixel,
// so it commutes with an average, bias included.
void pool_before_pointwise_conv(Graph& g);
// A float matmul by a constant matrix becomes a dense layer over the rows of its left operand
// (reshaped to 2-D and back), taking a following bias add along the last axis as its bias.
void dense_from_matmul(Graph& g);
// Replaces operator nodes whose inputs are all constants by their values (up to `max_elements`
// per node; bigger ones stay operators, except transposes, which are folded natively whatever
// their size).
void fold_constants(Graph& g, int64_t max_elements = int64_t(1) << 22);
// `a` with its axes permuted: output axis d is input axis perm[d] (InternalError if perm is not a
// permutation of a's axes).
NDArray transpose_constant(const NDArray& a, const std::vector<int64_t>& perm);
// The value of operator node `id` of `g`, whose inputs are all constants (what fold_constants
// puts in its place; importers fold shape computations with it).
NDArray evaluate_constant_op(const Graph& g, int id);

// Winograd's least saving worth a call, in multiply-adds: each call pays the transforms' own
// parallel stages and its transformed weights (alpha^2 / 9 times the direct ones) whatever the
// saving. DenseNet-121's 128 -> 32 convs at 14x14 and 7x7 ran slower than direct, its 28x28 ones
// faster (docs/results.md has the measurements).
constexpr double kWinogradMinSavedMacs = 8e6;
struct LayoutOptions {
  int vector_lanes = 16;            // float32 lanes of the target's vectors
  bool blocked_activations = true;  // NCHWc activations around convolutions (else NCHW throughout)
  // int8 blocked convs: the largest group of input channels one dot product may take (ops/layers.h):
  // 4 byte groups where the input is known to be in [0, 127], else int16 pairs; 2 int16 pairs;
  // 0 widened int32 products.
  int int8_conv_group = 4;
  // Byte groups for signed int8 inputs too, on unpadded convs: the input plus 128 read as uint8,
  // 128 x the weights' sums taken out of the bias (ops::Conv2dParams::input_offset). Exact where
  // the target's dot products accumulate uint8 x int8 in int32 (VNNI: graph::build sets it from
  // TargetInfo::int8_dot); without them the pair sums could saturate.
  bool int8_input_offset = false;
  // 3x3 stride-1 float convs on NCHWc data as Winograd F(m x m, 3 x 3) where winograd_tile_for
  // says so (pass winograd_conv, after alter_layout), saving at least winograd_min_saved_macs
  // multiply-adds per call (0: wherever the tile rule allows, as tests of its mechanics want).
  bool winograd = true;
  double winograd_min_saved_macs = kWinogradMinSavedMacs;
};
// int8 dense layers (int8 weights, int32 accumulator read by one requantize or requantize_channel)
// over at least 16 rows, with N % 8 == 0 and K % 4 == 0: 1x1 int8 convolutions of the rows as one
// image row [1, K, 1, M], requantized there and laid back out as [M, N], so the blocked int8
// convolutions' dot products compute them (int8_dense_as_pointwise_conv.cc). Not in graphs with
// shape variables.
void int8_dense_as_pointwise_conv(Graph& g);
// Convs (one group, or depthwise; constant weights and bias; float, or int8 with an int32
// accumulator) whose output channels are no multiple of 8 compute zero-padded channels up to a
// multiple of `lanes` (at most twice as many; a depthwise conv's input padded with zero channels
// too; an int8 conv's sole requantization on the padded channels), then a slice keeps the real
// ones: so they can run channel-blocked (alter_layout).
void pad_conv_channels(Graph& g, int lanes);
// Float chains of padded convs keep their zero channels: relu(slice(x)) becomes slice(relu(x)),
// and a constant pad that restores sliced-off zero channels reads the unsliced value, where x is
// known zero past the slice: a conv whose constant weights and bias are zero there, a ReLU of one,
// or a constant pad (keep_padded_channels.cc).
void keep_padded_channels(Graph& g);
// Grouped float convs whose groups are narrower than `lanes` (ResNeXt's 4 and 8 channels), with G
// groups a multiple of `lanes`, between two ungrouped convs with constant weights (only one-input
// element-wise ops between, each value read once): channels are renumbered j G + g for g Cg + j
// in the first conv's outputs, the grouped conv and the second conv's inputs, and the grouped conv
// gets attribute interleaved_groups = 1 (group g: channels g, g + G, ...), which the blocked
// layout runs as lane-wise multiply-adds (interleave_narrow_groups.cc).
void interleave_narrow_groups(Graph& g, int lanes);
// Chooses the CPU layouts: channel-blocked NCHW{b}c activations around convolutions, with
// layout_transform nodes only where a consumer needs NCHW (adjacent opposite transforms cancel),
// and constant weights packed once to match (see alter_layout.cc).
void alter_layout(Graph& g, const LayoutOptions& options);
// Winograd's output tile for a 3x3 stride-1 conv with an out_h x out_w output: of F(4x4, 3x3)
// and F(2x2, 3x3), the one that saves the most multiply-adds (9 out_h out_w against tiles x
// alpha^2, the partial tiles at the edges counted whole), if it saves at least 1.5x over at least
// 9 tiles; else 0, direct. The transformed weights (alpha^2 / 9 times the direct ones) are read
// once per call: a map of few tiles does not repay them.
// With channel_products (batch x input channels per group x output channels), also 0 where the
// multiply-adds saved fall below min_saved_macs (kWinogradMinSavedMacs by default).
int winograd_tile_for(int64_t out_h, int64_t out_w, int64_t channel_products = 0,
                      double min_saved_macs = kWinogradMinSavedMacs);
// Blocked 3x3 float convs with stride and dilation 1 and constant weights become conv2d_winograd
// nodes with the weights transformed once, here (ops::pack_winograd_weights).
void winograd_conv(Graph& g, double min_saved_macs = kWinogradMinSavedMacs);

// Concatenations written in place: a concat whose inputs are contiguous ranges of its output
// (every dimension before the axis is 1) at 64-byte-aligned offsets, each computed by a kernel of
// the CPU's library (not the accelerator; graph::build turns the pass off for CUDA builds), gets
// the attribute in_place = 1. Its inputs' kernels write straight into its storage, so it runs
// no kernel (fuse_ops gives it a group of its own, which build emits no call for). Concats that
// share inputs share one storage (DenseNet's concat of every earlier feature of a dense block: one
// buffer per block); a concat stays a copy where an input would need two offsets or would overlap
// another value written there. Marks of an earlier run are decided again; enabled = false only
// clears them (PipelineOptions::concat_in_place).
void concat_in_place(Graph& g, bool enabled = true);
bool is_in_place_concat(const Node& n);
// Where the in-place concats (and reshapes) put values: region[id] is the node whose id names the shared storage
// value `id` lies in (-1: none) and offset[id] its byte offset there; bytes maps each region to its
// size. A concat marked in_place that cannot be (a graph edited after the pass) is a ModelError.
struct InPlaceRegions {
  std::vector<int> region;
  std::vector<uint64_t> offset;
  std::map<int, uint64_t> bytes;
};
InPlaceRegions in_place_regions(const Graph& g);

// Fusion: groups of nodes compiled into one kernel.
struct FusedGroup {
  std::vector<int> nodes;  // operator nodes, in topological order
  int anchor = -1;         // the node whose schedule the kernel uses
  int output = -1;         // the node whose value the kernel produces
  OpPattern pattern = OpPattern::ElemWise;
  std::vector<int> inputs;  // values the kernel reads from outside the group, in argument order
};
struct FusionPlan {
  std::vector<FusedGroup> groups;  // in execution order
  std::string str(const Graph& g) const;
};
// TVM's FuseOps rules: element-wise and broadcast ops join the kernel of their producer when it
// is element-wise/broadcast/injective or out-element-wise-fusable (conv2d + bias + relu +
// residual add become one kernel) and they are that kernel's only reader; injective ops join
// injective kernels; reductions and opaque ops start kernels. An element-wise node that closes a
// diamond (x * sigmoid(x): every other reader of its producer's value lies in element-wise side
// kernels that only it reads) joins the producer's kernel with those side kernels. An in-place
// concat is a group of its own that nothing joins.
FusionPlan fuse_ops(const Graph& g);

// Reshapes as views, after fusion: a reshape that is a kernel of its own (fusion joined it to
// neither its producer nor a reader: ViT's dense output read by three slices) gets in_place = 1
// where its input is a CPU kernel's output and its readers run on the CPU, and neither takes part
// in an in-place concat. It shares its input's storage at offset 0 (in_place_regions) and runs
// no kernel: a reshape moves no bytes. enabled = false only clears the marks.
void reshape_in_place(Graph& g, const FusionPlan& fusion, bool enabled = true);
bool is_in_place_reshape(const Node& n);
// An in-place concat or reshape: a value placed in storage its inputs share, with no kernel.
bool is_in_place(const Node& n);

// Static memory plan for the kernels' outputs: each temporary gets a storage buffer, reused once
// its last reader has run. The values an in-place concat joins share one storage, live from the
// first of them written to the last read.
struct MemoryPlan {
  std::vector<uint64_t> storage_bytes;
  std::vector<int> storage_of;      // per node id; -1 if not a planned temporary
  std::vector<uint64_t> offset_of;  // per node id: byte offset in its storage (in-place concats)
  std::vector<int> region_of;       // per node id: the in-place region it lies in (in_place_regions); -1: none
  uint64_t planned_bytes() const;
  uint64_t unplanned_bytes = 0;  // one buffer per temporary
  std::string str(const Graph& g) const;
};
MemoryPlan plan_memory(const Graph& g, const FusionPlan& fusion);

// Accelerator partitioning (partition_accel.cc): int8 convolutions with their requantization that
// the config can run become accel_conv2d nodes on its blocked layout (accel_pack / accel_unpack only
// at CPU boundaries); the rest stays on the CPU, each with the reason.
struct AccelPartitionReport {
  int offloaded = 0;
  std::vector<std::string> kept;  // "node: why it stays on the CPU"
};
AccelPartitionReport partition_accel(Graph& g, const accel::AccelConfig& config);

struct PipelineOptions {
  LayoutOptions layout;
  std::optional<accel::AccelConfig> accel;       // set: run partition_accel before alter_layout
  AccelPartitionReport* accel_report = nullptr;  // receives what partition_accel did
  bool concat_in_place = true;                   // run pass concat_in_place
  bool dump = false;                             // print the graph after every pass (also LOOM_DUMP_GRAPH=1)
  std::ostream* dump_stream = nullptr;           // default std::cerr
  std::function<void(const std::string&, const Graph&)> on_pass;
  // verify_types after every pass (also LOOM_VERIFY_EACH=1, which the test suite sets): a broken
  // graph is a ModelError naming the pass that left it so, instead of wrong code later.
  bool verify_each = false;
  // Passes of the caller's, each run right after the built-in pass `after` (ConfigError naming
  // the built-in passes if there is none of that name).
  struct ExtraPass {
    std::string name, after;
    std::function<void(Graph&)> run;
  };
  std::vector<ExtraPass> extra_passes;
};
// Runs the passes in order (graph_pass_names): infer_types, simplify_inference, fold_constants,
// prune_conv_taps, pool_before_pointwise_conv, dense_from_matmul, partition_accel,
// int8_dense_as_pointwise_conv, pad_conv_channels, keep_padded_channels,
// interleave_narrow_groups, alter_layout, winograd_conv, eliminate_dead_nodes, concat_in_place.
void optimize(Graph& g, const PipelineOptions& options = {});
std::vector<std::string> graph_pass_names();

}  // namespace loom::graph
