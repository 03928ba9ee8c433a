// One exported test model against PyTorch's outputs: import the ONNX file, compile it, write the
// compiled-model file, load it back with the runtime's graph executor, run it on the stored inputs
// and compare every output with PyTorch's (max |error| <= tolerance x the output's largest
// magnitude).
//   test_model_case MODELS_DIR CASE [TOLERANCE]
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "loom/frontend/onnx.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/npy.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: test_model_case MODELS_DIR CASE [TOLERANCE]\n";
    return 2;
  }
  namespace fs = std::filesystem;
  fs::path dir = argv[1];
  std::string name = argv[2];
  double tolerance = argc > 3 ? std::stod(argv[3]) : 1e-4;
  try {
    std::ifstream mf(dir / "manifest.json");
    auto manifest = nlohmann::json::parse(mf);
    nlohmann::json entry;
    for (auto& c : manifest.at("cases"))
      if (c.at("name") == name) entry = c;
    if (entry.is_null()) {
      std::cerr << "no case '" << name << "' in " << (dir / "manifest.json") << "\n";
      return 2;
    }
    loom::graph::Graph g = loom::frontend::import_onnx((dir / (name + ".onnx")).string());
    loom::graph::Graph imported = g;
    loom::graph::BuildResult r = loom::graph::build(std::move(g));
    fs::path compiled = dir / (name + ".test.loom");
    loom::runtime::save_model_file(compiled.string(), r.file);
    auto ex = loom::runtime::GraphExecutor::load(compiled.string());
    fs::remove(compiled);
    std::vector<loom::NDArray> inputs;
    for (auto& in : entry.at("inputs"))
      inputs.push_back(loom::runtime::read_npy((dir / in.at("file").get<std::string>()).string()));
    auto outputs = ex.run(inputs);
    // Small models also check the naive graph interpreter (the reference of `loom demo`) against
    // PyTorch, both on the imported and on the optimized graph.
    bool small = name.rfind("resnet", 0) != 0 && name.rfind("mobilenet", 0) != 0 && name.rfind("squeezenet", 0) != 0;
    std::vector<std::pair<std::string, std::vector<loom::NDArray>>> results{{"compiled", outputs}};
    if (small) {
      loom::graph::infer_types(imported);
      results.push_back({"reference interpreter", loom::graph::reference_run(imported, inputs)});
      results.push_back({"reference interpreter (optimized graph)", loom::graph::reference_run(r.graph, inputs)});
    }
    auto& want_files = entry.at("outputs");
    if (outputs.size() != want_files.size()) {
      std::cerr << name << ": " << outputs.size() << " outputs, PyTorch has " << want_files.size() << "\n";
      return 1;
    }
    bool ok = true;
    for (auto& [what, outs] : results)
      for (size_t o = 0; o < outs.size(); ++o) {
        loom::NDArray want = loom::runtime::read_npy((dir / want_files[o].at("file").get<std::string>()).string());
        const loom::NDArray& got = outs[o];
        if (want.shape() != got.shape()) {
          std::cerr << name << ": output " << o << " is " << got.describe() << ", PyTorch's is " << want.describe()
                    << "\n";
          return 1;
        }
        double scale = 0, err = 0;
        int64_t worst = 0;
        for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(want.get_as_double(i)));
        for (int64_t i = 0; i < want.numel(); ++i) {
          double e = std::fabs(want.get_as_double(i) - got.get_as_double(i));
          if (!(e <= err)) {
            err = e;
            worst = i;
          }
        }
        double rel = err / std::max(scale, 1e-30);
        std::cout << what << ": " << name << " output " << o << " " << got.describe() << ": max |error| " << err
                  << " at " << worst << " (got " << got.get_as_double(worst) << ", PyTorch "
                  << want.get_as_double(worst) << "), " << rel << " of the largest magnitude " << scale << "\n";
        ok &= rel <= tolerance;
      }
    std::cout << name << ": " << r.kernels.size() << " distinct kernels, " << r.executor_graph.kernels.size()
              << " calls, compiled in " << r.seconds << " s; " << (ok ? "matches PyTorch" : "MISMATCH") << "\n";
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << name << ": error: " << e.what() << "\n";
    return 1;
  }
}
