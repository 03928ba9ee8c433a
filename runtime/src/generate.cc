// Token generation with a key/value cache (generate.h).
#include "loom/runtime/generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "loom/runtime/error.h"

namespace loom::runtime {

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The present output's name for a past input's: `past_key_values` or `past` read as `present`.
std::vector<std::string> present_names(const std::string& past) {
  std::vector<std::string> names;
  for (const std::string from : {"past_key_values", "past"})
    if (size_t at = past.find(from); at != std::string::npos)
      names.push_back(std::string(past).replace(at, from.size(), "present"));
  return names;
}

// The single variable a dimension is (nullopt for a constant or a sum).
std::optional<std::string> variable_of(const DimExpr& d) {
  if (d.offset != 0 || d.terms.size() != 1 || d.terms[0].coeff != 1) return std::nullopt;
  return d.terms[0].var;
}

const ShapeVar& shape_var(const GraphExecutor& ex, const std::string& name) {
  for (const ShapeVar& v : ex.shape_vars())
    if (v.name == name) return v;
  LOOM_THROW(ModelError, "the model declares no shape variable '", name, "'");
}

NDArray int64_row(int64_t first, int64_t count, bool ones) {
  NDArray a = NDArray::empty({1, count}, DataType::Int(64));
  for (int64_t i = 0; i < count; ++i) a.data<int64_t>()[i] = ones ? 1 : first + i;
  return a;
}

}  // namespace

double GenerateResult::tokens_per_second() const {
  double total = std::accumulate(step_seconds.begin(), step_seconds.end(), 0.0);
  return total > 0 ? double(step_seconds.size()) / total : 0.0;
}

Decoder::Decoder(GraphExecutor& executor) : ex_(executor) {
  const std::string model = "model '" + ex_.model_name() + "'";
  auto input_named = [&](const std::string& name) -> std::optional<size_t> {
    for (size_t i = 0; i < ex_.num_inputs(); ++i)
      if (ex_.input_spec(i).name == name) return i;
    return std::nullopt;
  };
  auto ids = input_named("input_ids");
  if (!ids) LOOM_THROW(ModelError, model, ": a decoder takes the token ids as input 'input_ids' (int64 [1, seq])");
  ids_ = *ids;
  const ArgSpec& ids_spec = ex_.input_spec(ids_);
  std::optional<std::string> seq =
      ids_spec.dims.size() == 2 ? variable_of(ids_spec.dims[1]) : std::optional<std::string>();
  // A model of one-token steps (input_ids fixed at [1, 1]: what static kernels, such as the
  // accelerator's, need) takes the prompt a token a step.
  token_steps_ =
      ids_spec.dtype == DataType::Int(64) && ids_spec.is_static() && ids_spec.shape == std::vector<int64_t>{1, 1};
  if (!token_steps_ &&
      (ids_spec.dtype != DataType::Int(64) || ids_spec.shape.size() != 2 || ids_spec.shape[0] != 1 || !seq))
    LOOM_THROW(ModelError, model, ": input 'input_ids' is ", ids_spec.str(),
               "; a decoder's is int64 [1, seq] with seq a shape variable (loom compile --shape-var seq=1..N), or ",
               "int64 [1, 1] for one-token steps (--input-shape input_ids=1x1)");
  seq_var_ = token_steps_ ? ShapeVar{"", 1, 1} : shape_var(ex_, *seq);
  const DimExpr growth = token_steps_ ? DimExpr::constant(1) : DimExpr::variable(*seq);
  mask_ = input_named("attention_mask");
  positions_ = input_named("position_ids");
  std::optional<size_t> logits_out;
  for (size_t o = 0; o < ex_.num_outputs(); ++o)
    if (ex_.output_spec(o).name == "logits") logits_out = o;
  if (!logits_out) LOOM_THROW(ModelError, model, ": a decoder's logits are its output 'logits' ([1, seq, vocab])");
  logits_ = *logits_out;
  const ArgSpec& logits = ex_.output_spec(logits_);
  if (logits.shape.size() != 3 || !logits.dtype.is_float())
    LOOM_THROW(ModelError, model, ": output '", logits.name, "' is ", logits.str(),
               "; a decoder's logits are floating-point [1, seq, vocab]");
  vocab_ = logits.shape[2];

  for (size_t i = 0; i < ex_.num_inputs(); ++i) {
    if (i == ids_ || i == mask_ || i == positions_) continue;
    const ArgSpec& past = ex_.input_spec(i);
    std::optional<size_t> present;
    for (const std::string& name : present_names(past.name))
      for (size_t o = 0; o < ex_.num_outputs(); ++o)
        if (ex_.output_spec(o).name == name) present = o;
    if (!present)
      LOOM_THROW(ModelError, model, ": input '", past.name, "' is neither input_ids, attention_mask, position_ids ",
                 "nor a past key/value with a present output (", contains(past.name, "past") ? "expected '" : "",
                 contains(past.name, "past") ? present_names(past.name)[0] + "'" : "its name has no 'past'", ")");
    const ArgSpec& pres = ex_.output_spec(*present);
    // The cache axis: the one whose length is a variable in the past and that plus seq in the present.
    std::optional<size_t> axis;
    bool fits = past.dims.size() == pres.dims.size() && past.dtype == pres.dtype;
    for (size_t d = 0; fits && d < past.dims.size(); ++d) {
      if (past.dims[d] == pres.dims[d]) continue;
      std::optional<std::string> var = variable_of(past.dims[d]);
      fits = !axis && var && pres.dims[d] == past.dims[d] + growth;
      axis = d;
    }
    if (!fits || !axis)
      LOOM_THROW(ModelError, model, ": past '", past.name, "' ", past.str(), " and present '", pres.name, "' ",
                 pres.str(), " are not a cache pair: the present must be the past grown by ", growth.str(),
                 " along one axis, all else equal");
    const ShapeVar& var = shape_var(ex_, *variable_of(past.dims[*axis]));
    if (caches_.empty()) cache_var_ = var;
    if (var.name != cache_var_.name)
      LOOM_THROW(ModelError, model, ": past '", past.name, "' grows along '", var.name, "', past '",
                 ex_.input_spec(caches_[0].input).name, "' along '", cache_var_.name, "'");
    if (var.min != 0)
      LOOM_THROW(ModelError, model, ": the cache length '", var.name, "' has the range [", var.min, ", ", var.max,
                 "]; the prompt's step has an empty cache, so it must start at 0 (--shape-var ", var.name, "=0..",
                 var.max, ")");
    std::vector<int64_t> empty = past.shape;
    for (size_t d = 0; d < empty.size(); ++d) empty[d] = d == *axis ? 0 : past.dims[d].is_constant() ? empty[d] : -1;
    if (std::count(empty.begin(), empty.end(), -1))
      LOOM_THROW(ModelError, model, ": past '", past.name, "' ", past.str(), " has another symbolic axis");
    caches_.push_back({i, *present, empty});
  }
  if (caches_.empty())
    LOOM_THROW(ModelError, model,
               ": no past key/value inputs; a decoder with a cache takes them (past_key_values.0.key)");
  for (const Cache& c : caches_) ex_.carry(c.output, c.input);
}

GenerateResult Decoder::generate(const std::vector<int64_t>& prompt, const GenerateOptions& options) {
  const int64_t p = int64_t(prompt.size()), n = options.max_new_tokens;
  if (p < 1) LOOM_THROW(RuntimeError, "generate: the prompt is empty (give at least one token id)");
  if (n < 1) LOOM_THROW(RuntimeError, "generate: max_new_tokens is ", n, "; it must be at least 1");
  if (options.top_k < 0 || options.top_k > vocab_ || !(options.temperature > 0))
    LOOM_THROW(RuntimeError, "generate: top_k ", options.top_k, " and temperature ", options.temperature,
               " must be 0 <= top_k <= ", vocab_, " (the vocabulary) and temperature > 0");
  for (int64_t i = 0; i < p; ++i)
    if (prompt[size_t(i)] < 0 || prompt[size_t(i)] >= vocab_)
      LOOM_THROW(RuntimeError, "generate: prompt token ", i, " is ", prompt[size_t(i)], ", outside the vocabulary [0, ",
                 vocab_, ")");
  if (!token_steps_ && (p < seq_var_.min || p > seq_var_.max))
    LOOM_THROW(ShapeError, "generate: a prompt of ", p, " tokens is outside ", seq_var_.name, "'s range [",
               seq_var_.min, ", ", seq_var_.max, "]");
  if (n > 1 && seq_var_.min > 1)
    LOOM_THROW(ShapeError, "generate: a step of one token is outside ", seq_var_.name, "'s range [", seq_var_.min, ", ",
               seq_var_.max, "]");
  // The longest cache a step reads: the last new token's, or the last prompt token's when the
  // prompt runs a token a step.
  if (const int64_t last_past = std::max(n > 1 ? p + n - 2 : 0, token_steps_ ? p - 1 : 0); last_past > cache_var_.max)
    LOOM_THROW(ShapeError, "generate: ", p, " prompt tokens and ", n, " new ones need a cache of ", last_past,
               " tokens at the last step, beyond ", cache_var_.name, "'s range [0, ", cache_var_.max, "]");
  if (mask_) {  // its length, past + seq, at the first and the last step
    const ArgSpec& mask = ex_.input_spec(*mask_);
    const int64_t first = token_steps_ ? 1 : p;
    for (int64_t total : {first, n > 1 ? p + n - 1 : p})
      if (mask.shape.size() != 2 || (mask.is_static() ? mask.shape[1] != total : total > mask.shape[1]))
        LOOM_THROW(ShapeError, "generate: input 'attention_mask' ", mask.str(), " cannot hold the ", total,
                   " positions of a step here");
  }

  std::mt19937_64 rng(options.seed);
  auto next_token = [&]() {
    NDArray logits = ex_.get_output(logits_);
    const int64_t rows = logits.shape()[1];
    std::vector<double> last(static_cast<size_t>(vocab_));
    for (int64_t v = 0; v < vocab_; ++v) last[size_t(v)] = logits.get_as_double((rows - 1) * vocab_ + v);
    if (options.top_k == 0) return int64_t(std::max_element(last.begin(), last.end()) - last.begin());
    std::vector<int64_t> order(static_cast<size_t>(vocab_));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + options.top_k, order.end(),
                      [&](int64_t a, int64_t b) { return last[size_t(a)] > last[size_t(b)]; });
    std::vector<double> weights;
    for (int64_t k = 0; k < options.top_k; ++k)
      weights.push_back(std::exp((last[size_t(order[size_t(k)])] - last[size_t(order[0])]) / options.temperature));
    std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
    return order[pick(rng)];
  };

  auto run_step = [&](const int64_t* tokens, int64_t len, int64_t past) {
    NDArray ids = NDArray::empty({1, len}, DataType::Int(64));
    std::copy(tokens, tokens + len, ids.data<int64_t>());
    ex_.set_input(ids_, ids);
    if (mask_) ex_.set_input(*mask_, int64_row(0, past + len, /*ones=*/true));
    if (positions_) ex_.set_input(*positions_, int64_row(past, len, /*ones=*/false));
    ex_.run();
  };
  auto seconds_since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };

  GenerateResult r;
  for (const Cache& c : caches_) ex_.set_input(c.input, NDArray::empty(c.empty_shape, ex_.input_spec(c.input).dtype));
  // The prompt: one step, or a token a step (each step's present the next one's past).
  auto t0 = std::chrono::steady_clock::now();
  int64_t past = 0, len = token_steps_ ? 1 : p;
  for (int64_t first = 0; first < p; first += len) {
    if (first > 0) {
      ex_.advance_carried();
      past += len;
    }
    run_step(prompt.data() + first, len, past);
  }
  int64_t token = next_token();
  r.prefill_seconds = seconds_since(t0);
  r.tokens.push_back(token);
  for (int64_t step = 1; step < n && token != options.stop_token; ++step) {
    t0 = std::chrono::steady_clock::now();
    ex_.advance_carried();
    past += len;
    len = 1;
    run_step(&token, 1, past);
    token = next_token();
    r.step_seconds.push_back(seconds_since(t0));
    r.tokens.push_back(token);
  }
  return r;
}

}  // namespace loom::runtime
