// Token generation against ONNX Runtime on the same ONNX file: a decoder-only model with its
// key/value cache (past inputs, present outputs), compiled once with the sequence and cache axes as
// shape variables; greedy generation after a prompt, Loom's runtime::Decoder against ONNX
// Runtime's usual loop (bench/ort_generate.js), at each thread count. Prints the prompt step's and
// a decode step's median milliseconds, tokens per second and the ratio (goal: <= 1.0,
// docs/dynamic_shapes.md), and whether the two generated the same tokens.
//
//   generate_bench MODEL.onnx [--prompt-length 16] [--new-tokens 64] [--reps 5] [--threads 1,2]
//                  [--seq seq=1..512] [--past past=0..511]
//
// scripts/export_decoder.py OUTDIR --dim 512 --layers 4 writes a Llama-style decoder of that size.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_util.h"
#include "loom/frontend/onnx.h"
#include "loom/graph/build.h"
#include "loom/runtime/generate.h"
#include "loom/runtime/thread_pool.h"

using namespace loom;

namespace {

runtime::ShapeVar shape_var(const std::string& text) {
  auto eq = text.find('='), dots = text.find("..");
  if (eq == std::string::npos || dots == std::string::npos)
    throw std::invalid_argument("'" + text + "' is not NAME=MIN..MAX");
  return {text.substr(0, eq), std::stoll(text.substr(eq + 1, dots - eq - 1)), std::stoll(text.substr(dots + 2))};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Timing {
  std::vector<int64_t> tokens;
  double prefill_ms = -1, step_ms = -1;
  std::string version;
};

Timing loom_timing(runtime::Decoder& dec, const std::vector<int64_t>& prompt, int new_tokens, int reps) {
  runtime::GenerateOptions o;
  o.max_new_tokens = new_tokens;
  Timing t;
  std::vector<double> prefill, steps;
  for (int r = 0; r <= reps; ++r) {  // the first warms up
    runtime::GenerateResult g = dec.generate(prompt, o);
    t.tokens = g.tokens;
    if (r == 0) continue;
    prefill.push_back(g.prefill_seconds * 1e3);
    for (double s : g.step_seconds) steps.push_back(s * 1e3);
  }
  t.prefill_ms = median(prefill);
  t.step_ms = median(steps);
  return t;
}

Timing ort_timing(const std::string& model, int threads, const std::vector<int64_t>& prompt, int new_tokens, int reps,
                  const std::string& empty_past) {
  std::string ids;
  for (int64_t p : prompt) ids += (ids.empty() ? "" : ",") + std::to_string(p);
  const char* ort_dir = std::getenv("LOOM_ORT_DIR");
  std::string cmd = std::string("LOOM_ORT_DIR='") + (ort_dir ? ort_dir : LOOM_DEFAULT_ORT_DIR) + "' node '" +
                    LOOM_BENCH_DIR + "/ort_generate.js' '" + model + "' " + std::to_string(threads) + " " + ids + " " +
                    std::to_string(new_tokens) + " " + std::to_string(reps) + " " + empty_past + " 2>/dev/null";
  Timing t;
  try {
    auto j = nlohmann::json::parse(bench::command_output(cmd));
    t.tokens = j.at("tokens").get<std::vector<int64_t>>();
    t.prefill_ms = j.at("prefill_ms").get<double>();
    t.step_ms = j.at("step_ms").get<double>();
    t.version = j.at("ort").get<std::string>();
  } catch (const std::exception&) {
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: generate_bench MODEL.onnx [--prompt-length 16] [--new-tokens 64] [--reps 5] [--threads 1,2] "
                 "[--seq seq=1..512] [--past past=0..511]\n");
    return 2;
  }
  const std::string model = argv[1];
  int prompt_length = 16, new_tokens = 64, reps = 5;
  std::string threads_list = "1,2", seq = "seq=1..512", past = "past=0..511";
  try {
    for (int i = 2; i + 1 < argc; i += 2) {
      std::string a = argv[i], v = argv[i + 1];
      if (a == "--prompt-length")
        prompt_length = bench::count_option(v, "--prompt-length", 1 << 16);
      else if (a == "--new-tokens")
        new_tokens = bench::count_option(v, "--new-tokens", 1 << 16);
      else if (a == "--reps")
        reps = bench::count_option(v, "--reps", 1000);
      else if (a == "--threads")
        threads_list = v;
      else if (a == "--seq")
        seq = v;
      else if (a == "--past")
        past = v;
      else
        throw std::invalid_argument("unknown option " + a);
    }
    frontend::OnnxImportOptions io;
    io.shape_vars = {shape_var(seq), shape_var(past)};
    auto c0 = std::chrono::steady_clock::now();
    graph::BuildResult built = graph::build(frontend::import_onnx(model, io));
    double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    runtime::GraphExecutor ex = runtime::GraphExecutor::from_model_file(built.file, model);
    runtime::Decoder dec(ex);
    // The empty cache's shape for ONNX Runtime: a past input's, its cache axis 0.
    std::string empty_past;
    for (size_t i = 0; i < ex.num_inputs() && empty_past.empty(); ++i) {
      const runtime::ArgSpec& s = ex.input_spec(i);
      if (s.name == "input_ids") continue;
      for (size_t d = 0; d < s.shape.size(); ++d)
        empty_past += (d ? "x" : "") + std::to_string(s.dims[d].is_constant() ? s.shape[d] : 0);
    }
    std::vector<int64_t> prompt;
    for (int k = 0; k < prompt_length; ++k) prompt.push_back((k * 7 + 3) % dec.vocabulary());
    std::printf("generate_bench: %s on %s\n", model.c_str(), bench::cpu_name().c_str());
    std::printf("compiled once for %s, %s in %.2f s; prompt %d tokens, %d new tokens, median of %d generations\n",
                seq.c_str(), past.c_str(), compile_s, prompt_length, new_tokens, reps);
    std::printf("%-8s %12s %12s %14s %14s %9s %12s %12s %7s\n", "threads", "loom step", "ort step", "loom tok/s",
                "ort tok/s", "ratio", "loom prompt", "ort prompt", "tokens");
    for (const std::string& t : bench::split_list(threads_list)) {
      int threads = bench::count_option(t, "--threads", 1024);
      runtime::set_num_threads(threads);
      Timing l = loom_timing(dec, prompt, new_tokens, reps);
      Timing o = ort_timing(model, threads, prompt, new_tokens, reps, empty_past);
      if (o.step_ms < 0) {
        std::printf("%-8d %9.3f ms %12s %14.1f %14s %9s %9.3f ms %12s %7s\n", threads, l.step_ms, "-", 1e3 / l.step_ms,
                    "-", "-", l.prefill_ms, "-", "-");
        continue;
      }
      std::printf("%-8d %9.3f ms %9.3f ms %14.1f %14.1f %8.2fx %9.3f ms %9.3f ms %7s\n", threads, l.step_ms, o.step_ms,
                  1e3 / l.step_ms, 1e3 / o.step_ms, l.step_ms / o.step_ms, l.prefill_ms, o.prefill_ms,
                  l.tokens == o.tokens ? "same" : "DIFFER");
      if (t == bench::split_list(threads_list).back())
        std::printf("(ONNX Runtime %s, onnxruntime-node)\n", o.version.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "generate_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
