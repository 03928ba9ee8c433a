// `loom generate`: token generation with a key/value cache (runtime/generate.h) on a decoder-only
// language model: a compiled .loom file, or an ONNX file compiled here for the CPU with the
// sequence and cache axes as shape variables.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "command.h"
#include "loom/runtime/error.h"
#include "loom/runtime/generate.h"
#include "loom/runtime/npy.h"
#include "loom/runtime/thread_pool.h"
#ifdef LOOM_HAVE_GRAPH
#include "loom/frontend/onnx.h"
#include "loom/graph/build.h"
#endif

namespace loom::tools {

namespace {

// Comma-separated token ids, or a .npy file of int64 ids.
std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  if (std::filesystem::path(text).extension() == ".npy") {
    NDArray a = runtime::read_npy(text);
    if (a.dtype() != DataType::Int(64) || a.numel() == 0)
      LOOM_THROW(Error, "--prompt-ids: '", text, "' holds ", a.describe(), "; token ids are a non-empty int64 array");
    return std::vector<int64_t>(a.data<int64_t>(), a.data<int64_t>() + a.numel());
  }
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    long long v = whole_integer(item);
    if (v < 0) LOOM_THROW(Error, "--prompt-ids: '", item, "' in '", text, "' is not a token id (0, 1, ...)");
    ids.push_back(v);
  }
  if (ids.empty()) LOOM_THROW(Error, "--prompt-ids: no token ids in '", text, "'");
  return ids;
}

runtime::GraphExecutor load_decoder(const std::string& model, const std::vector<std::string>& shape_vars) {
  if (std::filesystem::path(model).extension() != ".onnx") {
    if (!shape_vars.empty()) LOOM_THROW(Error, "--shape-var is for ONNX models; '", model, "' is compiled");
    return runtime::GraphExecutor::load(model);
  }
#ifdef LOOM_HAVE_GRAPH
  if (shape_vars.empty())
    LOOM_THROW(Error, "'", model, "': give the sequence and cache axes' ranges, --shape-var seq=1..N --shape-var ",
               "past=0..M (the model's dim_param names)");
  frontend::OnnxImportOptions io;
  for (const std::string& v : shape_vars) io.shape_vars.push_back(parse_shape_var(v));
  graph::BuildResult r = graph::build(frontend::import_onnx(model, io));
  return runtime::GraphExecutor::from_model_file(r.file, "'" + model + "'");
#else
  LOOM_THROW(Error, "'", model, "': this build compiles no ONNX models (runtime only); give a compiled .loom file");
#endif
}

int generate_cmd(const std::vector<std::string>& args) {
  CLI::App app{"Generate tokens with a decoder-only language model and its key/value cache", "loom generate"};
  std::string model, prompt, expect;
  std::vector<std::string> shape_vars;
  runtime::GenerateOptions o;
  int threads = 0;
  bool quiet = false;
  app.add_option("model", model, "model.onnx (past key/values as inputs, present ones as outputs) or compiled .loom")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--prompt-ids", prompt,
                 "the prompt's token ids, comma-separated (1,15043,29892), or a .npy file of them")
      ->required();
  number_option(app, "--max-new-tokens", o.max_new_tokens, "tokens to generate (default 32)", 1, 1 << 20);
  number_option(app, "--top-k", o.top_k, "sample from the k most likely tokens (default 0: greedy)", 0, 1 << 30);
  number_option(app, "--temperature", o.temperature, "sampling temperature (with --top-k; default 1)", 1e-6, 1e6);
  number_option(app, "--seed", o.seed, "the sampler's seed (default 0)", 0, std::numeric_limits<int64_t>::max());
  int64_t stop = -1;
  number_option(app, "--stop-token", stop, "stop after generating this token id", 0,
                std::numeric_limits<int64_t>::max());
  app.add_option("--shape-var", shape_vars,
                 "for an ONNX model: NAME=MIN..MAX per named axis, the cache's from 0 (seq=1..256 past=0..255)");
  app.add_option("--expect-ids", expect, ".npy of the token ids expected (int64); exit 1 where they differ")
      ->check(CLI::ExistingFile);
  number_option(app, "--threads", threads, "worker threads (default: LOOM_NUM_THREADS, else all cores)", 1, 1024);
  app.add_flag("-q,--quiet", quiet, "print the tokens only");
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (app.count("--stop-token")) o.stop_token = stop;
  if (threads) runtime::set_num_threads(threads);
  runtime::GraphExecutor ex = load_decoder(model, shape_vars);
  runtime::Decoder dec(ex);
  const std::vector<int64_t> prompt_ids = parse_ids(prompt);
  runtime::GenerateResult r = dec.generate(prompt_ids, o);
  std::string ids;
  for (int64_t t : r.tokens) ids += (ids.empty() ? "" : ",") + std::to_string(t);
  std::cout << (quiet ? "" : "tokens: ") << ids << "\n";
  if (!quiet) {
    std::cout << "prompt: " << prompt_ids.size() << " tokens in " << r.prefill_seconds * 1e3 << " ms; "
              << r.step_seconds.size() << " decode steps";
    if (!r.step_seconds.empty()) {
      double sum = 0;
      for (double s : r.step_seconds) sum += s;
      std::cout << ", " << sum / double(r.step_seconds.size()) * 1e3 << " ms per step, " << r.tokens_per_second()
                << " tokens/s";
    }
    std::cout << " (" << runtime::num_threads() << " threads, " << dec.layers_cache_values()
              << " cached key/value tensors, cache axis '" << dec.cache_length().name << "')\n";
  }
  if (!expect.empty()) {
    NDArray want = runtime::read_npy(expect);
    bool same = want.dtype() == DataType::Int(64) && want.numel() == int64_t(r.tokens.size());
    for (int64_t i = 0; same && i < want.numel(); ++i) same = want.data<int64_t>()[i] == r.tokens[size_t(i)];
    std::cout << "tokens vs " << expect << ": " << (same ? "equal" : "DIFFERENT") << "\n";
    return same ? 0 : 1;
  }
  return 0;
}

}  // namespace

LOOM_REGISTER_COMMAND("generate", "generate tokens with a decoder and its key/value cache", generate_cmd);

}  // namespace loom::tools
