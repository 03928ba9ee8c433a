// The graph pass pipeline, in order (like schedule/src/lower.cc for loops). LOOM_DUMP_GRAPH=1 (or
// PipelineOptions::dump) prints the graph after every pass.
#include <cstdlib>
#include <iostream>

#include "loom/graph/passes.h"

namespace loom::graph {

namespace {
struct Pass {
  const char* name;
  std::function<void(Graph&, const PipelineOptions&)> run;
};

std::vector<Pass> passes() {
  return {
      {"infer_types", [](Graph& g, const PipelineOptions&) { infer_types(g); }},
      {"simplify_inference", [](Graph& g, const PipelineOptions&) { simplify_inference(g); }},
      {"fold_constants", [](Graph& g, const PipelineOptions&) { fold_constants(g); }},
      {"partition_accel",
       [](Graph& g, const PipelineOptions& o) {
         if (!o.accel) return;
         AccelPartitionReport r = partition_accel(g, *o.accel);
         if (o.accel_report) *o.accel_report = r;
       }},
      {"alter_layout", [](Graph& g, const PipelineOptions& o) { alter_layout(g, o.layout); }},
      {"eliminate_dead_nodes", [](Graph& g, const PipelineOptions&) { eliminate_dead_nodes(g); }},
  };
}
}  // namespace

std::vector<std::string> graph_pass_names() {
  std::vector<std::string> names;
  for (auto& p : passes()) names.push_back(p.name);
  return names;
}

void optimize(Graph& g, const PipelineOptions& options) {
  const char* env = std::getenv("LOOM_DUMP_GRAPH");
  bool dump = options.dump || (env && std::string(env) == "1");
  std::ostream& os = options.dump_stream ? *options.dump_stream : std::cerr;
  if (dump) os << "// graph as imported\n" << g.str();
  for (auto& p : passes()) {
    p.run(g, options);
    if (dump) os << "// after " << p.name << "\n" << g.str();
    if (options.on_pass) options.on_pass(p.name, g);
  }
}

}  // namespace loom::graph
