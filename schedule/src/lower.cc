// The lowering pipeline, in order. Each pass is one file in passes/; this file only lists them
// (ir::PassPipeline runs them and dumps the IR after each one when asked: LowerOptions::dump_ir
// or LOOM_DUMP_IR=1).
#include "loom/schedule/lower.h"

#include "loom/ir/gpu.h"
#include "loom/ir/pass_pipeline.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "passes/passes.h"

namespace loom::schedule {

using namespace loom::ir;

namespace {

// What the passes hand on: the schedule's lowering state, and the function being built.
struct Lowering {
  passes::LowerState st;
  const std::vector<Tensor>* args = nullptr;
  bool gpu = false;  // LowerOptions::target_gpu: the GPU passes run
  int64_t min_parallel_work = 0;
  bool parallel_work_hints = false;
  int narrow_vector_bits = 0;  // partition_loops' register width for narrowed vectors; 0: none narrowed
  LoweredFunc f;
};

std::string bounds_text(const Lowering& l) {
  std::string out;
  for (auto& s : l.st.sch->stages()) {
    auto it = l.st.regions.find(s.node().get());
    if (it == l.st.regions.end()) continue;
    out += s.name() + ": [";
    for (size_t d = 0; d < it->second.size(); ++d)
      out += (d ? ", " : "") + to_string(it->second[d].min) + " +" + to_string(it->second[d].extent);
    out += "]\n";
  }
  return out;
}
std::string body_text(const Lowering& l) { return to_string(l.f.body); }
std::string func_text(const Lowering& l) { return to_string(l.f); }
// A pass over the function body after storage flattening.
NamedPass<Lowering> body_pass(const char* name, Stmt (*pass)(const Stmt&)) {
  return {name, [pass](Lowering& l) { l.f.body = pass(l.f.body); }, func_text};
}

const PassPipeline<Lowering>& pipeline() {
  static const PassPipeline<Lowering> p({
      {"inline_stages", [](Lowering& l) { passes::inline_stages(l.st); }, nullptr},
      {"infer_bounds", [](Lowering& l) { passes::infer_bounds(l.st); }, bounds_text},
      {"schedule_ops", [](Lowering& l) { l.f.body = passes::schedule_ops(l.st); }, body_text},
      {"simplify", [](Lowering& l) { l.f.body = simplify(l.f.body); }, body_text},
      {"storage_flatten", [](Lowering& l) { l.f.body = passes::storage_flatten(l.f.body, l.st, *l.args, &l.f.args); },
       func_text},
      body_pass("inject_dma_copy", passes::inject_dma_copy),
      {"partition_loops", [](Lowering& l) { l.f.body = passes::partition_loops(l.f.body, l.narrow_vector_bits); },
       func_text},
      body_pass("unroll_loops", passes::unroll_loops),
      body_pass("vectorize_loops", passes::vectorize_loops),
      {"hoist_reciprocals", [](Lowering& l) { l.f.body = l.gpu ? l.f.body : passes::hoist_reciprocals(l.f.body); },
       func_text},
      {"serialize_small_parallel",
       [](Lowering& l) {
         l.f.body = passes::serialize_small_parallel(l.f.body, l.min_parallel_work, l.parallel_work_hints);
       },
       func_text},
      {"prefetch_ahead", [](Lowering& l) { l.f.body = passes::prefetch_ahead(l.f.body, !l.gpu); }, func_text},
      {"prefetch_shared", [](Lowering& l) { l.f.body = l.gpu ? passes::prefetch_shared(l.f.body) : l.f.body; },
       func_text},
      {"thread_sync", [](Lowering& l) { l.f.body = l.gpu ? passes::thread_sync(l.f.body) : l.f.body; }, func_text},
      {"simplify_final", [](Lowering& l) { l.f.body = simplify(l.f.body); }, func_text},
      // The host/device split's checks (launch limits, placement of bound loops and buffers), so a
      // schedule a GPU cannot run fails at lowering, naming the kernel.
      {"verify_gpu",
       [](Lowering& l) {
         if (l.gpu) split_gpu_kernels(l.f);
       },
       nullptr},
  });
  return p;
}

}  // namespace

std::vector<std::string> lowering_pass_names() { return pipeline().names(); }

LoweredFunc lower(const Schedule& sch, const std::vector<Tensor>& args, const std::string& name,
                  const LowerOptions& options) {
  Lowering l;
  l.st.sch = &sch;
  l.args = &args;
  l.f.name = name;
  l.gpu = options.target_gpu;
  l.min_parallel_work = options.target_gpu ? 0 : options.min_parallel_work;
  l.parallel_work_hints = !options.target_gpu && options.parallel_work_hints;
  if (options.vector_bits < 8)
    LOOM_THROW(LoweringError, "LowerOptions::vector_bits is ", options.vector_bits,
               ": a vector register holds at least 8 bits");
  l.narrow_vector_bits = !options.target_gpu && options.narrow_vector_tails ? options.vector_bits : 0;
  PassRunOptions<Lowering> run;
  run.dump = dump_stream(options.dump_ir, options.dump_stream, "LOOM_DUMP_IR");
  run.header = [](const std::string& pass) { return "// ---- after " + pass + " ----\n"; };
  if (options.on_pass)
    run.observe = [&](const std::string& pass, const Lowering&, const std::function<std::string()>& text) {
      options.on_pass(pass, text());
    };
  run.stop_after = options.stop_after;
  pipeline().run(l, run);
  return l.f;
}

}  // namespace loom::schedule
