// `loom export MODEL --onnx-qdq -o OUT.onnx`: Loom's int8 model as a standard QDQ ONNX file (the
// same scales and integers; frontend/onnx_export.h), so ONNX Runtime or another int8 runtime runs the
// identical network. It takes `loom compile`'s quantization options (cmd_model.cc), and `loom
// compile --export-onnx-qdq FILE` writes the same file beside the compiled model. Each export is
// checked: ONNX Runtime (its int8 kernels) runs the file on the check inputs beside Loom's int8 model.
#include "model_commands.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>

#include "command.h"
#include "loom/runtime/error.h"
#ifdef LOOM_HAVE_GRAPH
#include "loom/frontend/onnx_export.h"
#include "loom/runtime/graph_executor.h"
#include "ort_reference.h"
#endif

namespace loom::tools {

#ifdef LOOM_HAVE_GRAPH

bool export_qdq(const graph::QuantizeResult& q, const std::string& path, bool exact_rounding,
                const runtime::ModelFile* int8_model, const std::vector<std::vector<NDArray>>& inputs,
                std::ostream& text, nlohmann::json& result) {
  frontend::OnnxExportOptions options;
  options.round_half_up = exact_rounding;
  const std::string bytes = frontend::export_onnx(q.graph, q.scales, options);
  {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    if (!f) LOOM_THROW(Error, "cannot write '", path, "'");
  }
  text << "  exported the int8 model as QDQ ONNX: " << path << " (" << bytes.size() / 1024 << " KiB"
       << (exact_rounding ? "; ties rounded up as Loom does, not fused into ONNX Runtime's int8 kernels" : "") << ")\n";
  result["onnx_qdq"] = {{"file", path}, {"bytes", bytes.size()}, {"exact_rounding", exact_rounding}};
  const std::string why_not = int8_model ? ort_unavailable() : "the int8 model is compiled for another machine";
  if (!why_not.empty() || inputs.empty()) {
    text << "  not checked with ONNX Runtime: " << (why_not.empty() ? "no check inputs" : why_not) << "\n";
    result["onnx_qdq"]["checked"] = false;
    return true;
  }
  auto ex = runtime::GraphExecutor::from_model_file(*int8_model, "the int8 model");
  std::vector<std::string> outputs;
  for (size_t o = 0; o < ex.num_outputs(); ++o) outputs.push_back(ex.output_spec(o).name);
  const size_t checked = std::min<size_t>(inputs.size(), kQdqCheckInputs);
  std::vector<graph::OutputAgreementSums> agree;
  for (size_t o = 0; o < ex.num_outputs(); ++o)
    agree.emplace_back(outputs[o], graph::TensorType{ex.output_spec(o).shape, ex.output_spec(o).dtype}, checked > 1);
  std::string version;
  for (size_t k = 0; k < checked; ++k) {
    std::vector<std::pair<std::string, NDArray>> feeds;
    for (size_t i = 0; i < ex.num_inputs(); ++i) {
      ex.set_input(i, inputs[k][i]);
      feeds.emplace_back(ex.input_spec(i).name, inputs[k][i]);
    }
    ex.run();
    OrtRun ort = run_ort(bytes, feeds, outputs, /*optimize=*/true);
    version = ort.version;
    for (size_t o = 0; o < outputs.size(); ++o) agree[o].add(ex.get_output(o), ort.values.at(outputs[o]));
  }
  bool ok = true;
  text << "  ONNX Runtime " << version << " (" << (exact_rounding ? "graph optimizations on" : "int8 kernels")
       << ") on the export against Loom's int8 model, " << checked << " inputs:\n";
  result["onnx_qdq"]["checked"] = true;
  result["onnx_qdq"]["onnxruntime"] = version;
  result["onnx_qdq"]["outputs"] = nlohmann::json::array();
  for (size_t o = 0; o < outputs.size(); ++o) {
    // Loom's int8 model is the reference ("float" in OutputAgreement's names).
    const graph::OutputAgreement a = agree[o].result();
    const double rel = a.max_error / std::max(a.max_float, 1e-30);
    const int top1_same = int(std::lround(a.top1 * a.rows));
    // Rounding alone (halves to even against up) moves values by steps and leaves the outputs'
    // direction; a wrong scale or operator does not.
    // (Top-1 is reported, not judged: random-weight classifiers' logits are near-ties.)
    const bool same = a.cosine >= (exact_rounding ? kQdqMinCosineExact : kQdqMinCosine);
    ok = ok && same;
    text << "    " << outputs[o] << ": cosine " << std::setprecision(6) << a.cosine << ", max |error| "
         << std::setprecision(3) << a.max_error << " (" << rel << " of the largest magnitude)";
    if (a.rows) text << ", top-1 same " << top1_same << "/" << a.rows;
    text << (same ? "" : "  DIFFERS") << "\n";
    result["onnx_qdq"]["outputs"].push_back({{"name", outputs[o]},
                                             {"cosine", a.cosine},
                                             {"max_error", a.max_error},
                                             {"relative_error", rel},
                                             {"top1_same", top1_same},
                                             {"rows", a.rows},
                                             {"agrees", same}});
  }
  result["onnx_qdq"]["agrees"] = ok;
  return ok;
}

#endif

namespace {

// One name for both exports: a model with --onnx-qdq, else a built-in workload's library.
int export_cmd(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--onnx-qdq") != args.end())
    return compile_or_export(args, /*export_only=*/true);
  return export_workload(args);
}

}  // namespace

LOOM_REGISTER_COMMAND("export",
                      "write a quantized model as QDQ ONNX (--onnx-qdq), or a built-in workload as a shared library",
                      export_cmd);

}  // namespace loom::tools
