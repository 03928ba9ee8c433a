#include "loom/frontend/load.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <random>
#include <sstream>

#include "loom/frontend/onnx.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/error.h"
#include "loom/runtime/npy.h"

namespace loom::frontend {

graph::Graph load_model(const std::string& model, int64_t batch, int64_t image) {
  auto names = graph::builtin_model_names();
  bool builtin = std::find(names.begin(), names.end(), model) != names.end() && !std::filesystem::exists(model);
  if (!builtin && !std::filesystem::is_regular_file(model))
    LOOM_THROW(ModelError, "'", model,
               "' is neither a file nor a built-in model (resnet18, resnet50, mobilenet_v2, mlp)");
  return builtin ? graph::builtin_model(model, batch, image) : import_onnx(model, {});
}

InputDistribution InputDistribution::parse(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) {
    LOOM_THROW(Error, what, ": '", text, "' ", why,
               " (expected normal(MEAN, STD), uniform(LO, HI), normal or uniform)");
  };
  InputDistribution d;
  std::string t;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) t += c;
  if (t == "normal") return d;
  if (t == "uniform") return {Kind::Uniform, -1, 1};
  size_t open = t.find('(');
  if (open == std::string::npos || t.back() != ')') bad("is not a distribution");
  std::string kind = t.substr(0, open), args = t.substr(open + 1, t.size() - open - 2);
  if (kind == "normal")
    d.kind = Kind::Normal;
  else if (kind == "uniform")
    d.kind = Kind::Uniform;
  else
    bad("names no known distribution");
  size_t comma = args.find(',');
  if (comma == std::string::npos) bad("needs two numbers");
  double v[2];
  std::string parts[2] = {args.substr(0, comma), args.substr(comma + 1)};
  for (int i = 0; i < 2; ++i) {
    size_t used = 0;
    try {
      v[i] = std::stod(parts[i], &used);
    } catch (const std::exception&) {
      used = std::string::npos;
    }
    if (used != parts[i].size() || !std::isfinite(v[i])) bad("has '" + parts[i] + "', not a finite number");
  }
  d.a = v[0];
  d.b = v[1];
  if (d.kind == Kind::Normal && !(d.b > 0)) bad("needs a positive standard deviation");
  if (d.kind == Kind::Uniform && !(d.a < d.b)) bad("needs LO < HI");
  return d;
}

std::string InputDistribution::str() const {
  std::ostringstream os;
  os << (kind == Kind::Normal ? "normal(" : "uniform(") << a << ", " << b << ")";
  return os.str();
}

void InputDistribution::fill(NDArray& arr, uint64_t seed) const {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(a, b);
  std::uniform_real_distribution<double> uniform(a, b);
  for (int64_t i = 0; i < arr.numel(); ++i) {
    double v = kind == Kind::Normal ? normal(gen) : uniform(gen);
    arr.set_from_double(i, arr.dtype().is_float() ? v : std::nearbyint(v));
  }
}

InputDistribution input_distribution(const graph::Graph& g, size_t k, const std::optional<InputDistribution>& chosen) {
  if (chosen) return *chosen;
  const graph::Node& in = g.node(g.inputs.at(k));
  const std::string key = "loom.input_distribution." + in.name;
  if (auto it = g.metadata.find(key); it != g.metadata.end()) {
    try {
      return InputDistribution::parse(it->second, "metadata '" + key + "'");
    } catch (const Error& e) {
      LOOM_THROW(ModelError, "model '", g.name, "': ", e.what());
    }
  }
  if (in.type.dtype.is_float()) return {};
  return {InputDistribution::Kind::Uniform, -1, 1};
}

namespace {

// Inputs drawn at random: `count` sets, the k-th input of set i from seed base + 7 i + input id.
std::vector<std::vector<NDArray>> random_sets(const graph::Graph& g, long long count, uint64_t base,
                                              const std::optional<InputDistribution>& chosen) {
  std::vector<std::vector<NDArray>> sets;
  for (long long i = 0; i < count; ++i) {
    std::vector<NDArray> one;
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      int in = g.inputs[k];
      NDArray a = NDArray::empty(g.node(in).type.shape, g.node(in).type.dtype);
      input_distribution(g, k, chosen).fill(a, base + 7 * uint64_t(i) + uint64_t(in));
      one.push_back(a);
    }
    sets.push_back(one);
  }
  return sets;
}

std::vector<std::string> npy_files(const std::string& folder, const std::string& option, const graph::Graph& g) {
  if (g.inputs.size() != 1)
    LOOM_THROW(Error, option, " ", folder, ": a folder of .npy files needs a single-input model");
  std::vector<std::string> files;
  for (auto& e : std::filesystem::directory_iterator(folder))
    if (e.path().extension() == ".npy") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) LOOM_THROW(Error, option, " ", folder, ": no .npy files in the folder");
  return files;
}

std::vector<NDArray> read_input(const std::string& file, const std::string& option, const graph::Graph& g) {
  const graph::TensorType& want = g.node(g.inputs[0]).type;
  NDArray a = runtime::read_npy(file);
  if (a.shape() != want.shape || a.dtype() != want.dtype)
    LOOM_THROW(Error, option, ": '", file, "' holds ", a.describe(), ", the model's input is ", want.str());
  return {a};
}

// A whole number in [1, 10000], or -1.
long long input_count(const std::string& spec) {
  long long n = -1;
  try {
    size_t used = 0;
    n = std::stoll(spec, &used);
    if (used != spec.size()) n = -1;
  } catch (const std::exception&) {
  }
  return n;
}

std::string distributions(const graph::Graph& g, const std::optional<InputDistribution>& chosen) {
  std::string s;
  for (size_t k = 0; k < g.inputs.size(); ++k) s += (k ? ", " : "") + input_distribution(g, k, chosen).str();
  return s;
}

// `count` random input sets drawn from seed `base` on (a number in [1, 10000], else an Error
// starting with `what`), and what they are into `source`.
std::vector<std::vector<NDArray>> drawn(const std::string& count, const std::string& what, const graph::Graph& g,
                                        uint64_t base, const std::optional<InputDistribution>& chosen,
                                        std::string& source) {
  long long n = input_count(count);
  if (n < 1 || n > 10000) LOOM_THROW(Error, what, " a number of random inputs in [1, 10000]");
  source = std::to_string(n) + " random inputs, " + distributions(g, chosen);
  return random_sets(g, n, base, chosen);
}

}  // namespace

void check_calibration_options(const std::string& spec, const std::string& held_out) {
  if (!std::filesystem::is_directory(spec) && (input_count(spec) < 1 || input_count(spec) > 10000))
    LOOM_THROW(Error, "--calibrate '", spec,
               "' is neither a folder of .npy files nor a number of random inputs in [1, 10000]");
  if (held_out != "auto" && held_out != "0" && !std::filesystem::is_directory(held_out) &&
      (input_count(held_out) < 1 || input_count(held_out) > 10000))
    LOOM_THROW(Error, "--holdout '", held_out,
               "' is neither auto, 0, a folder of .npy files nor a number of random inputs in [1, 10000]");
}

CalibrationSets random_calibration_sets(graph::Graph g, int count, int held_out,
                                        const std::optional<InputDistribution>& chosen) {
  graph::infer_types(g);
  CalibrationSets r;
  r.calibration = drawn(std::to_string(count), "the calibration needs", g, 1000, chosen, r.calibration_source);
  if (held_out > 0)
    r.held_out = drawn(std::to_string(held_out), "the held-out set needs", g, 1000000, chosen, r.held_out_source);
  return r;
}

CalibrationSets calibration_sets(const std::string& spec, const std::string& held_out, graph::Graph g,
                                 const std::optional<InputDistribution>& chosen) {
  check_calibration_options(spec, held_out);
  graph::infer_types(g);
  CalibrationSets r;
  const bool folder = std::filesystem::is_directory(spec);
  if (folder) {
    std::vector<std::string> files = npy_files(spec, "--calibrate", g);
    const bool split = held_out == "auto" && files.size() >= 4;
    for (size_t i = 0; i < files.size(); ++i)
      (split && i % 4 == 3 ? r.held_out : r.calibration).push_back(read_input(files[i], "--calibrate", g));
    r.calibration_source = std::to_string(r.calibration.size()) + " files of " + spec;
    if (split) r.held_out_source = std::to_string(r.held_out.size()) + " other files of " + spec + " (every fourth)";
  } else {
    r.calibration = drawn(spec, "--calibrate '" + spec + "' is neither a folder of .npy files nor", g, 1000, chosen,
                          r.calibration_source);
  }
  if (held_out == "auto" || held_out == "0") {
    if (held_out == "auto" && !folder) {
      r.held_out = random_sets(g, (long long)r.calibration.size(), 1000000, chosen);
      r.held_out_source = std::to_string(r.held_out.size()) + " other random inputs of the same distribution";
    }
    return r;
  }
  if (std::filesystem::is_directory(held_out)) {
    for (const std::string& f : npy_files(held_out, "--holdout", g))
      r.held_out.push_back(read_input(f, "--holdout", g));
    r.held_out_source = std::to_string(r.held_out.size()) + " files of " + held_out;
    return r;
  }
  r.held_out = drawn(held_out, "--holdout '" + held_out + "' is neither auto, 0, a folder of .npy files nor", g,
                     1000000, chosen, r.held_out_source);
  return r;
}

std::vector<std::vector<NDArray>> calibration_set(const std::string& spec, graph::Graph g,
                                                  const std::optional<InputDistribution>& chosen) {
  return calibration_sets(spec, "0", std::move(g), chosen).calibration;
}

graph::Graph quantized_for_shapes(graph::Graph g) {
  auto inputs = calibration_set("1", g);
  return graph::quantize(std::move(g), inputs, {}).graph;
}

}  // namespace loom::frontend
