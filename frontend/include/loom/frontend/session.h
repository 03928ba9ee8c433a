// OnnxSession: an ONNX model run as ONNX defines it, every input given at run time.
//
// A model whose shapes do not depend on any input's value is compiled once, when the session is
// made. A model where an operator reads an input's value at compile time (Reshape's shape,
// Resize's scales, a reduction's axes, TopK's k, an If's condition; frontend::InputValuesNeeded)
// is compiled per distinct value of those inputs (the session's value inputs), at the run that
// first gives it, and the compiled model is kept for later runs with the same values; past
// `max_compiled` the least recently used one is dropped. The shape computation runs on the host
// at import; the kernels each compilation makes are static, so a value seen before runs at the
// speed of a model compiled with that value bound (`loom compile --bind`), which stays the way to
// compile ahead of time. docs/dynamic_shapes.md.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/frontend/onnx.h"
#include "loom/graph/build.h"
#include "loom/runtime/graph_executor.h"

namespace loom::frontend {

struct OnnxSessionOptions {
  // How each compilation imports the model. input_values are bound in every one (as --bind);
  // bind_only_where_needed must stay off.
  OnnxImportOptions import;
  graph::BuildOptions build;
  runtime::ExecutorOptions executor;
  size_t max_compiled = 8;  // compiled models kept, in [1, 1024]
};

class OnnxSession {
 public:
  // Reads the model and, unless it needs input values, compiles it: a ModelError naming the file
  // or the node otherwise; ConfigError for options out of range. A model that needs values is
  // imported only up to the first operator that reads one here; the rest is checked at the
  // first run (as is a value input whose shape is symbolic: it must be static).
  explicit OnnxSession(const std::string& path, OnnxSessionOptions options = {});
  ~OnnxSession();
  OnnxSession(OnnxSession&&) noexcept;
  OnnxSession& operator=(OnnxSession&&) noexcept;

  // The model's inputs given at run time, in the model's order (those of import.input_values are
  // not among them).
  const std::vector<std::string>& input_names() const { return input_names_; }
  // The inputs whose values the model is compiled for (empty: one compilation serves every run).
  // A run may find more: an operator reached only once an earlier value is known.
  const std::vector<std::string>& value_inputs() const { return value_inputs_; }

  // Holds the value for the next run (a ModelError for a name that is no input). The value must
  // have the input's element type and a shape the model allows; the compiled model checks it.
  void set_input(const std::string& name, const NDArray& value);
  // Compiles for the value inputs set, unless a kept model was compiled for them: a run with
  // these values then starts at once. Every input must be set.
  void prepare();
  // Runs with the inputs set, compiling first for value inputs not seen before (as prepare).
  void run();
  // set_input for each input (input_names' order), run, and every output.
  std::vector<NDArray> run(const std::vector<NDArray>& inputs);
  size_t num_outputs() const { return num_outputs_; }
  // Of the last run (a ModelError before one, or once its compiled model was dropped for another).
  NDArray get_output(size_t k) const;

  size_t compilations() const { return compilations_; }  // models compiled so far
  size_t cached() const;                                 // compiled models kept
  // The compiled model the last run used (before any run: the one made at construction); a
  // ModelError if there is none yet.
  runtime::GraphExecutor& executor() const;

 private:
  struct Compiled;
  const NDArray& value_of(const std::string& input) const;
  std::string key() const;
  Compiled& compile_for_values();
  // Builds `g` and keeps it under `key`, dropping the least recently used past max_compiled.
  Compiled& compile(const graph::Graph& g, std::string key);
  Compiled& prepared();   // the kept model for the values set, compiled now if there is none
  void forget_current();  // the last run's model is dropped: its outputs are gone too

  std::string path_, bytes_;
  OnnxSessionOptions options_;
  std::vector<std::string> input_names_, value_inputs_;
  std::vector<NDArray> values_;  // per input_names_ entry: the value set for the next run
  size_t num_outputs_ = 0;
  size_t compilations_ = 0;
  uint64_t clock_ = 0;
  std::vector<std::unique_ptr<Compiled>> compiled_;
  Compiled* current_ = nullptr;
  bool ran_ = false;
};

}  // namespace loom::frontend
