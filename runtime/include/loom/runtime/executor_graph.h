// The executor graph of a compiled model: the typed contract between the compiler (graph::build
// writes it) and the runtime (GraphExecutor runs it). It is the JSON section of a .loom file
// (model_file.h); to_json / from_json are its only (de)serializers.
//
//   values   every tensor the model touches: inputs, parameters, planned temporaries
//   storages the buffers of the static memory plan; an input or temporary lives in one of them
//   kernels  the calls in execution order, each on a device (the CPU's kernel library, or a stream
//            of the accelerator image), reading and writing values by id
//   inputs / outputs  value ids, in the model's order
//
// from_json checks everything before anything is allocated: value ids in range, shapes
// non-negative and bounded, every value inside its storage (at an aligned offset) or the parameter blob, a kernel's
// device consistent with its fields. Errors are ModelError naming `origin`.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/runtime/dim_expr.h"
#include "loom/runtime/dtype.h"

namespace loom::runtime {

inline constexpr const char* kGraphFormat = "loom-graph";
// 1: kernels without a device field (an accelerator call is one with accel_stream >= 0);
// 2: every kernel names its device; 3: values may lie at a storage_offset (a temp no kernel
// writes: an in-place concat of values that do); 4: CUDA kernels list their copies (upload,
// download), so CUDA mixes with other devices; 5: shape variables, and values with symbolic
// dimensions over them. from_json reads all five; to_json writes the lowest that describes the
// graph (3 without CUDA kernels or shape variables).
inline constexpr int kGraphFormatVersion = 5;

// Storage buffers, parameters in the blob and values inside a storage start at multiples of this:
// kernels take their buffers as 64-byte aligned (module.h). aligned_bytes: `bytes` rounded up to it.
inline constexpr uint64_t kValueAlignment = 64;
inline constexpr uint64_t aligned_bytes(uint64_t bytes) {
  return (bytes + kValueAlignment - 1) / kValueAlignment * kValueAlignment;
}

// Where a value lives.
enum class ValueKind {
  Input,       // a model input, in a storage buffer
  Temp,        // a kernel's output, in a (shared) storage buffer of the memory plan
  Param,       // a constant in the parameter blob
  AccelParam,  // a constant only accelerator kernels read: it lives in the accelerator image alone
};

// Which device a kernel runs on. A new device adds a kind here, a name in device_name, and a
// runner in GraphExecutor (runtime/src/kernel_runner.h).
enum class KernelDevice {
  CPU,    // `func` is a function of the model's kernel library (module.h ABI)
  Accel,  // `accel_stream` is a stream of the model's accelerator image
  Cuda,   // `func` is a function of the model's CUDA program (runtime/cuda.h)
};

const char* value_kind_name(ValueKind kind);   // "input", "temp", "param", "accel_param"
const char* device_name(KernelDevice device);  // "cpu", "accel", "cuda"

struct ExecutorValue {
  std::string name;
  std::vector<int64_t> shape;  // with symbolic dims: the largest shape, which its storage holds
  ShapeExpr dims{};            // empty: static; else over ExecutorGraph::shape_vars
  DataType dtype;
  ValueKind kind = ValueKind::Temp;
  uint64_t storage = 0;         // Input, Temp: index into ExecutorGraph::storages
  uint64_t storage_offset = 0;  // Input, Temp: byte offset there (64-byte aligned; in-place concats share storage)
  uint64_t param_offset = 0;    // Param: byte offset in the parameter blob (64-byte aligned)
  int64_t accel_offset = -1;    // byte offset of its copy in the accelerator image; -1: none
  // Bits per element of that copy when narrower than dtype (the accelerator's 2- or 4-bit inputs,
  // weights and outputs, 16-bit accumulators): packed there (accel/packing.h), the host keeping
  // the values in dtype; 0: the dtype's width.
  int accel_bits = 0;
  // Input of a quantized model: NaN and infinity have no int8 value, so the executor refuses them
  // (ExecutorOptions::allow_non_finite lets them through).
  bool finite_only = false;
  // Temp: an in-place concat or reshape puts it and other values in the same bytes at one time (it
  // is a concat's part, a view's input, or such a concat or view itself), so it cannot move to a
  // buffer of its own alone (GraphExecutor::carry refuses it). Key "in_place_region", optional.
  bool in_place_region = false;
  uint64_t nbytes() const;        // dtype bytes x elements
  uint64_t accel_nbytes() const;  // bytes of the accelerator image's copy (packed at accel_bits)
};

// A kernel call. The host holds every value but the accelerator-only parameters; an accelerator
// or GPU kernel works on its device's copies (in the accelerator image at accel_offset; on the GPU
// at the storage's or parameter blob's offset). Before the kernel, `upload` values are copied from
// the host to the device; after it, `download` values are copied back (where a kernel on another
// device or an output reads them).
// A CPU kernel's variant for values of a shape variable, compiled with the variable at `value`
// (a dense layer's single row in a decode step takes the schedule that streams its weights once).
// The executor calls it in the runs whose value is `value`, or with `from` > 0 in [from, value]:
// a bucket, whose variant computes `value` rows of which the run reads the first (the variable
// is then the outermost extent of every value the kernel reads or writes, whose storage holds
// the largest shape). An executor that does not know variants runs the kernel itself, which
// computes the same.
struct KernelVariant {
  std::string func, var;
  int64_t value = 0;
  int64_t from = 0;
};

struct KernelCall {
  std::string node;  // the graph node(s) it computes, for profiles and errors
  std::string func;  // function in the kernel library (CPU) or the stream's name (accelerator)
  KernelDevice device = KernelDevice::CPU;
  std::vector<int> args;                     // value ids: inputs, then the output
  int accel_stream = -1;                     // Accel: the stream's index in the image
  std::vector<int> upload, download;         // Accel and Cuda
  std::vector<KernelVariant> variants = {};  // CPU
  // CPU and CUDA: the arithmetic operations of one call (ir/op_count.h), for estimates and
  // GFLOP/s figures; 0 where not counted (a shape known only at run time, an older file).
  double ops = 0;
};

struct ExecutorGraph {
  std::string model;   // the model's name
  std::string target;  // the CPU the kernels were compiled for
  // The CPU kernels' target triple and the extensions they use (cpu_target.h), checked before the
  // kernel library is loaded; empty in files from before they were recorded.
  std::string target_triple;
  std::vector<std::string> target_features;
  std::vector<uint64_t> storages;  // bytes of each storage buffer
  uint64_t planned_bytes = 0;      // the memory plan's temporaries (inputs excluded)
  uint64_t unplanned_bytes = 0;    // what one buffer per temporary would take
  std::vector<ExecutorValue> values;
  // Dimensions known at run time: bound from the inputs' shapes each run (GraphExecutor).
  std::vector<ShapeVar> shape_vars;
  std::vector<int> inputs, outputs;
  std::vector<KernelCall> kernels;

  uint64_t storage_total() const;  // host memory the storage buffers take
  std::string to_json() const;
  // `params_bytes`: the size of the parameter blob the values must lie in.
  static ExecutorGraph from_json(std::string_view json, uint64_t params_bytes, const std::string& origin);
};

}  // namespace loom::runtime
