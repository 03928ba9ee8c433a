// What zoo_bench's float and int8 modes share: ONNX Runtime timed in a child process (node with
// onnxruntime-node running ort_latency.js, or a Python with onnxruntime running ort_latency.py),
// PyTorch timed by pytorch_latency.py, and the inputs both sides are given.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/runtime/graph_executor.h"

namespace loom::bench {

struct Times {
  double median_ms = -1, min_ms = -1;  // <0: not installed or failed
};

// The runner: onnxruntime-node through node, or `python` running ort_latency.py when it is set.
struct OrtRunner {
  std::string python;

  std::string command() const {
    const char* bench_dir = std::getenv("LOOM_BENCH_DIR");
    std::string dir = bench_dir ? bench_dir : LOOM_BENCH_DIR;
    if (!python.empty()) return "'" + python + "' '" + dir + "/ort_latency.py'";
    const char* ort_dir = std::getenv("LOOM_ORT_DIR");
    return std::string("LOOM_ORT_DIR='") + (ort_dir ? ort_dir : LOOM_DEFAULT_ORT_DIR) + "' node '" + dir +
           "/ort_latency.js'";
  }
};

// ONNX Runtime's median and fastest of `reps` runs; with `output_file`, its first output's values
// written there (raw float32).
inline Times ort_ms(const OrtRunner& runner, const std::string& model, int threads, int reps, const std::string& shapes,
                    std::string* version, const std::string& output_file = "") {
  std::string cmd = runner.command() + " '" + model + "' " + std::to_string(threads) + " " + std::to_string(reps) +
                    " '" + shapes + "'" + (output_file.empty() ? "" : " '" + output_file + "'") + " 2>/dev/null";
  std::string out = command_output(cmd);
  try {
    auto j = nlohmann::json::parse(out);
    *version = j.at("ort").get<std::string>();
    return {j.at("median_ms").get<double>(), j.at("min_ms").get<double>()};
  } catch (const std::exception&) {
    return {};
  }
}

// PyTorch's median and fastest of `reps` runs of torchvision-family model `name` (pytorch_latency.py:
// resnet18, mobilenet_v2, their _int8 forms, bert_encoder_int8, ...) through `python`.
inline Times pytorch_ms(const std::string& python, const std::string& name, int threads, int reps,
                        std::string* version) {
  const char* bench_dir = std::getenv("LOOM_BENCH_DIR");
  std::string dir = bench_dir ? bench_dir : LOOM_BENCH_DIR;
  std::string out = command_output("'" + python + "' '" + dir + "/pytorch_latency.py' " + name + " 1 " +
                                   std::to_string(threads) + " " + std::to_string(reps) + " 2>/dev/null");
  try {
    auto j = nlohmann::json::parse(out);
    *version = j.at("torch").get<std::string>();
    return {j.at("median_ms").get<double>(), j.at("min_ms").get<double>()};
  } catch (const std::exception&) {
    return {};
  }
}

// Sets every input of `ex` as ort_latency.js makes them: float element k is sin(k), an integer
// input (token ids, masks) all ones. Returns the shapes argument of ort_latency.js
// ("1x3x224x224", "int64:1x128", ';' between inputs); "" with *why set for an input of another type.
inline std::string set_bench_inputs(runtime::GraphExecutor& ex, std::string* why) {
  std::string shapes;
  for (size_t i = 0; i < ex.num_inputs(); ++i) {
    const auto& spec = ex.input_spec(i);
    NDArray x = NDArray::empty(spec.shape, spec.dtype);
    std::string prefix;
    if (x.dtype() == DataType::Float(32)) {
      for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = float(std::sin(double(k)));
    } else if (x.dtype() == DataType::Int(64) || x.dtype() == DataType::Int(32)) {
      for (int64_t k = 0; k < x.numel(); ++k) x.set_from_double(k, 1);
      prefix = x.dtype().str() + ":";
    } else {
      *why = "input " + std::to_string(i) + " is " + x.dtype().str() + ", not float32, int32 or int64";
      return "";
    }
    ex.set_input(i, x);
    std::string s;
    for (int64_t d : spec.shape) s += (s.empty() ? "" : "x") + std::to_string(d);
    shapes += (shapes.empty() ? "" : ";") + prefix + s;
  }
  return shapes;
}

// The first `n` float32 values of a raw file ({} when it is shorter).
inline std::vector<float> read_f32(const std::string& path, size_t n) {
  std::ifstream f(path, std::ios::binary);
  std::vector<float> v(n);
  if (!f.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * 4))) return {};
  return v;
}

// "FAILED: <why>: a b c" for the models of a check that failed (nothing when there are none).
inline void print_failed(const std::string& why, const std::vector<std::string>& models) {
  if (models.empty()) return;
  std::printf("FAILED: %s:", why.c_str());
  for (const std::string& m : models) std::printf(" %s", m.c_str());
  std::printf("\n");
}

// zoo_bench --int8 (zoo_bench_int8.cc): `pytorch` is the Python that runs pytorch_latency.py ("":
// no PyTorch baseline). Exit code as zoo_bench's.
int int8_zoo_bench(const std::vector<std::string>& models, const std::vector<int>& threads, int reps,
                   const OrtRunner& runner, const std::string& pytorch);

}  // namespace loom::bench
