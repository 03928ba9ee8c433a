// `loom compare MODEL`: an ONNX (or built-in) model layer by layer. For an ONNX file the reference is
// the framework, ONNX Runtime, and the layers are the ONNX nodes' float values (each made an
// output of the model ONNX Runtime runs and of the graph Loom compiles); otherwise, or with
// --reference interpreter, every operator's value is made an output and the reference is Loom's
// interpreter (plain loops, independent of the compiler: graph/reference.h). Loom runs the model
// compiled: float on the CPU, int8 on the CPU, and int8 with its layers on each accelerator
// backend asked for. Each layer's error against the reference (graph/layer_compare.h, what
// loom.compare reports from Python against PyTorch), the first layer over each column's
// tolerance, and for the backends the first layer that differs from int8 on the CPU bit for bit.
#ifdef LOOM_HAVE_GRAPH
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "command.h"
#include "loom/accel/config.h"
#include "loom/frontend/load.h"
#include "loom/frontend/onnx.h"
#include "loom/graph/build.h"
#include "loom/graph/layer_compare.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/graph/reference.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/npy.h"
#include "ort_reference.h"

namespace loom::tools {

namespace {

struct Column {
  std::string name;
  double tolerance;
  std::vector<NDArray> values;  // per output of the tapped graph
};

// The compiled model run with its accelerator kernels (if any) on `backend`.
std::vector<NDArray> run_on(const runtime::ModelFile& file, const std::string& name, const std::string& backend,
                            const std::vector<NDArray>& inputs) {
  runtime::ExecutorOptions eo;
  eo.accel_backend = backend;
  return runtime::GraphExecutor::from_model_file(file, name, eo).run(inputs);
}

int compare_cmd(const std::vector<std::string>& args) {
  CLI::App app{
      "Compare a model layer by layer: the reference interpreter against Loom compiled in float, in int8, and "
      "on accelerator backends",
      "loom compare"};
  std::string model, quant, calibrate = "16", backends, config_path, csv_path, reference_kind = "auto";
  std::vector<std::string> input_files;
  int64_t image = 224;
  double tol_float = 1e-4, tol_int8 = 0.25;
  bool as_json = false;
  app.add_option("model", model, "an ONNX file or a built-in model (resnet18, resnet50, mobilenet_v2, mlp)")
      ->required();
  number_option(app, "--image", image, "image size of a built-in model", 8, 1024)->capture_default_str();
  app.add_option("--input", input_files,
                 "the model's inputs, one .npy file each in order (default: random draws of each input's distribution)")
      ->check(CLI::ExistingFile);
  app.add_option("--quantize", quant, "int8: add the int8 model on the CPU")->check(CLI::IsMember({"int8"}));
  app.add_option("--calibrate", calibrate,
                 "int8's calibration set: a number of random inputs or a folder of .npy inputs")
      ->capture_default_str();
  app.add_option("--backend", backends,
                 "accelerator backends to add, comma-separated (fsim, rtl, systemc, perf, rpc://...): the int8 model "
                 "with its int8 layers on each (implies --quantize int8)");
  app.add_option("--config", config_path, "the accelerator config (default: the built-in default)")
      ->check(CLI::ExistingFile);
  app.add_option("--tolerance-float", tol_float, "the float column's tolerance")->capture_default_str();
  app.add_option("--tolerance-int8", tol_int8, "the int8 columns' tolerance")->capture_default_str();
  app.add_option("--reference", reference_kind,
                 "what Loom is compared against: ort (ONNX Runtime on the ONNX file, its nodes' float values as the "
                 "layers), interpreter (Loom's own, every operator a layer), or auto: ort for an ONNX file where ONNX "
                 "Runtime is installed, else the interpreter")
      ->check(CLI::IsMember({"auto", "ort", "interpreter"}))
      ->capture_default_str();
  app.add_flag("--json", as_json, "print one JSON object (the table goes to stderr)");
  app.add_option("--csv", csv_path, "also write one row per layer to this CSV file")->check(output_file());
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (!(tol_float >= 0) || !(tol_int8 >= 0)) LOOM_THROW(Error, "--tolerance-float and --tolerance-int8 must be >= 0");
  std::vector<std::string> backend_list;
  for (size_t b = 0, e; b < backends.size(); b = e + 1) {
    e = std::min(backends.find(',', b), backends.size());
    if (e == b) LOOM_THROW(Error, "--backend '", backends, "' has an empty entry");
    backend_list.push_back(backends.substr(b, e - b));
  }
  if (!backend_list.empty()) quant = "int8";
  if (!quant.empty()) frontend::check_calibration_options(calibrate, "0");
  accel::AccelConfig config = config_path.empty() ? accel::default_config() : accel::AccelConfig::load(config_path);

  const bool onnx_file = std::filesystem::is_regular_file(model);
  std::string reference_name = "interpreter", why_not_ort;
  if (reference_kind != "interpreter") {
    why_not_ort = onnx_file ? ort_unavailable() : "'" + model + "' is a built-in model, not an ONNX file";
    if (why_not_ort.empty())
      reference_name = "ort";
    else if (reference_kind == "ort")
      LOOM_THROW(Error, "--reference ort: ", why_not_ort);
  }
  std::map<std::string, int> value_nodes;
  frontend::OnnxImportOptions io;
  io.value_nodes = &value_nodes;
  graph::Graph g = onnx_file ? frontend::import_onnx(model, io) : frontend::load_model(model, 1, image);
  // The layers: every operator (interpreter), or the ONNX values Loom computes in float32 (ort),
  // one name per node, in the graph's order.
  std::vector<std::string> ort_names;
  graph::TappedGraph t;
  if (reference_name == "ort") {
    std::map<int, std::string> by_node;
    for (const auto& [name, id] : value_nodes)
      if (g.node(id).is_op() && g.node(id).type.dtype == DataType::Float(32) && !by_node.count(id)) by_node[id] = name;
    std::vector<int> ids;
    for (const auto& [id, name] : by_node) {
      ids.push_back(id);
      ort_names.push_back(name);
    }
    t = graph::tap_nodes(g, ids);
  } else {
    t = graph::tap_every_layer(g);
  }
  std::vector<NDArray> inputs;
  if (!input_files.empty()) {
    if (input_files.size() != g.inputs.size())
      LOOM_THROW(Error, "--input: ", input_files.size(), " files for a model of ", g.inputs.size(), " inputs");
    for (const std::string& f : input_files) inputs.push_back(runtime::read_npy(f));
  } else {
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      const graph::TensorType& type = g.node(g.inputs[k]).type;
      NDArray a = NDArray::empty(type.shape, type.dtype);
      frontend::input_distribution(g, k).fill(a, 0x10ad + k);  // not one of the calibration draws
      inputs.push_back(std::move(a));
    }
  }
  std::vector<NDArray> reference;
  std::string reference_label;
  if (reference_name == "ort") {
    std::vector<std::pair<std::string, NDArray>> feeds;
    for (size_t k = 0; k < g.inputs.size(); ++k) feeds.emplace_back(g.node(g.inputs[k]).name, inputs[k]);
    OrtRun ort = run_ort(frontend::onnx_with_outputs(model, ort_names), feeds, ort_names);
    reference.resize(t.graph.outputs.size());
    for (size_t l = 0; l < t.layers.size(); ++l) reference[t.output[l]] = ort.values.at(ort_names[l]);
    t.layers = ort_names;  // the framework's names for its values
    reference_label = "onnxruntime " + ort.version;
    std::cerr << "loom compare: " << t.layers.size() << " float values of " << model
              << "'s nodes; reference: ONNX Runtime " << ort.version << " (graph optimizations off)\n";
  } else {
    reference_label = "interpreter";
    std::cerr << "loom compare: " << t.layers.size() << " layers of " << model
              << "; reference: the interpreter (plain loops over doubles, independent of the compiler)"
              << (why_not_ort.empty() || !onnx_file ? "" : "; not ONNX Runtime: " + why_not_ort) << "\n";
    reference = graph::reference_run(t.graph, inputs);
  }

  std::vector<Column> columns;
  columns.push_back({"float", tol_float, run_on(graph::build(t.graph).file, model, "fsim", inputs)});
  if (!quant.empty()) {
    graph::Graph q = graph::quantize(t.graph, frontend::calibration_set(calibrate, g), {}).graph;
    columns.push_back({"int8", tol_int8, run_on(graph::build(q).file, model, "fsim", inputs)});
    if (!backend_list.empty()) {  // one accelerator build, run on each backend
      graph::BuildOptions bo;
      bo.accel = config;
      const runtime::ModelFile accel_file = graph::build(q, bo).file;
      for (const std::string& b : backend_list) columns.push_back({b, tol_int8, run_on(accel_file, model, b, inputs)});
    }
  }

  // errors[layer][column]; equal[layer][column]: bit-exact with int8 on the CPU (backends only)
  const size_t L = t.layers.size(), C = columns.size();
  std::vector<std::vector<double>> errors(L, std::vector<double>(C));
  std::vector<std::vector<bool>> equal(L, std::vector<bool>(C, true));
  std::vector<long> first(C, -1), mismatch(C, -1);
  for (size_t l = 0; l < L; ++l) {
    const size_t o = t.output[l];
    for (size_t c = 0; c < C; ++c) {
      errors[l][c] = graph::layer_error(columns[c].values[o], reference[o]);
      if (first[c] < 0 && !(errors[l][c] <= columns[c].tolerance)) first[c] = long(l);
      if (c >= 2) {
        const NDArray &a = columns[c].values[o], &b = columns[1].values[o];
        equal[l][c] = a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
        if (mismatch[c] < 0 && !equal[l][c]) mismatch[c] = long(l);
      }
    }
  }

  std::ostringstream table;
  table << std::setw(5) << "#"
        << "  " << std::left << std::setw(40) << "layer" << std::right;
  for (const Column& c : columns) table << std::setw(12) << c.name;
  table << "\n";
  for (size_t l = 0; l < L; ++l) {
    table << std::setw(5) << l << "  " << std::left << std::setw(40) << t.layers[l].substr(0, 40) << std::right;
    for (size_t c = 0; c < C; ++c) {
      std::ostringstream cell;
      cell << std::scientific << std::setprecision(2) << errors[l][c]
           << (first[c] == long(l)        ? "*"
               : (c >= 2 && !equal[l][c]) ? "!"
                                          : " ");
      table << std::setw(12) << cell.str();
    }
    table << "\n";
  }
  for (size_t c = 0; c < C; ++c) {
    table << columns[c].name << ": ";
    if (first[c] < 0)
      table << "every layer within " << columns[c].tolerance << "\n";
    else
      table << "first error above " << columns[c].tolerance << " at layer " << first[c] << " '"
            << t.layers[size_t(first[c])] << "', " << errors[size_t(first[c])][c] << "\n";
    if (c >= 2)
      table << columns[c].name << ": "
            << (mismatch[c] < 0 ? std::string("every layer equals int8 on the CPU bit for bit")
                                : "first layer that differs from int8 on the CPU: " + std::to_string(mismatch[c]) +
                                      " '" + t.layers[size_t(mismatch[c])] + "'")
            << "\n";
  }
  table << "(* first divergence; ! not bit-exact with int8 on the CPU)\n";
  (as_json ? std::cerr : std::cout) << table.str();

  if (!csv_path.empty()) {
    std::ofstream f(csv_path);
    f << "layer,name";
    for (const Column& c : columns) f << "," << c.name;
    for (size_t c = 2; c < C; ++c) f << "," << columns[c].name << "_equals_int8";
    f << "\n";
    for (size_t l = 0; l < L; ++l) {
      f << l << "," << t.layers[l];
      for (size_t c = 0; c < C; ++c) f << "," << std::setprecision(6) << errors[l][c];
      for (size_t c = 2; c < C; ++c) f << "," << (equal[l][c] ? 1 : 0);
      f << "\n";
    }
    if (!f) LOOM_THROW(Error, "--csv: cannot write '", csv_path, "'");
  }
  if (as_json) {
    using nlohmann::json;
    auto number = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };  // JSON has no infinity
    json j = {{"model", model}, {"reference", reference_label}};
    for (const Column& c : columns) j["columns"].push_back({{"name", c.name}, {"tolerance", c.tolerance}});
    j["layers"] = json::array();
    for (size_t l = 0; l < L; ++l) {
      json row = {{"layer", l}, {"name", t.layers[l]}};
      for (size_t c = 0; c < C; ++c) row["errors"][columns[c].name] = number(errors[l][c]);
      for (size_t c = 2; c < C; ++c) row["equals_int8"][columns[c].name] = bool(equal[l][c]);
      j["layers"].push_back(row);
    }
    for (size_t c = 0; c < C; ++c) {
      j["first_divergence"][columns[c].name] = first[c] < 0 ? json(nullptr) : json(t.layers[size_t(first[c])]);
      if (c >= 2)
        j["first_mismatch"][columns[c].name] = mismatch[c] < 0 ? json(nullptr) : json(t.layers[size_t(mismatch[c])]);
    }
    std::cout << j.dump(1) << "\n";
  }
  return 0;
}

}  // namespace

LOOM_REGISTER_COMMAND("compare",
                      "compare a model layer by layer: the reference interpreter against Loom in float, int8 and on "
                      "accelerator backends",
                      compare_cmd);

}  // namespace loom::tools
#endif
