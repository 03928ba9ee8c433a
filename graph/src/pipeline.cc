// The graph pass pipeline, in order (like schedule/src/lower.cc for loops). LOOM_DUMP_GRAPH=1 (or
// PipelineOptions::dump) prints the graph after every pass; LOOM_VERIFY_EACH=1 (or
// PipelineOptions::verify_each) checks it after every pass.
#include "loom/graph/passes.h"
#include "loom/ir/pass_pipeline.h"
#include "loom/runtime/error.h"

namespace loom::graph {

using ir::dump_stream;
using ir::NamedPass;
using ir::PassPipeline;
using ir::PassRunOptions;

namespace {

struct GraphRun {
  Graph& g;
  const PipelineOptions& options;
};

NamedPass<GraphRun> pass(const std::string& name, std::function<void(Graph&, const PipelineOptions&)> run) {
  return {name, [run](GraphRun& r) { run(r.g, r.options); }, [](const GraphRun& r) { return r.g.str(); }};
}

const PassPipeline<GraphRun>& pipeline() {
  static const PassPipeline<GraphRun> p({
      pass("infer_types", [](Graph& g, const PipelineOptions&) { infer_types(g); }),
      pass("simplify_inference", [](Graph& g, const PipelineOptions&) { simplify_inference(g); }),
      pass("fold_constants", [](Graph& g, const PipelineOptions&) { fold_constants(g); }),
      pass("prune_conv_taps", [](Graph& g, const PipelineOptions&) { prune_conv_taps(g); }),
      pass("pool_before_pointwise_conv", [](Graph& g, const PipelineOptions&) { pool_before_pointwise_conv(g); }),
      pass("dense_from_matmul", [](Graph& g, const PipelineOptions&) { dense_from_matmul(g); }),
      pass("partition_accel",
           [](Graph& g, const PipelineOptions& o) {
             if (!o.accel) return;
             AccelPartitionReport r = partition_accel(g, *o.accel);
             if (o.accel_report) *o.accel_report = r;
           }),
      pass("int8_dense_as_pointwise_conv",
           [](Graph& g, const PipelineOptions& o) {
             if (o.layout.blocked_activations && o.layout.int8_conv_group > 0) int8_dense_as_pointwise_conv(g);
           }),
      pass("pad_conv_channels",
           [](Graph& g, const PipelineOptions& o) {
             if (o.layout.blocked_activations) pad_conv_channels(g, o.layout.vector_lanes);
           }),
      pass("keep_padded_channels",
           [](Graph& g, const PipelineOptions& o) {
             if (o.layout.blocked_activations) keep_padded_channels(g);
           }),
      pass("interleave_narrow_groups",
           [](Graph& g, const PipelineOptions& o) {
             if (o.layout.blocked_activations) interleave_narrow_groups(g, o.layout.vector_lanes);
           }),
      pass("alter_layout", [](Graph& g, const PipelineOptions& o) { alter_layout(g, o.layout); }),
      pass("winograd_conv",
           [](Graph& g, const PipelineOptions& o) {
             if (o.layout.winograd) winograd_conv(g, o.layout.winograd_min_saved_macs);
           }),
      pass("eliminate_dead_nodes", [](Graph& g, const PipelineOptions&) { eliminate_dead_nodes(g); }),
      pass("concat_in_place", [](Graph& g, const PipelineOptions& o) { concat_in_place(g, o.concat_in_place); }),
  });
  return p;
}

}  // namespace

std::vector<std::string> graph_pass_names() { return pipeline().names(); }

void optimize(Graph& g, const PipelineOptions& options) {
  PassRunOptions<GraphRun> run;
  run.dump = dump_stream(options.dump, options.dump_stream, "LOOM_DUMP_GRAPH");
  if (run.dump) *run.dump << "// graph as imported\n" << g.str();
  if (options.on_pass)
    run.observe = [&](const std::string& pass, const GraphRun& r, const auto&) { options.on_pass(pass, r.g); };
  if (options.verify_each || runtime::env::flag("LOOM_VERIFY_EACH"))
    run.verify = [](const std::string& pass, const GraphRun& r) {
      try {
        verify_types(r.g);
      } catch (const Error& e) {
        LOOM_THROW(ModelError, "graph '", r.g.name, "' is broken after pass '", pass, "': ", e.what());
      }
    };
  PassPipeline<GraphRun> passes = pipeline();
  for (const PipelineOptions::ExtraPass& extra : options.extra_passes) {
    auto run_extra = extra.run;
    auto with = passes.inserted_after(
        extra.after, pass(extra.name, [run_extra](Graph& g, const PipelineOptions&) { run_extra(g); }));
    if (!with) {
      std::string names;
      for (const std::string& n : graph_pass_names()) names += (names.empty() ? "" : ", ") + n;
      LOOM_THROW(ConfigError, "pass '", extra.name, "' is to run after '", extra.after,
                 "', which is no graph pass; the graph passes: ", names);
    }
    passes = std::move(*with);
  }
  GraphRun state{g, options};
  passes.run(state, run);
}

}  // namespace loom::graph
