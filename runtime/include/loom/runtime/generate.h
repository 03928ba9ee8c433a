// Token generation with a key/value cache: a compiled decoder-only language model in the usual
// ONNX form for generation, run one step per token by its GraphExecutor.
//
// The model's inputs: `input_ids` (int64 [1, seq]); per layer a past key and value
// (`past_key_values.<L>.key` / `.value`, or any name with `past`), whose cache axis is a shape
// variable that may be 0; optionally `attention_mask` (int64 [1, past + seq], all ones) and
// `position_ids` (int64 [1, seq], past .. past + seq - 1), which generate fills. Its outputs:
// `logits` ([1, seq, vocab]) and per past input a present output (`present.<L>.key`, the name
// with `past_key_values` or `past` read as `present`) whose cache axis is past + seq.
//
// The prompt runs as one step with an empty cache, then one step per token. A model compiled for
// one-token steps (input_ids int64 [1, 1], the present the past grown by 1: static kernels such as
// the accelerator's) takes the prompt a token a step. Between steps each
// present output becomes its past input by swapping the executor's buffers
// (GraphExecutor::carry): the cache stays where the kernels wrote it.
//
//   auto ex = GraphExecutor::load("decoder.loom");
//   Decoder dec(ex);  // ModelError naming what does not fit the form
//   GenerateResult r = dec.generate({1, 15043, 29892}, {.max_new_tokens = 32});
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/runtime/graph_executor.h"

namespace loom::runtime {

struct GenerateOptions {
  int64_t max_new_tokens = 32;
  // Sampling: 0 is greedy (the largest logit); k > 0 draws from the k largest logits' softmax
  // at `temperature`, with a generator seeded by `seed` (the same seed, the same tokens).
  int64_t top_k = 0;
  double temperature = 1.0;
  uint64_t seed = 0;
  std::optional<int64_t> stop_token;  // stop after generating it
};

struct GenerateResult {
  std::vector<int64_t> tokens;       // the new tokens, in order
  double prefill_seconds = 0;        // the prompt's step (its first new token)
  std::vector<double> step_seconds;  // each later step (one token each)
  // Decode steps per second (the steps after the prompt's); 0 without any.
  double tokens_per_second() const;
};

class Decoder {
 public:
  // Finds the form above in the executor's inputs and outputs and carries every present output
  // into its past input; ModelError naming the input or output that does not fit.
  explicit Decoder(GraphExecutor& executor);

  // Generates after `prompt` (token ids). Checks before the first step that the prompt and the
  // new tokens fit the shape variables' ranges and the vocabulary (ShapeError/RuntimeError
  // naming the range or token).
  GenerateResult generate(const std::vector<int64_t>& prompt, const GenerateOptions& options = {});

  size_t layers_cache_values() const { return caches_.size(); }  // past inputs (a key and a value per layer)
  int64_t vocabulary() const { return vocab_; }
  const ShapeVar& cache_length() const { return cache_var_; }  // the past axis' variable
  const ShapeVar& step_length() const { return seq_var_; }     // input_ids' axis 1 (unnamed, [1, 1]: one token)
  bool one_token_steps() const { return token_steps_; }

 private:
  struct Cache {
    size_t input, output;
    std::vector<int64_t> empty_shape;  // the past input with its cache axis 0
  };
  GraphExecutor& ex_;
  size_t ids_ = 0, logits_ = 0;
  std::optional<size_t> mask_, positions_;
  std::vector<Cache> caches_;
  ShapeVar cache_var_, seq_var_;
  int64_t vocab_ = 0;
  bool token_steps_ = false;
};

}  // namespace loom::runtime
