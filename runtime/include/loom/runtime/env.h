// The LOOM_* environment variables, read by one strict reader: a variable that is set to
// something it does not accept is a ConfigError naming the variable, its value and what it
// accepts (never silently ignored). Unset or empty means "not given". The variables:
//
//   LOOM_NUM_THREADS     runtime thread pool: integer 1..4096, worker threads (default: hardware
//                        concurrency)
//   LOOM_SPIN_US         runtime thread pool: integer 0..10000000, µs a finished worker busy-waits
//                        (default 300)
//   LOOM_MIN_PARALLEL_WORK  runtime thread pool: integer 0..2^50, work (stores) below which a
//                        model's parallel loop runs serially (default: measured from the pool's
//                        fork-join cost, runtime::min_parallel_work); loops under the
//                        compile-time floor (loom compile --min-parallel-work) stay serial
//   LOOM_FIXED_PARALLELISM  graph executor: flag, every CPU kernel's parallel loops go by the
//                        pool's threshold alone (default: chosen per range of CPU kernels by
//                        timing them pooled and serial, runtime/src/kernel_parallelism.h)
//   LOOM_DUMP_IR         schedule::lower: flag, print the loop IR after every lowering pass
//   LOOM_DUMP_GRAPH      graph::optimize: flag, print the graph after every graph pass
//   LOOM_VERIFY_EACH     graph::optimize: flag, check the graph's structure and types after every
//                        graph pass (set for the GoogleTest suite)
//   LOOM_CC              codegen export_library: a command, the C compiler that links kernel
//                        libraries (default cc)
//   LOOM_RPC_TIMEOUT_MS  the rpc:// device: integer 1..86400000, bound on connecting and on each
//                        reply (default 60000)
//   LOOM_RPC_TOKEN       the rpc:// device and the RPC server: any text, the access token
//   LOOM_CUDA_DRIVER     the runtime's CUDA device: the driver library to dlopen (default
//                        libcuda.so.1)
//   LOOM_CUDA_CACHE      codegen::cuda::compile: directory of compiled programs ("off": none;
//                        default $XDG_CACHE_HOME/loom/cuda or ~/.cache/loom/cuda)
//   LOOM_KERNEL_CACHE    the LLVM backend: directory of compiled kernel objects ("off": none;
//                        default $XDG_CACHE_HOME/loom/kernels or ~/.cache/loom/kernels)
//   LOOM_KERNEL_CACHE_MB the LLVM backend: integer 1..2^30, megabytes the kernel cache may hold
//                        (default 1024; the least recently used entries go first)
//   LOOM_XGBOOST_LIBRARY the tuner's cost model: the XGBoost library to dlopen (default the one
//                        found when Loom was configured, then libxgboost.so.0)
//
// A flag accepts 1, true, on, yes (set) and 0, false, off, no (not set), in any case.
// docs/architecture.md has the same table.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace loom::runtime::env {

// The integer value of `name` in [min, max], or nullopt when unset or empty.
std::optional<int64_t> integer(const char* name, int64_t min, int64_t max);
// Whether flag `name` is set (false when unset or empty).
bool flag(const char* name);
// The value of `name`, or nullopt when unset or empty.
std::optional<std::string> text(const char* name);

}  // namespace loom::runtime::env
