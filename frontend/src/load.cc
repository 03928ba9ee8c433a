#include "loom/frontend/load.h"

#include <algorithm>
#include <filesystem>

#include "loom/frontend/onnx.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/passes.h"
#include "loom/runtime/error.h"
#include "loom/runtime/npy.h"

namespace loom::frontend {

graph::Graph load_model(const std::string& model, int64_t batch, int64_t image) {
  auto names = graph::builtin_model_names();
  bool builtin = std::find(names.begin(), names.end(), model) != names.end() && !std::filesystem::exists(model);
  if (!builtin && !std::filesystem::is_regular_file(model))
    LOOM_THROW(Error, "'", model, "' is neither a file nor a built-in model (resnet18, resnet50, mobilenet_v2, mlp)");
  return builtin ? graph::builtin_model(model, batch, image) : import_onnx(model, {});
}

std::vector<std::vector<NDArray>> calibration_set(const std::string& spec, graph::Graph g) {
  graph::infer_types(g);
  std::vector<std::vector<NDArray>> sets;
  if (std::filesystem::is_directory(spec)) {
    if (g.inputs.size() != 1)
      LOOM_THROW(Error, "--calibrate ", spec, ": a folder of .npy files needs a single-input model");
    std::vector<std::string> files;
    for (auto& e : std::filesystem::directory_iterator(spec))
      if (e.path().extension() == ".npy") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) LOOM_THROW(Error, "--calibrate ", spec, ": no .npy files in the folder");
    const graph::TensorType& want = g.node(g.inputs[0]).type;
    for (auto& f : files) {
      NDArray a = runtime::read_npy(f);
      if (a.shape() != want.shape || a.dtype() != want.dtype)
        LOOM_THROW(Error, "--calibrate: '", f, "' holds ", a.describe(), ", the model's input is ", want.str());
      sets.push_back({a});
    }
    return sets;
  }
  long long n = -1;
  try {
    size_t used = 0;
    n = std::stoll(spec, &used);
    if (used != spec.size()) n = -1;
  } catch (const std::exception&) {
  }
  if (n < 1 || n > 10000)
    LOOM_THROW(Error, "--calibrate '", spec,
               "' is neither a folder of .npy files nor a number of random inputs in [1, 10000]");
  for (long long i = 0; i < n; ++i) {
    std::vector<NDArray> one;
    for (int in : g.inputs) {
      NDArray a = NDArray::empty(g.node(in).type.shape, g.node(in).type.dtype);
      a.fill_random(1000 + 7 * i + in);
      one.push_back(a);
    }
    sets.push_back(one);
  }
  return sets;
}

}  // namespace loom::frontend
