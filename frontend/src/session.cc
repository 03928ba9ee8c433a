// OnnxSession: compile once, or per distinct value of the inputs an operator reads at compile
// time (session.h).
#include "loom/frontend/session.h"

#include <onnx/onnx_pb.h>

#include <algorithm>

#include "onnx_importer.h"

namespace loom::frontend {

using onnx_detail::file_bytes;
using onnx_detail::import_onnx_file_bytes;

struct OnnxSession::Compiled {
  std::string key;  // the value inputs' values it was compiled for
  std::unique_ptr<runtime::GraphExecutor> executor;
  uint64_t last_used = 0;
};

OnnxSession::OnnxSession(const std::string& path, OnnxSessionOptions options)
    : path_(path), options_(std::move(options)) {
  if (options_.max_compiled < 1 || options_.max_compiled > 1024)
    LOOM_THROW(ConfigError, "OnnxSession: max_compiled is ", options_.max_compiled, ", not in [1, 1024]");
  if (options_.import.bind_only_where_needed)
    LOOM_THROW(ConfigError,
               "OnnxSession: import.bind_only_where_needed must be off (the session finds the inputs "
               "an operator needs itself)");
  bytes_ = file_bytes(path_);
  try {
    current_ = &compile(import_onnx_file_bytes(bytes_, path_, options_.import), "");
  } catch (const InputValuesNeeded& e) {
    value_inputs_ = e.inputs;  // compiled at the first run, when the values are known
  }
  onnx::ModelProto model;
  model.ParseFromString(bytes_);  // it imported, or failed only for want of values: it parses
  for (const auto& in : model.graph().input()) {
    bool initializer = std::any_of(model.graph().initializer().begin(), model.graph().initializer().end(),
                                   [&](const onnx::TensorProto& t) { return t.name() == in.name(); });
    if (!initializer && !options_.import.input_values.count(in.name())) input_names_.push_back(in.name());
  }
  values_.resize(input_names_.size());
  num_outputs_ = size_t(model.graph().output_size());
}

OnnxSession::~OnnxSession() = default;
OnnxSession::OnnxSession(OnnxSession&&) noexcept = default;
OnnxSession& OnnxSession::operator=(OnnxSession&&) noexcept = default;

void OnnxSession::set_input(const std::string& name, const NDArray& value) {
  auto at = std::find(input_names_.begin(), input_names_.end(), name);
  if (at == input_names_.end()) {
    std::string names;
    for (const std::string& n : input_names_) names += (names.empty() ? "'" : ", '") + n + "'";
    LOOM_THROW(ModelError, "'", path_, "': no input '", name, "' (its inputs: ", names.empty() ? "none" : names, ")");
  }
  if (!value.defined()) LOOM_THROW(ModelError, "'", path_, "': the value given for input '", name, "' is empty");
  // The importer folds values and the executor copies them on the host.
  values_[size_t(at - input_names_.begin())] = value.on_host() ? value : value.to_device({kDLCPU, 0});
}

const NDArray& OnnxSession::value_of(const std::string& name) const {
  auto at = std::find(input_names_.begin(), input_names_.end(), name);
  LOOM_CHECK(at != input_names_.end(), "value input '", name, "' is not a run-time input");
  return values_[size_t(at - input_names_.begin())];
}

// The value inputs' element types, shapes and bytes, in value_inputs_' order.
std::string OnnxSession::key() const {
  std::string k;
  for (const std::string& name : value_inputs_) {
    const NDArray& v = value_of(name);  // on the host (set_input)
    k += name + ":" + v.describe() + ":";
    k.append(static_cast<const char*>(v.raw_data()), v.nbytes());
    k += ";";
  }
  return k;
}

OnnxSession::Compiled& OnnxSession::compile_for_values() {
  graph::Graph g;
  std::vector<std::string> inputs = value_inputs_;
  for (;;) {
    OnnxImportOptions o = options_.import;
    for (const std::string& name : inputs) o.input_values[name] = value_of(name);
    try {
      g = import_onnx_file_bytes(bytes_, path_, o);
      break;
    } catch (const InputValuesNeeded& e) {
      // An operator reached only now that earlier values are known: its inputs join the key.
      bool grew = false;
      for (const std::string& name : e.inputs)
        if (std::find(inputs.begin(), inputs.end(), name) == inputs.end()) {
          inputs.push_back(name);
          grew = true;
        }
      if (!grew) throw;
      std::sort(inputs.begin(), inputs.end());
    }
  }
  if (inputs != value_inputs_) {
    // The models compiled for the shorter key can no longer be chosen.
    value_inputs_ = inputs;
    compiled_.clear();
    forget_current();
  }
  return compile(g, key());
}

OnnxSession::Compiled& OnnxSession::compile(const graph::Graph& g, std::string key) {
  auto built = graph::build(g, options_.build);
  auto ex = std::make_unique<runtime::GraphExecutor>(
      runtime::GraphExecutor::from_model_file(built.file, path_, options_.executor));
  ++compilations_;
  if (compiled_.size() >= options_.max_compiled) {
    auto oldest = std::min_element(compiled_.begin(), compiled_.end(),
                                   [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
    if (oldest->get() == current_) forget_current();
    compiled_.erase(oldest);
  }
  compiled_.push_back(std::make_unique<Compiled>(Compiled{std::move(key), std::move(ex), 0}));
  return *compiled_.back();
}

void OnnxSession::forget_current() {
  current_ = nullptr;
  ran_ = false;  // its outputs went with it
}

OnnxSession::Compiled& OnnxSession::prepared() {
  if (compiled_.empty() && value_inputs_.empty()) LOOM_THROW(ModelError, "OnnxSession: this session was moved from");
  for (size_t i = 0; i < input_names_.size(); ++i)
    if (!values_[i].defined()) LOOM_THROW(ModelError, "'", path_, "': input '", input_names_[i], "' is not set");
  Compiled* chosen = nullptr;
  if (!value_inputs_.empty()) {
    const std::string k = key();
    for (auto& c : compiled_)
      if (c->key == k) chosen = c.get();
    if (!chosen) chosen = &compile_for_values();
  } else {
    chosen = compiled_.front().get();
  }
  return *chosen;
}

void OnnxSession::prepare() {
  Compiled& chosen = prepared();
  chosen.last_used = ++clock_;
}

void OnnxSession::run() {
  Compiled* chosen = &prepared();
  ran_ = false;
  runtime::GraphExecutor& ex = *chosen->executor;
  for (size_t i = 0; i < ex.num_inputs(); ++i) {
    const std::string& name = ex.input_spec(i).name;
    auto at = std::find(input_names_.begin(), input_names_.end(), name);
    LOOM_CHECK(at != input_names_.end(), "compiled input '", name, "' is not one of the model's");
    ex.set_input(i, values_[size_t(at - input_names_.begin())]);
  }
  ex.run();
  chosen->last_used = ++clock_;
  current_ = chosen;
  ran_ = true;
}

std::vector<NDArray> OnnxSession::run(const std::vector<NDArray>& inputs) {
  if (inputs.size() != input_names_.size())
    LOOM_THROW(ModelError, "'", path_, "': ", inputs.size(), " inputs given, the model takes ", input_names_.size());
  for (size_t i = 0; i < inputs.size(); ++i) set_input(input_names_[i], inputs[i]);
  run();
  std::vector<NDArray> out;
  for (size_t k = 0; k < num_outputs_; ++k) out.push_back(get_output(k));
  return out;
}

NDArray OnnxSession::get_output(size_t k) const {
  if (!ran_ || !current_) LOOM_THROW(ModelError, "'", path_, "': no outputs yet (run the session first)");
  return current_->executor->get_output(k);
}

size_t OnnxSession::cached() const { return compiled_.size(); }

runtime::GraphExecutor& OnnxSession::executor() const {
  if (!current_) {
    std::string names;
    for (const std::string& n : value_inputs_) names += (names.empty() ? "'" : ", '") + n + "'";
    LOOM_THROW(ModelError, "'", path_,
               "': no compiled model is current (it is compiled for the values of its input(s) ", names,
               " at a run, and the last run's may have been dropped for another)");
  }
  return *current_->executor;
}

}  // namespace loom::frontend
