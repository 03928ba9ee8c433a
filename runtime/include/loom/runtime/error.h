// Typed errors shared by every Loom layer. User errors (bad model, shape, schedule, config,
// instruction) derive from loom::Error and carry a message that names the object at fault.
// Internal invariants use LOOM_CHECK, which throws loom::InternalError with file:line.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace loom {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

#define LOOM_DECLARE_ERROR(Name) \
  class Name : public Error {    \
   public:                       \
    using Error::Error;          \
  }

LOOM_DECLARE_ERROR(ShapeError);     // tensor shapes that do not agree
LOOM_DECLARE_ERROR(TypeError);      // unsupported or mismatched data types
LOOM_DECLARE_ERROR(ScheduleError);  // illegal schedule primitive
LOOM_DECLARE_ERROR(LoweringError);  // program that cannot be lowered
LOOM_DECLARE_ERROR(CodegenError);   // backend failed to compile
LOOM_DECLARE_ERROR(RuntimeError);   // module loading / calling problems
LOOM_DECLARE_ERROR(ConfigError);    // invalid configuration: accelerator config, LOOM_* environment variable
LOOM_DECLARE_ERROR(IsaError);       // malformed / illegal instruction
LOOM_DECLARE_ERROR(ModelError);     // malformed or unsupported model (importers, graph, compiled-model files)
LOOM_DECLARE_ERROR(DeviceError);    // device backend failure (DMA range, timeout, deadlock)
LOOM_DECLARE_ERROR(InternalError);  // broken internal invariant: a Loom bug

namespace detail {
// Streams all arguments into one string: LOOM_THROW(ShapeError, "tensor ", name, " has rank ", r).
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace loom

#define LOOM_THROW(ErrorType, ...) throw ::loom::ErrorType(::loom::detail::concat(__VA_ARGS__))

#define LOOM_CHECK(cond, ...)                                                                                \
  do {                                                                                                       \
    if (!(cond))                                                                                             \
      throw ::loom::InternalError(                                                                           \
          ::loom::detail::concat(__FILE__, ":", __LINE__, ": check '", #cond, "' failed: ", ##__VA_ARGS__)); \
  } while (0)
