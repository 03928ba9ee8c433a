// `loom compile`, `loom run model.loom`, `loom bench model.loom`: whole models on the CPU.
// Options are parsed with CLI11 (cli.h): unknown options, malformed numbers and out-of-range values
// are errors.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "accel_backend.h"
#include "board_estimate_report.h"
#include "cli.h"
#include "command.h"
#include "loom/accel/board_estimate.h"
#include "loom/accel/boards.h"
#include "loom/accel/config.h"
#include "loom/accel/energy_model.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/npy.h"
#include "loom/runtime/thread_pool.h"
#include "model_commands.h"
#ifdef LOOM_HAVE_GRAPH
#include "loom/codegen/llvm.h"
#include "loom/frontend/load.h"
#include "loom/frontend/onnx.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#ifdef LOOM_HAVE_TUNE
#include "loom/tune/apply_log.h"
#endif
#endif

namespace loom::tools {

namespace {

std::string comma_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// A --layer-weight-bits table: {"layer": bits, ...}.
std::map<std::string, int> read_layer_weight_bits(const std::string& path) {
  std::ifstream in(path);
  if (!in) LOOM_THROW(Error, "--layer-weight-bits: cannot open '", path, "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(Error, "--layer-weight-bits '", path, "': not valid JSON (", e.what(), ")");
  }
  if (!j.is_object())
    LOOM_THROW(Error, "--layer-weight-bits '", path, "': expected an object of layer names and widths, {\"conv1\": 8}");
  std::map<std::string, int> bits;
  for (auto& [layer, v] : j.items()) {
    if (!v.is_number_integer() || v.get<double>() < 0 || v.get<double>() > 64)  // not wrapped into an int
      LOOM_THROW(Error, "--layer-weight-bits '", path, "': layer '", layer, "' has ", v.dump(),
                 ", not a width in bits");
    bits[layer] = v.get<int>();
  }
  return bits;
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& what) {
  std::vector<int64_t> shape;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, 'x')) {
    long long v = whole_integer(item);
    if (v <= 0) LOOM_THROW(Error, what, ": '", text, "' is not a shape like 1x3x224x224");
    shape.push_back(v);
  }
  return shape;
}

// The entries of a comma-separated --target list, empty ones included.
std::vector<std::string> target_names(const std::string& list) {
  std::vector<std::string> names;
  for (size_t b = 0, e; b <= list.size(); b = e + 1) {
    e = std::min(list.find(',', b), list.size());
    names.push_back(list.substr(b, e - b));
  }
  return names;
}

bool has_target(const std::string& list, const std::string& t) {
  std::vector<std::string> names = target_names(list);
  return std::find(names.begin(), names.end(), t) != names.end();
}

void set_threads(int threads) {
  if (threads > 0) runtime::set_num_threads(threads);
}

// What to do when the quantized model strays from the float one: the usual causes first.
const char* const kQuantizeAdvice =
    "  what to do: calibrate on inputs like the ones the model will see (--calibrate DIR: .npy files such as "
    "preprocessed images), or give their distribution (--input-distribution 'uniform(0, 1)'); try "
    "--calibration-mode max or kl; on the CPU, --per-channel weight scales (docs/quantization.md explains the "
    "figures)";

}  // namespace

int compile_or_export(const std::vector<std::string>& args, bool export_only) {
#ifndef LOOM_HAVE_GRAPH
  LOOM_THROW(Error, "this loom was built without the model compiler (needs LLVM and libonnx-dev)");
#else
  CLI::App app{export_only ? "Quantize a model (ONNX) and write it as a QDQ ONNX file (QuantizeLinear/"
                             "DequantizeLinear around float operators, the int8 model's scales), which ONNX Runtime "
                             "and other int8 runtimes run as int8; checked against Loom's int8 model with ONNX Runtime"
                           : "Compile a model (ONNX) for the CPU into one compiled-model file",
               export_only ? "loom export" : "loom compile"};
  std::string model, out, qdq_path;
  std::vector<std::string> shapes;
  bool dump = false, verify_each = false, quiet = false, as_json = false;
  int threads = 0;
  int64_t batch = 1, image = 224;
  app.add_option("model", model, "model.onnx, or a built-in model: resnet18, resnet50, mobilenet_v2, mlp")->required();
  number_option(app, "--batch", batch, "batch size of a built-in model", 1, 1024)->capture_default_str();
  number_option(app, "--image", image, "image size of a built-in model", 32, 1024)->capture_default_str();
  bool onnx_qdq = false, exact_rounding = false;
  if (export_only) {
    app.add_option("-o,--output", qdq_path, "the ONNX file to write")->required()->check(output_file());
    app.add_flag("--onnx-qdq", onnx_qdq,
                 "the format: int8 values as QuantizeLinear/DequantizeLinear pairs around the float operators "
                 "(the only one today)")
        ->required();
  } else {
    app.add_option("-o,--output", out, "compiled model to write (default: the model's name with .loom)")
        ->check(output_file());
    app.add_option("--export-onnx-qdq", qdq_path,
                   "also write the quantized model as a QDQ ONNX file (as `loom export --onnx-qdq`), checked against "
                   "the int8 model with ONNX Runtime")
        ->check(output_file());
  }
  app.add_flag("--exact-rounding", exact_rounding,
               "QDQ export: round ties up as Loom's requantization does (half an accumulator unit added before each "
               "requantizing QuantizeLinear): the same integers exactly, but ONNX Runtime runs those layers in float "
               "instead of its int8 kernels");
  app.add_option("--input-shape", shapes, "NAME=DxDx... for inputs with symbolic dimensions");
  std::vector<std::string> shape_vars;
  app.add_option("--shape-var", shape_vars,
                 "NAME=MIN..MAX: the inputs' dimension NAME (an ONNX dim_param) stays symbolic within that range; "
                 "one compiled model runs every value (docs/dynamic_shapes.md)");
  std::vector<std::string> binds;
  app.add_option("--bind", binds,
                 "NAME=FILE.npy: fix an input's value at compile time (axes, shapes or pads a model takes as inputs); "
                 "it is no longer an input of the compiled model");
  number_option(app, "--threads", threads, "threads for compile-time work (default: all)", 1, 1024);
  app.add_flag("--dump-graph", dump, "print the graph after every pass");
  app.add_flag("--verify-each", verify_each,
               "check the graph's structure and types after every pass (an error names the pass that broke it)");
  app.add_flag("-q,--quiet", quiet, "no progress and no per-layer lists (the summary and warnings stay)");
  app.add_flag("--json", as_json,
               "print the result (file, graph, memory, quantization report, accelerator layers) as one JSON object on "
               "stdout; everything else goes to stderr");
  std::string quant = export_only ? "int8" : "", calibrate = "16", mode = "percentile", holdout = "auto", distribution;
  bool first_conv = false;
  app.add_option("--quantize", quant,
                 "int8: post-training quantization (power-of-two scales); int8-simulated: the same in float")
      ->check(CLI::IsMember({"int8", "int8-simulated"}));
  app.add_option("--calibrate", calibrate,
                 "calibration set: a folder of .npy inputs (recommended: real, preprocessed inputs), or a number of "
                 "random inputs drawn from --input-distribution")
      ->capture_default_str();
  app.add_option("--holdout", holdout,
                 "inputs the quantized model is checked on besides the calibration set: auto (as many other random "
                 "draws; with a folder, every fourth file of it), 0 (none), a number of random inputs, or a folder")
      ->capture_default_str();
  app.add_option("--input-distribution", distribution,
                 "what random calibration and held-out inputs are drawn from: normal(MEAN, STD) or uniform(LO, HI) "
                 "(default: the distribution the model records, else normal(0, 1))");
  std::string layer_bits_path;
  app.add_option("--layer-weight-bits", layer_bits_path,
                 "mixed precision from a table: a JSON object of conv/dense layer names and weight widths, "
                 "{\"layer1.0.conv1\": 8}; the layers not named take the precision's (with --target accel, widths "
                 "the config runs: its wgt_bits, or twice or four times it in passes)");
  double mixed_budget = 0;
  number_option(app, "--mixed-precision", mixed_budget,
                "mixed precision by sensitivity: widen to 8 bits the fewest most sensitive layers that bring the "
                "quantized model's cosine with the float model on the calibration inputs to this",
                0.0, 1.0);
  double min_accuracy = 0;
  number_option(app, "--min-accuracy", min_accuracy,
                "fail, writing nothing, when the quantized model's accuracy (the lowest of its outputs' cosines and "
                "classifier top-1 agreements with the float model on the held-out inputs) is below this",
                0.0, 1.0);
  app.add_option("--calibration-mode", mode, "max, percentile (99.9%) or kl")
      ->check(CLI::IsMember({"max", "percentile", "kl"}))
      ->capture_default_str();
  app.add_flag("--quantize-first-conv", first_conv, "quantize the first convolution too (kept float by default)");
  std::string precision;
  app.add_option("--precision", precision,
                 "widths of the quantized model's weights and activations: W8A8 (the default), W4A8, W2A8, W4A4, ... "
                 "(int8 containers on the CPU); with --target accel the config's, which need not be repeated");
  bool per_channel = false;
  app.add_flag("--per-channel", per_channel,
               "per-output-channel weight scales with fixed-point requantization (CPU only)");
  std::string weight_exponents = "auto";
  app.add_option("--weight-exponents", weight_exponents,
                 "power-of-two weight steps per tensor or per output channel (each channel requantized by its own "
                 "shift, on the CPU and the accelerator); auto: per channel below 8-bit weights")
      ->check(CLI::IsMember({"auto", "tensor", "channel"}))
      ->capture_default_str();
  std::string target = "cpu", config_path, placement_path;
  app.add_option("--target", target,
                 "where kernels run, a comma-separated list: cpu (always; the default alone); accel: int8 layers on "
                 "the accelerator; cuda: kernels on a GPU (CUDA C compiled by NVRTC, run by the runtime alone on a "
                 "machine with a GPU), those it has no kernel for on the CPU. cuda,accel mixes all three")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            for (const std::string& t : target_names(v))
              if (t != "cpu" && t != "accel" && t != "cuda") return "'" + t + "' is not a target (cpu, accel, cuda)";
            return "";
          },
          "TARGET[,TARGET]"))
      ->capture_default_str();
  app.add_option("--placement", placement_path,
                 "a JSON object from node names to devices (\"cpu\", \"cuda\", \"accel\") over the default placement; "
                 "each device must be a target")
      ->check(CLI::ExistingFile);
  std::string cuda_arch = "sm_90";
  app.add_option("--cuda-arch", cuda_arch, "with --target cuda: the cubin's architecture (PTX is kept for others)")
      ->capture_default_str();
  app.add_option("--config", config_path, "accelerator config (JSON; default: the built-in VTA-like 1x16x16)")
      ->check(CLI::ExistingFile);
  std::string tuning_log;
  app.add_option("--tuning-log", tuning_log,
                 "use the best conv2d tiles logged for this machine by `loom tune` (JSON lines)")
      ->check(CLI::ExistingFile);
  bool no_winograd = false;
  app.add_flag("--no-winograd", no_winograd,
               "compile 3x3 stride-1 float convolutions directly, not as Winograd F(4x4, 3x3) / F(2x2, 3x3)");
  int64_t min_parallel_work = graph::BuildOptions().min_parallel_work;
  number_option(app, "--min-parallel-work", min_parallel_work,
                "CPU kernels: a parallel loop with less work than this (stores and intrinsic calls, times the "
                "loops around them) always runs on one thread; above it the runtime decides by the threshold it "
                "measures on the host (LOOM_MIN_PARALLEL_WORK overrides that)",
                0, 1000000000)
      ->capture_default_str();
  std::string asm_path;
  app.add_option("--dump-asm", asm_path, "write the CPU kernels' assembly to this file")->check(output_file());
  std::string host_target, host_cpu;
  app.add_option("--host-target", host_target,
                 "compile the CPU kernels for another machine: aarch64-linux-gnu (Zynq UltraScale+, Kria, "
                 "Raspberry Pi 3/4), armv7a-linux-gnueabihf (Zynq-7000: Pynq-Z1/Z2), or any LLVM triple; run the "
                 "model there with a runtime built for it (docs/cross.md)");
  app.add_option("--host-cpu", host_cpu,
                 "the CPU the kernels are tuned for and may use the extensions of (an LLVM CPU name: znver3, "
                 "cortex-a72, ...; default: this machine's, or with --host-target the board's: cortex-a53, "
                 "cortex-a9)");
  if (int rc = parse(app, args); rc >= 0) return rc;
  // What people read goes to stdout, or to stderr when stdout carries the JSON.
  std::ostream& text = as_json ? std::cerr : std::cout;

  // Every input is checked before the first expensive step (import, calibration, compilation).
#ifndef LOOM_HAVE_TUNE
  if (!tuning_log.empty())
    LOOM_THROW(Error, "--tuning-log needs a loom built with the tuner (libxgboost-dev is optional; LLVM is not)");
#endif
  for (const char* opt : {"--calibrate", "--calibration-mode", "--quantize-first-conv", "--per-channel", "--holdout",
                          "--input-distribution", "--min-accuracy", "--precision", "--layer-weight-bits",
                          "--mixed-precision", "--weight-exponents"})
    if (quant.empty() && app.count(opt)) LOOM_THROW(Error, opt, " needs --quantize");
  if (exact_rounding && qdq_path.empty())
    LOOM_THROW(Error, "--exact-rounding is for the QDQ export (--export-onnx-qdq)");
  if (!qdq_path.empty() && quant != "int8")
    LOOM_THROW(Error, export_only ? "--onnx-qdq writes an int8 model: --quantize int8 (the default)"
                                  : "--export-onnx-qdq writes the int8 model: it needs --quantize int8");
  const bool to_accel = has_target(target, "accel"), to_cuda = has_target(target, "cuda");
  if (!config_path.empty() && !to_accel) LOOM_THROW(Error, "--config needs --target accel");
  if (app.count("--cuda-arch") && !to_cuda) LOOM_THROW(Error, "--cuda-arch needs --target cuda");
  if (!distribution.empty() && std::filesystem::is_directory(calibrate) &&
      (holdout == "auto" || holdout == "0" || std::filesystem::is_directory(holdout)))
    LOOM_THROW(Error, "--input-distribution draws random inputs, and --calibrate '", calibrate,
               "' is a folder (with --holdout ", holdout, " no input is drawn)");
  std::optional<frontend::InputDistribution> chosen;
  if (!distribution.empty()) chosen = frontend::InputDistribution::parse(distribution, "--input-distribution");
  if (!quant.empty()) frontend::check_calibration_options(calibrate, holdout);
  set_threads(threads);
  auto names = graph::builtin_model_names();
  bool builtin = std::find(names.begin(), names.end(), model) != names.end() && !std::filesystem::exists(model);
  if (!builtin && !std::filesystem::is_regular_file(model))
    LOOM_THROW(Error, "'", model, "' is neither a file nor a built-in model (resnet18, resnet50, mobilenet_v2, mlp)");
  if (out.empty()) out = std::filesystem::path(model).filename().replace_extension(".loom").string();
  frontend::OnnxImportOptions io;
  for (auto& s : shapes) {
    auto eq = s.find('=');
    if (eq == std::string::npos) LOOM_THROW(Error, "--input-shape '", s, "' must be NAME=DxDx...");
    io.input_shapes[s.substr(0, eq)] = parse_shape(s.substr(eq + 1), "--input-shape");
  }
  for (auto& v : shape_vars) io.shape_vars.push_back(parse_shape_var(v));
  for (auto& b : binds) {
    auto eq = b.find('=');
    if (eq == std::string::npos || eq == 0) LOOM_THROW(Error, "--bind '", b, "' must be NAME=FILE.npy");
    if (builtin) LOOM_THROW(Error, "--bind is for ONNX models; '", model, "' is built in");
    io.input_values[b.substr(0, eq)] = runtime::read_npy(b.substr(eq + 1));
  }
  graph::BuildOptions bo;
  bo.pipeline.dump = dump;
  bo.pipeline.verify_each = verify_each;
  bo.pipeline.layout.winograd = !no_winograd;
  bo.min_parallel_work = min_parallel_work;
  bo.llvm.dump_asm_path = asm_path;
  bo.llvm.target_triple = host_target;
  bo.llvm.target_cpu = host_cpu;
  // An unknown triple or CPU is an error now, not after the import.
  const codegen::TargetInfo cpu_target = codegen::target_info(bo.llvm);
  const bool cross = !host_target.empty() && cpu_target.triple != codegen::target_info({}).triple;
  if (to_accel) bo.accel = config_path.empty() ? accel::default_config() : accel::AccelConfig::load(config_path);
  if (to_cuda) {
    bo.cuda.emplace();
    bo.cuda->arch = cuda_arch;
  }
  if (!placement_path.empty()) bo.placement = graph::read_placement(placement_path);
  // How --quantize will quantize, checked against the targets before anything expensive.
  graph::QuantizeOptions qo;
  qo.mode = graph::parse_calibration_mode(mode);
  qo.simulated = quant == "int8-simulated";
  qo.skip_first_conv = !first_conv;
  qo.per_channel = per_channel;
  qo.weight_exponents = graph::parse_weight_exponents(weight_exponents);
  if (!layer_bits_path.empty()) qo.layer_weight_bits = read_layer_weight_bits(layer_bits_path);
  if (!layer_bits_path.empty() && app.count("--mixed-precision"))
    LOOM_THROW(Error, "--layer-weight-bits gives every layer's width and --mixed-precision chooses them: use one");
  graph::follow_targets(qo, bo, precision, "--precision");
  qo.validate();
  if (app.count("--mixed-precision")) {
    if (!(mixed_budget > 0)) LOOM_THROW(Error, "--mixed-precision: the budget is a cosine in (0, 1], got 0");
    const int wide = bo.accel ? bo.accel->weight_widths().back() : 8;
    if (wide <= qo.weight_bits)
      LOOM_THROW(Error, "--mixed-precision widens layers to ", wide, "-bit weights and the model's are ",
                 qo.weight_bits,
                 "-bit already: give --precision with narrower weights (W4A8), or --target "
                 "accel with a config whose wgt_bits is below 8");
  }
  graph::check_targets(bo, quant.empty() ? nullptr : &qo);
  if (!quiet) bo.progress = [](const std::string& m) { std::cerr << "  " << m << "\n"; };
#ifdef LOOM_HAVE_TUNE
  tune::LogUse log_use;
  if (!tuning_log.empty())
    log_use = tune::apply_log(
        bo, std::make_shared<const tune::TuningLog>(tuning_log));  // read once, checked before the build
#endif

  auto t0 = std::chrono::steady_clock::now();
  graph::Graph g = builtin ? graph::builtin_model(model, batch, image) : frontend::import_onnx(model, io);
  size_t imported = g.nodes.size();
  nlohmann::json result = {{"model", model}, {"output", out}, {"target", target}};
  result["cpu_target"] = {
      {"triple", cpu_target.triple}, {"cpu", cpu_target.cpu}, {"extensions", cpu_target.isa_features}};
  std::optional<graph::QuantizeReport> report;
  std::optional<graph::BuildResult> built;  // the CPU build, when the accuracy report compiled it
  std::ostringstream summary;
  if (!quant.empty()) {
    frontend::CalibrationSets sets = frontend::calibration_sets(calibrate, holdout, g, chosen);
    if (!quiet)
      std::cerr << "  quantizing: calibrating on " << sets.calibration_source << " (" << mode << ")"
                << (sets.held_out.empty() ? "" : "; checking on " + sets.held_out_source) << "\n";
    // For the CPU the report runs the model this command writes: compiled once, for both (not
    // when it is for another machine).
    graph::QuantizedBuild cpu_build;
    if (target == "cpu" && !cross && !export_only)
      cpu_build = [&](const graph::Graph& quantized) {
        built.emplace(graph::build(quantized, bo));
        return built->file;
      };
    if (app.count("--mixed-precision")) {
      const int wide = bo.accel ? bo.accel->weight_widths().back() : 8;
      if (!quiet)
        std::cerr << "  mixed precision: weights of " << qo.weight_bits << " or " << wide
                  << " bits per layer, for a cosine of " << mixed_budget << " on the calibration inputs\n";
      graph::WeightBitsChoice choice = graph::choose_weight_bits(g, sets.calibration, qo, wide, mixed_budget);
      if (!quiet) std::cerr << choice.str();
      qo.layer_weight_bits = choice.layer_weight_bits;
      summary << "  mixed precision: " << choice.layer_weight_bits.size() << " of " << choice.sensitivity.size()
              << " layers at " << wide << "-bit weights (calibration cosine " << choice.cosine << ", every layer at "
              << qo.weight_bits << " bits: " << choice.narrow_cosine << ")" << (choice.met ? "" : ", budget NOT met")
              << "\n";
    }
    graph::QuantizeResult q = graph::quantize_checked(std::move(g), sets.calibration, sets.held_out, qo, {}, cpu_build);
    if (!quiet) std::cerr << q.str();
    report = std::move(q.report);
    report->calibration.source = sets.calibration_source;
    if (report->held_out) report->held_out->source = sets.held_out_source;
    summary << "  quantized (" << quant
            << (per_channel              ? " per-channel"
                : qo.channel_exponents() ? " per-channel power-of-two"
                                         : "")
            << (qo.weight_bits != 8 || qo.activation_bits != 8
                    ? ", weights " + std::to_string(qo.weight_bits) + "-bit, activations " +
                          std::to_string(qo.activation_bits) + "-bit"
                    : "")
            << ", " << mode << " calibration on " << sets.calibration.size() << " inputs): " << q.quantized_layers
            << " conv2d/dense layers int8, " << q.float_layers << " float\n"
            << report->str();
    result["quantization"] = nlohmann::json::parse(report->to_json());
    result["quantization"]["layer_weight_bits"] = qo.layer_weight_bits;
    result["quantization"]["quantized_layers"] = q.quantized_layers;
    result["quantization"]["float_layers"] = q.float_layers;
    result["quantization"]["weight_bits"] = qo.weight_bits;
    result["quantization"]["activation_bits"] = qo.activation_bits;
    for (const std::string& w : report->warnings) std::cerr << "warning: " << w << "\n";
    if (!report->warnings.empty()) std::cerr << kQuantizeAdvice << "\n";
    if (app.count("--min-accuracy") && !(report->accuracy() >= min_accuracy)) {
      text << summary.str();
      if (as_json) std::cout << result.dump(1) << "\n";
      LOOM_THROW(Error, "--min-accuracy ", min_accuracy, ": the quantized model's accuracy is ", report->accuracy(),
                 " on the ", report->judged().set, " inputs; nothing written");
    }
    if (!qdq_path.empty()) {
      // The export is checked against the int8 model on this CPU: the one this command compiles,
      // or one built for the check.
      std::optional<runtime::ModelFile> int8_model;
      if (built) {
        int8_model = built->file;
      } else if (!cross) {
        graph::BuildOptions cpu;
        cpu.llvm = bo.llvm;
        cpu.pipeline.layout.winograd = bo.pipeline.layout.winograd;
        int8_model = graph::build(q.graph, cpu).file;
      }
      const auto& check = sets.held_out.empty() ? sets.calibration : sets.held_out;
      if (!export_qdq(q, qdq_path, exact_rounding, int8_model ? &*int8_model : nullptr, check, summary, result)) {
        text << summary.str();
        if (as_json) std::cout << result.dump(1) << "\n";
        LOOM_THROW(Error, "ONNX Runtime's outputs on '", qdq_path,
                   "' differ from Loom's int8 model beyond rounding (figures above); the file is written");
      }
    }
    if (export_only) {
      text << summary.str();
      if (as_json) std::cout << result.dump(1) << "\n";
      return 0;
    }
    g = std::move(q.graph);
  }
  graph::BuildResult r = built ? std::move(*built) : graph::build(std::move(g), bo);
  if (!asm_path.empty() && r.file.library.empty())
    LOOM_THROW(Error,
               "--dump-asm writes the CPU kernels' assembly, and every kernel of this model runs on the GPU "
               "(the CUDA program is PTX)");
  runtime::save_model_file(out, r.file);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  text << "compiled " << model << " -> " << out << " in " << std::fixed << std::setprecision(2) << secs << " s\n"
       << "  graph: " << imported << " nodes imported, " << r.graph.nodes.size() << " after optimization; "
       << r.executor_graph.kernels.size() << " kernel calls, " << r.kernels.size() << " distinct kernels\n"
       << (verify_each ? "  graph verified (structure and types) after each of its " +
                             std::to_string(graph::graph_pass_names().size()) + " passes\n"
                       : std::string())
       << "  memory: " << r.memory.planned_bytes() / 1024 << " KiB of intermediates planned vs "
       << r.memory.unplanned_bytes / 1024 << " KiB unplanned; parameters " << r.file.params_bytes / 1024 << " KiB\n"
       << (host_target.empty()
               ? std::string()
               : "  CPU kernels for " + cpu_target.triple + ", cpu " + cpu_target.cpu +
                     (cpu_target.isa_features.empty() ? std::string()
                                                      : " (" + comma_list(cpu_target.isa_features) + ")") +
                     (cross ? "; run it with a runtime built for that machine (docs/cross.md)" : "") + "\n")
       << summary.str();
  text.unsetf(std::ios::fixed);
  result["seconds"] = secs;
  result["graph"] = {{"imported_nodes", imported},
                     {"nodes", r.graph.nodes.size()},
                     {"kernel_calls", r.executor_graph.kernels.size()},
                     {"kernels", r.kernels.size()}};
  result["memory"] = {{"planned_bytes", r.memory.planned_bytes()},
                      {"unplanned_bytes", r.memory.unplanned_bytes},
                      {"params_bytes", r.file.params_bytes}};
  result["outputs"] = nlohmann::json::array();
  for (int o : r.graph.outputs) result["outputs"].push_back(r.graph.node(o).name);
#ifdef LOOM_HAVE_TUNE
  if (!tuning_log.empty()) {
    text << "  tuning log: " << log_use.cpu->found << " of " << log_use.cpu->looked_up
         << " blocked conv2d kernels tuned for this machine"
         << (log_use.cpu->other_targets.empty()
                 ? std::string()
                 : " (" + log_use.cpu->target + "); the log has entries of the others tuned for " +
                       comma_list(std::vector<std::string>(log_use.cpu->other_targets.begin(),
                                                           log_use.cpu->other_targets.end())) +
                       ": entries are per machine and thread count, and `loom compile --threads N` looks up N")
         << (bo.accel
                 ? ", " + std::to_string(log_use.accel->found) + " of " + std::to_string(log_use.accel->looked_up) +
                       " accelerator convs tuned for config '" + bo.accel->name + "'"
                 : std::string())
         << "\n";
    result["tuning_log"] = {{"cpu_found", log_use.cpu->found},
                            {"cpu_looked_up", log_use.cpu->looked_up},
                            {"cpu_target", log_use.cpu->target},
                            {"cpu_other_targets", log_use.cpu->other_targets}};
  }
#endif
  if (bo.cuda) {
    size_t on_gpu = 0;
    for (const auto& k : r.executor_graph.kernels) on_gpu += k.device == runtime::KernelDevice::Cuda;
    text << "  CUDA program (" << bo.cuda->arch << "): " << r.file.cuda_program.size() / 1024 << " KiB, " << on_gpu
         << " of " << r.executor_graph.kernels.size() << " kernel calls";
    if (r.cpu_fallback.empty())
      text << "\n";
    else if (quiet)
      text << "; " << r.cpu_fallback.size() << " on the CPU (without -q: which and why)\n";
    else
      text << "; on the CPU:\n";
    if (!quiet)
      for (auto& k : r.cpu_fallback) text << "    " << k << "\n";
    result["cuda"] = {{"arch", bo.cuda->arch},
                      {"program_bytes", r.file.cuda_program.size()},
                      {"kernel_calls", on_gpu},
                      {"cpu_fallback", r.cpu_fallback}};
  }
  if (bo.accel) {
    text << "  accelerator (config '" << bo.accel->name << "'): " << r.accel_report.offloaded << " layers, image "
         << r.file.accel_image.size() / 1024 << " KiB";
    if (r.accel_report.kept.empty())
      text << "\n";
    else if (quiet)
      text << "; " << r.accel_report.kept.size() << " kept on the CPU (without -q: which and why)\n";
    else
      text << "; on the CPU:\n";
    if (!quiet)
      for (auto& k : r.accel_report.kept) text << "    " << k << "\n";
    result["accelerator"] = {{"config", bo.accel->name},
                             {"offloaded", r.accel_report.offloaded},
                             {"image_bytes", r.file.accel_image.size()},
                             {"kept_on_cpu", r.accel_report.kept}};
  }
  if (as_json) std::cout << result.dump(1) << "\n";
  return 0;
#endif
}

namespace {

// Per kernel: where it ran, host time, and for accelerator kernels cycles, GEMM use (multiply-
// accumulates per cycle over the GEMM core's peak) and DMA bytes.
nlohmann::json kernel_table_json(const runtime::GraphExecutor& ex, const std::vector<double>& times,
                                 const std::optional<accel::AccelConfig>& cfg) {
  nlohmann::json rows = nlohmann::json::array();
  uint64_t cycles = 0;
  double host = 0;
  for (size_t k = 0; k < ex.kernels().size(); ++k) {
    const auto& call = ex.kernels()[k];
    nlohmann::json row = {{"kernel", call.func},
                          {"node", call.node},
                          {"device", runtime::device_name(call.device)},
                          {"host_ms", k < times.size() ? times[k] * 1e3 : 0.0}};
    if (call.device == runtime::KernelDevice::Accel) {
      const auto& s = ex.accel_stats()[k];
      row["cycles"] = s.cycles;
      row["gemm_macs"] = s.gemm_macs;
      row["dma_bytes"] = s.dma_bytes;
      double peak = double(cfg->batch) * cfg->block_in * cfg->block_out;
      if (s.cycles) row["gemm_utilization"] = double(s.gemm_macs) / (peak * double(s.cycles));
      cycles += s.cycles;
    } else {
      host += k < times.size() ? times[k] * 1e3 : 0.0;
    }
    rows.push_back(row);
  }
  return {{"model", ex.model_name()}, {"kernels", rows}, {"accel_cycles", cycles}, {"cpu_host_ms", host}};
}

void print_kernel_table(const runtime::GraphExecutor& ex, const std::vector<double>& times,
                        const std::optional<accel::AccelConfig>& cfg) {
  nlohmann::json t = kernel_table_json(ex, times, cfg);
  std::cout << "  device   host ms      cycles  gemm use   DMA bytes  kernel (node)\n";
  for (auto& r : t["kernels"]) {
    bool acc = r["device"] == "accel";
    std::cout << "  " << std::left << std::setw(6) << r["device"].get<std::string>() << std::right << std::setw(10)
              << std::setprecision(3) << r["host_ms"].get<double>();
    if (acc) {
      std::cout << std::setw(12) << r["cycles"].get<uint64_t>();
      if (r.contains("gemm_utilization"))
        std::cout << std::setw(9) << std::setprecision(1) << r["gemm_utilization"].get<double>() * 100 << "%";
      else
        std::cout << std::setw(10) << "-";
      std::cout << std::setw(12) << r["dma_bytes"].get<uint64_t>();
    } else {
      std::cout << std::setw(34) << "";
    }
    std::cout << "  " << r["kernel"].get<std::string>() << " (" << r["node"].get<std::string>() << ")\n";
  }
  if (cfg)
    std::cout << "  accelerator: " << t["accel_cycles"].get<uint64_t>()
              << " cycles; CPU kernels: " << std::setprecision(3) << t["cpu_host_ms"].get<double>() << " ms\n";
}

std::string describe_values(const NDArray& a) {
  std::ostringstream os;
  os << a.describe() << " [";
  for (int64_t i = 0; i < std::min<int64_t>(a.numel(), 6); ++i) os << (i ? ", " : "") << a.get_as_double(i);
  os << (a.numel() > 6 ? ", ...]" : "]");
  return os.str();
}

}  // namespace

// Every output as <folder>/<name>.npy: the name with characters outside [A-Za-z0-9._-] as '_',
// "output<k>" if that leaves nothing, and '_' added until it differs from the names before.
static void write_outputs_to_folder(const runtime::GraphExecutor& ex, const std::string& folder, std::ostream& text) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec || !std::filesystem::is_directory(folder))
    LOOM_THROW(Error, "--output-dir: cannot create the folder '", folder, "'");
  std::set<std::string> used;
  for (size_t o = 0; o < ex.num_outputs(); ++o) {
    std::string name = ex.output_spec(o).name;
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
    if (name.empty() || name == "." || name == "..") name = "output" + std::to_string(o);
    while (!used.insert(name).second) name += "_";  // y, y_, y__: never one file twice
    std::string path = (std::filesystem::path(folder) / (name + ".npy")).string();
    runtime::write_npy(path, ex.get_output(o));
    text << "wrote output " << o << " to " << path << "\n";
  }
}

int run_model_cmd(const std::vector<std::string>& args) {
  CLI::App app{"Run a compiled model (.loom): on the CPU, with accelerator kernels on --backend fsim|rtl", "loom run"};
  std::string model, output_dir;
  std::vector<std::string> inputs, outputs, references;
  int threads = 0;
  double tolerance = 1e-4;
  uint64_t seed = 1;
  bool profile = false;
  app.add_option("model", model, "compiled model (.loom)")->required()->check(CLI::ExistingFile);
  app.add_option("-i,--input", inputs, "input .npy files, in the model's input order (default: random inputs)")
      ->check(CLI::ExistingFile);
  app.add_option("-o,--output", outputs, "write output k to the k-th -o .npy file (repeat -o for more outputs)")
      ->check(output_file());
  app.add_option("--output-dir", output_dir, "write every output to this folder as <output name>.npy");
  app.add_option("--reference", references,
                 "compare output k with the k-th --reference .npy (error relative to its largest magnitude)")
      ->check(CLI::ExistingFile);
  uint64_t max_host = 0;
  number_option(app, "--max-host-memory", max_host,
                "refuse a model whose activation buffers need more bytes (default: physical memory)", 1, UINT64_MAX);
  number_option(app, "--tolerance", tolerance, "largest relative error --reference accepts", 0.0, 1.0)
      ->capture_default_str();
  number_option(app, "--threads", threads, "threads (default: all cores)", 1, 1024);
  number_option(app, "--seed", seed, "seed of the random inputs", 0, UINT64_MAX)->capture_default_str();
  app.add_flag("--profile", profile,
               "print the time of every kernel (and, for accelerator kernels, cycles, GEMM use, DMA bytes)");
  bool as_json = false, allow_non_finite = false;
  app.add_flag("--json", as_json,
               "print the per-kernel table, the outputs and the --reference comparisons as one JSON object on stdout; "
               "everything else goes to stderr");
  app.add_flag("--allow-non-finite", allow_non_finite,
               "let NaN and infinity into a quantized model's inputs (refused by default: int8 layers turn them into "
               "plausible-looking numbers)");
  std::string energy_name;
  app.add_option("--energy", energy_name,
                 "energy per inference of the accelerator kernels by this table, with its breakdown: asic-45nm, "
                 "xc7-28nm, xcup-16nm or a JSON file (docs/energy.md)");
  BackendOptions bopt;
  add_backend_options(app, bopt);
  std::string board_config;
  app.add_option("--config", board_config,
                 "the accelerator config file with this machine's backend sections (e.g. \"zynq\": {\"uio\": ...}, "
                 "\"xrt\": {\"xclbin\": ...}); its fields must equal the model's")
      ->check(CLI::ExistingFile)
      ->group("Backend");
  std::string board_name;
  app.add_option("--board", board_name,
                 "estimate the latency on this board (pynq-z1, zcu104, kv260): accelerator kernels on the perf backend "
                 "at the board's clock and bandwidth, CPU kernels by a roofline on its Arm cores (docs/fpga.md)");
  std::vector<std::string> compare;
  auto* o_compare = add_compare_option(app, compare,
                                       "run the accelerator kernels on two backends (e.g. fsim,rtl) and report the "
                                       "first instruction, in the first kernel, whose effect differs");
  if (int rc = parse(app, args); rc >= 0) return rc;
  set_threads(threads);
  if (o_compare->count() && any_backend_option(bopt))
    LOOM_THROW(ConfigError,
               "--compare runs each backend with its default options: leave out --backend and the simulator options");
  // --compare reports where two backends diverge; it writes and checks no outputs.
  for (const char* opt : {"--output", "--output-dir", "--reference", "--profile", "--json"})
    if (o_compare->count() && app.count(opt))
      LOOM_THROW(Error,
                 "--compare reports the first instruction where two backends differ and writes no outputs: ", opt,
                 " does not go with it (run once per backend with ", opt, " instead)");
  std::ostream& text = as_json ? std::cerr : std::cout;
  const accel::Board* board = board_name.empty() ? nullptr : &accel::board(board_name);
  if (board && o_compare->count()) LOOM_THROW(Error, "--board estimates one run: it does not go with --compare");
  if (board && bopt.o_backend->count() && bopt.backend != "perf")
    LOOM_THROW(Error, "--board times the accelerator kernels on the perf backend, not ", bopt.backend,
               ": leave out --backend or give --backend perf");
  if (board) bopt.backend = "perf";
  runtime::ModelFile file = runtime::load_model_file(model);
  // The inputs: the --input files, or random values from --seed.
  auto set_inputs = [&](runtime::GraphExecutor& ex) {
    if (!inputs.empty() && inputs.size() != ex.num_inputs())
      LOOM_THROW(Error, "the model has ", ex.num_inputs(), " inputs, ", inputs.size(), " --input files given");
    for (size_t i = 0; i < ex.num_inputs(); ++i) {
      NDArray a;
      if (inputs.empty()) {
        a = NDArray::empty(ex.input_spec(i).shape, ex.input_spec(i).dtype);
        a.fill_random(seed + i);
      } else {
        a = runtime::read_npy(inputs[i]);
      }
      ex.set_input(i, a);
    }
  };
  if (o_compare->count()) {
    if (file.accel_image.empty())
      LOOM_THROW(Error, "'", model,
                 "' has no accelerator kernels: --compare needs a model compiled with --target accel");
    const accel::AccelConfig c =
        accel::AccelConfig::from_json(runtime::AccelImage::parse(file.accel_image, model).config_json, model);
    std::vector<sim::CommitRecord> records[2];
    std::string errors[2];
    for (int s = 0; s < 2; ++s) {
      BackendOptions side;
      side.backend = compare[size_t(s)];
      runtime::ExecutorOptions o;
      o.accel_backend = side.backend;
      o.allow_non_finite = allow_non_finite;
      o.accel_config_json = backend_config_json(side, c);
      auto ex = runtime::GraphExecutor::from_model_file(file, "'" + model + "'", o);
      set_inputs(ex);
      records[s] = sim::run_recorded(
          ex.accel_device(), side.backend, [&] { ex.run(); }, errors[s], "--compare: ");
    }
    return report_divergence(model, compare, records, errors);
  }
  runtime::ExecutorOptions eo;
  eo.accel_backend = bopt.backend;
  eo.max_host_bytes = max_host;
  eo.allow_non_finite = allow_non_finite;
  std::optional<accel::AccelConfig> cfg;
  if (!file.accel_image.empty()) {
    cfg = accel::AccelConfig::from_json(runtime::AccelImage::parse(file.accel_image, model).config_json, model);
    if (!board_config.empty()) {
      accel::AccelConfig given = load_config(board_config);
      if (!(given == *cfg))
        LOOM_THROW(ConfigError, "'", model, "' was compiled for config '", cfg->name, "', which differs from ",
                   board_config);
      cfg->backend_sections = given.backend_sections;
    }
    eo.accel_config_json = backend_config_json(bopt, *cfg);
    if (board) {  // the board's bandwidth, unless --perf.dram_bytes_per_cycle says otherwise
      nlohmann::json j = nlohmann::json::parse(eo.accel_config_json);
      if (!j["perf"].contains("dram_bytes_per_cycle"))
        j["perf"]["dram_bytes_per_cycle"] = accel::board_dram_bytes_per_cycle(*cfg, *board, board->pl_clock_mhz);
      eo.accel_config_json = j.dump();
    }
  } else if (any_backend_option(bopt) || !board_config.empty()) {
    LOOM_THROW(Error, "'", model,
               "' has no accelerator kernels: --backend, --config and the backend options need a model compiled with "
               "--target accel");
  }
  std::optional<accel::EnergyTable> energy;
  if (!energy_name.empty()) {
    if (!cfg)
      LOOM_THROW(Error, "'", model,
                 "' has no accelerator kernels: --energy needs a model compiled with --target accel");
    energy = accel::energy_table(energy_name);
  }
  if (as_json || cfg || board) profile = true;  // with an accelerator, the per-kernel table is what its user reads
  auto ex = runtime::GraphExecutor::from_model_file(file, "'" + model + "'", eo);
  if (outputs.size() > ex.num_outputs() || references.size() > ex.num_outputs())
    LOOM_THROW(Error, "the model has ", ex.num_outputs(), " outputs, ", std::max(outputs.size(), references.size()),
               " -o or --reference files given");
  set_inputs(ex);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<double> times = profile ? ex.run_profiled() : std::vector<double>{};
  if (!profile) ex.run();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json result = kernel_table_json(ex, times, cfg);
  if (!as_json) {
    std::cout << "ran " << (ex.model_name().empty() ? model : ex.model_name()) << " (" << ex.kernels().size()
              << " kernels, " << runtime::num_threads() << " threads"
              << (cfg ? ", accelerator on " + bopt.backend : std::string()) << ") in " << std::fixed
              << std::setprecision(3) << ms << " ms\n";
    if (profile) print_kernel_table(ex, times, cfg);
  }
  if (energy) {
    accel::EnergyCounts counts;
    for (size_t k = 0; k < ex.kernels().size(); ++k)
      if (ex.kernels()[k].device == runtime::KernelDevice::Accel)
        counts.add(ex.accel_stats()[k].counters, ex.accel_stats()[k].cycles);
    accel::EnergyReport e = accel::estimate_energy(counts, *cfg, *energy);
    text << "energy per inference on the accelerator (table " << energy->name << ": " << energy->source
         << "): " << std::fixed << std::setprecision(3) << e.total_pj() * 1e-6 << " uJ over " << counts.cycles
         << " cycles\n"
         << e.summary();
    // An untimed backend counts no cycles: the total leaves out static energy, and says so.
    if (counts.cycles == 0)
      text << "  (" << bopt.backend << " counts no cycles, so no static energy: --backend perf or rtl times the run)\n";
    text.unsetf(std::ios::fixed);
    result["energy"] = nlohmann::json::parse(e.to_json());
    result["energy"]["source"] = energy->source;
    result["energy"]["cycles"] = counts.cycles;
  }
  if (board) {
    const runtime::ExecutorGraph graph =
        runtime::ExecutorGraph::from_json(file.graph_json, file.params_bytes, "'" + model + "'");
    accel::BoardEstimate e = accel::estimate_on_board(kernel_work(graph, ex), *board);
    print_board_estimate(text, e, *board, cfg);
    result["board_estimate"] = board_estimate_json(e, *board);
  }
  result["milliseconds"] = ms;
  result["threads"] = runtime::num_threads();
  result["outputs"] = nlohmann::json::array();
  std::cout.unsetf(std::ios::fixed);
  for (size_t o = 0; o < ex.num_outputs(); ++o) {
    NDArray y = ex.get_output(o);
    text << "output " << o << " '" << ex.output_spec(o).name << "': " << describe_values(y) << "\n";
    result["outputs"].push_back({{"name", ex.output_spec(o).name}, {"dtype", y.dtype().str()}, {"shape", y.shape()}});
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    runtime::write_npy(outputs[o], ex.get_output(o));
    result["outputs"][o]["file"] = outputs[o];
  }
  if (!output_dir.empty()) write_outputs_to_folder(ex, output_dir, text);
  bool all_match = true;
  for (size_t o = 0; o < references.size(); ++o) {
    NDArray want = runtime::read_npy(references[o]), got = ex.get_output(o);
    if (want.shape() != got.shape())
      LOOM_THROW(Error, "reference '", references[o], "' has shape ", shape_str(want.shape()), ", output ", o, " has ",
                 shape_str(got.shape()));
    double scale = 0, err = 0, dot = 0, ww = 0, gg = 0;
    for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(want.get_as_double(i)));
    for (int64_t i = 0; i < want.numel(); ++i) {
      double w = want.get_as_double(i), g = got.get_as_double(i);
      // NaN where the reference has none (or the reverse) is an infinite error; std::max would drop it.
      err = std::isnan(w) != std::isnan(g) ? INFINITY : std::isnan(w) ? err : std::max(err, std::fabs(w - g));
      dot += w * g, ww += w * w, gg += g * g;
    }
    double rel = err / std::max(scale, 1e-30);
    double cosine = ww == 0 && gg == 0 ? 1 : ww == 0 || gg == 0 ? 0 : dot / std::sqrt(ww * gg);
    text << "output " << o << ": max |error| vs reference: " << err << " (" << rel << " of the largest magnitude "
         << scale << "); cosine " << cosine << "\n";
    bool ok = rel <= tolerance;
    result["outputs"][o]["reference"] = {
        {"file", references[o]},
        {"max_error", std::isfinite(err) ? nlohmann::json(err) : nlohmann::json()},
        {"relative_error", std::isfinite(rel) ? nlohmann::json(rel) : nlohmann::json()},
        {"cosine", std::isfinite(cosine) ? nlohmann::json(cosine) : nlohmann::json()},
        {"tolerance", tolerance},
        {"ok", ok}};
    if (!ok) {
      text << "MISMATCH: above the tolerance " << tolerance << " (output " << o << ")\n";
      all_match = false;
    }
  }
  if (as_json) std::cout << result.dump(1) << "\n";
  if (!all_match) return 1;
  if (!references.empty()) text << "matches the reference\n";
  return 0;
}

namespace {

int bench_model_cmd(const std::vector<std::string>& args) {
  CLI::App app{"Time a compiled model (.loom) on the CPU: latency percentiles", "loom bench"};
  std::string model;
  int threads = 0, reps = 20, warmup = runtime::GraphExecutor::kSettlingRuns;
  app.add_option("model", model, "compiled model (.loom)")->required()->check(CLI::ExistingFile);
  number_option(app, "--threads", threads, "threads (default: all cores)", 1, 1024);
  number_option(app, "--reps", reps, "timed runs", 1, 100000)->capture_default_str();
  number_option(app, "--warmup", warmup, "untimed runs first", 0, 1000)->capture_default_str();
  if (int rc = parse(app, args); rc >= 0) return rc;
  set_threads(threads);
  auto ex = runtime::GraphExecutor::load(model);
  for (size_t i = 0; i < ex.num_inputs(); ++i) {
    NDArray a = NDArray::empty(ex.input_spec(i).shape, ex.input_spec(i).dtype);
    a.fill_random(1 + i);
    ex.set_input(i, a);
  }
  for (int i = 0; i < warmup; ++i) ex.run();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    ex.run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<size_t>(p * (ms.size() - 1) + 0.5))]; };
  double mean = 0;
  for (double v : ms) mean += v / ms.size();
  std::cout << std::fixed << std::setprecision(3) << (ex.model_name().empty() ? model : ex.model_name()) << " on "
            << runtime::num_threads() << " threads, " << reps << " runs: min " << ms.front() << " ms, p50 " << pct(0.5)
            << " ms, p90 " << pct(0.9) << " ms, p99 " << pct(0.99) << " ms, mean " << mean << " ms\n";
  return 0;
}

}  // namespace

int compile_cmd(const std::vector<std::string>& args) { return compile_or_export(args, /*export_only=*/false); }

LOOM_REGISTER_COMMAND("compile", "compile a model (ONNX) for the CPU into one .loom file", compile_cmd);
LOOM_REGISTER_COMMAND("bench", "time a compiled model: latency percentiles", bench_model_cmd);

}  // namespace loom::tools
