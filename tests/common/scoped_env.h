// Sets an environment variable for the lifetime of the object and puts back what was there before
// (ctest sets some, e.g. LOOM_KERNEL_CACHE, for every test).
#pragma once
#include <cstdlib>
#include <optional>
#include <string>

namespace loom::test {

class ScopedEnv {
 public:
  // A null `value` unsets the variable.
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved_)
      ::setenv(name_, saved_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

}  // namespace loom::test
