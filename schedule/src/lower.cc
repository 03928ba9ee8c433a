// The lowering pipeline, in order. Each pass is one file in passes/; this file only sequences
// them and dumps the IR after each one when asked (LowerOptions::dump_ir or LOOM_DUMP_IR=1).
#include "loom/schedule/lower.h"

#include <cstdlib>
#include <iostream>

#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "passes/passes.h"

namespace loom::schedule {

using namespace loom::ir;

namespace {

struct Dumper {
  const LowerOptions& opt;
  bool enabled;
  explicit Dumper(const LowerOptions& o) : opt(o) {
    const char* env = std::getenv("LOOM_DUMP_IR");
    enabled = o.dump_ir || (env && std::string(env) != "0");
  }
  void operator()(const std::string& pass, const std::string& text) const {
    if (opt.on_pass) opt.on_pass(pass, text);
    if (enabled) (opt.dump_stream ? *opt.dump_stream : std::cerr) << "// ---- after " << pass << " ----\n" << text;
  }
};

}  // namespace

std::vector<std::string> lowering_pass_names() {
  return {"inline_stages", "infer_bounds", "schedule_ops", "simplify", "storage_flatten",
          "inject_dma_copy", "partition_loops", "unroll_loops", "vectorize_loops", "simplify_final"};
}

LoweredFunc lower(const Schedule& sch, const std::vector<Tensor>& args, const std::string& name, const LowerOptions& options) {
  Dumper dump(options);
  passes::LowerState st;
  st.sch = &sch;
  LoweredFunc f;
  f.name = name;
  auto done = [&](const std::string& pass, const std::string& text) {
    dump(pass, text);
    return options.stop_after == pass;
  };
  auto describe_bounds = [&] {
    std::string out;
    for (auto& s : sch.stages()) {
      auto it = st.regions.find(s.node().get());
      if (it == st.regions.end()) continue;
      out += s.name() + ": [";
      for (size_t d = 0; d < it->second.size(); ++d)
        out += (d ? ", " : "") + to_string(it->second[d].min) + " +" + to_string(it->second[d].extent);
      out += "]\n";
    }
    return out;
  };

  passes::inline_stages(st);
  if (done("inline_stages", "")) return f;
  passes::infer_bounds(st);
  if (done("infer_bounds", describe_bounds())) return f;

  Stmt body = passes::schedule_ops(st);
  f.body = body;
  if (done("schedule_ops", to_string(body))) return f;
  body = simplify(body);
  f.body = body;
  if (done("simplify", to_string(body))) return f;
  body = passes::storage_flatten(body, st, args, &f.args);
  f.body = body;
  if (done("storage_flatten", to_string(f))) return f;
  body = passes::inject_dma_copy(body);
  f.body = body;
  if (done("inject_dma_copy", to_string(f))) return f;
  body = passes::partition_loops(body);
  f.body = body;
  if (done("partition_loops", to_string(f))) return f;
  body = passes::unroll_loops(body);
  f.body = body;
  if (done("unroll_loops", to_string(f))) return f;
  body = passes::vectorize_loops(body);
  f.body = body;
  if (done("vectorize_loops", to_string(f))) return f;
  f.body = simplify(body);
  done("simplify_final", to_string(f));
  return f;
}

}  // namespace loom::schedule
