// Lowering: Schedule -> flat loop IR (ir::LoweredFunc). The pass list lives in one place,
// schedule/src/lower.cc; every pass is one file under schedule/src/passes/.
#pragma once
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "loom/ir/stmt.h"
#include "loom/schedule/schedule.h"

namespace loom::schedule {

struct LowerOptions {
  // Print the IR after every pass to `dump_stream` (default std::cerr). Also enabled by the
  // environment variable LOOM_DUMP_IR=1.
  bool dump_ir = false;
  std::ostream* dump_stream = nullptr;
  // Called with (pass name, printed IR) after every pass; used by tests and tools.
  std::function<void(const std::string&, const std::string&)> on_pass;
  // Leave the IR right after the named pass (e.g. "schedule_ops") — for golden tests.
  std::string stop_after;
  // Lower for a GPU: barriers from shared-memory analysis (thread_sync) and the host/device split's
  // checks (verify_gpu, ir/gpu.h) run; without it both passes leave the function as it is.
  bool target_gpu = false;
  // CPU: a parallel loop whose body does fewer stores than this (times the loops around them)
  // runs serially, its fork-join costing more than a second thread saves. 0: every parallel
  // loop the schedule asks for. The model compiler sets it (graph::BuildOptions).
  int64_t min_parallel_work = 0;
  // CPU: every parallel loop kept carries its work count (attr ir::attr_key::kParallelWork), and
  // the runtime runs it serially below its host's threshold (runtime::min_parallel_work(),
  // measured from the thread pool's fork-join cost). A parallel loop nested in another gets its
  // own. The model compiler sets it, with min_parallel_work as the floor no host goes below.
  bool parallel_work_hints = false;
  // CPU: a vector loop whose guards hold on a prefix of its lanes and which does nothing past it
  // (a ragged split's last tile) becomes a vector of that prefix (partition_loops). false keeps
  // the per-lane guard, which LLVM's vectorizer gets instead (bench/ragged_tail_bench.cc).
  bool narrow_vector_tails = true;
  // The target's vector register width: a narrowed vector wider than one register keeps whole
  // registers and narrows the last (17 floats with 512-bit registers: 16 and 1), since LLVM builds
  // a vector of an odd width past one register lane by lane. The default, 128, fits every CPU
  // target; the model compiler sets codegen::TargetInfo::vector_bits.
  int vector_bits = 128;
};

// Lowers the schedule into one function whose arguments are `args` in order: every input
// placeholder the computation reads and every output must be listed.
ir::LoweredFunc lower(const Schedule& sch, const std::vector<Tensor>& args, const std::string& name,
                      const LowerOptions& options = {});

// Names of the passes, in the order they run.
std::vector<std::string> lowering_pass_names();

}  // namespace loom::schedule
