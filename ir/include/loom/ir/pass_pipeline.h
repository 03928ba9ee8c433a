// One pass pipeline for loops (schedule::lower) and graphs (graph::optimize): the passes are one
// list of {name, run, print}; run() calls them in order and, after each, hands the state to an
// observer and prints it to a dump stream. The printer is called only when someone reads the
// text (a dump stream is set, or the observer asks), and at most once per pass, so a pipeline
// without dumps prints nothing.
#pragma once
#include <cstddef>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "loom/runtime/env.h"

namespace loom::ir {

template <typename State>
struct NamedPass {
  std::string name;
  std::function<void(State&)> run;
  std::function<std::string(const State&)> print;  // the state as text after this pass
};

template <typename State>
struct PassRunOptions {
  std::ostream* dump = nullptr;  // set: each pass's printed state goes here, under `header(name)`
  std::function<std::string(const std::string& pass)> header;
  // Called after each pass; `text()` prints the state (only when called).
  std::function<void(const std::string& pass, const State&, const std::function<std::string()>& text)> observe;
  // Called after each pass, before the observer and the dump: throws if the state is broken.
  std::function<void(const std::string& pass, const State&)> verify;
  std::string stop_after;  // a pass name: the run ends after it
};

template <typename State>
class PassPipeline {
 public:
  explicit PassPipeline(std::vector<NamedPass<State>> passes) : passes_(std::move(passes)) {}

  // This pipeline with `pass` run right after the pass named `after`; nullopt if there is none.
  std::optional<PassPipeline> inserted_after(const std::string& after, NamedPass<State> pass) const {
    for (size_t i = 0; i < passes_.size(); ++i)
      if (passes_[i].name == after) {
        PassPipeline p = *this;
        p.passes_.insert(p.passes_.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(pass));
        return p;
      }
    return std::nullopt;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (auto& p : passes_) out.push_back(p.name);
    return out;
  }

  void run(State& state, const PassRunOptions<State>& options) const {
    for (auto& p : passes_) {
      p.run(state);
      if (options.verify) options.verify(p.name, state);
      std::optional<std::string> printed;  // printed once, however many read it
      auto text = [&]() -> std::string {
        if (!printed) printed = p.print ? p.print(state) : std::string();
        return *printed;
      };
      if (options.observe) options.observe(p.name, state, text);
      if (options.dump)
        *options.dump << (options.header ? options.header(p.name) : "// after " + p.name + "\n") << text();
      if (options.stop_after == p.name) return;
    }
  }

 private:
  std::vector<NamedPass<State>> passes_;
};

// The dump stream for a pipeline: `stream` (std::cerr when null) if `requested` or the flag
// environment variable `env_flag` is set (runtime/env.h), else none.
inline std::ostream* dump_stream(bool requested, std::ostream* stream, const char* env_flag) {
  return requested || runtime::env::flag(env_flag) ? (stream ? stream : &std::cerr) : nullptr;
}

}  // namespace loom::ir
