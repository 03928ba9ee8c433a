// Compiled modules: named host functions with typed signatures, either JIT-compiled in this process
// or loaded from a shared library exported by the compiler. Only the runtime is needed to load and
// call an exported module.
//
// Compiled-function ABI (every backend that targets the host CPU):
//   extern "C" int32_t fn(void** args);
// args[i] is the data pointer of the i-th tensor argument (inputs then outputs, compact row-major,
// 64-byte aligned). A function whose arguments have symbolic dimensions (dim_expr.h) takes one
// more: args[n] points to the int64_t values of its shape variables, in the order of
// FunctionSignature::shape_vars. 0 means success; any other value is a failure whose message the function has
// reported through loom_set_last_error().
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/runtime/dim_expr.h"
#include "loom/runtime/dtype.h"
#include "loom/runtime/ndarray.h"

namespace loom::runtime {

using CompiledFn = int32_t (*)(void** args);

struct ArgSpec {
  std::string name;
  // The shape. With symbolic dimensions: the largest shape where the variables' ranges are known
  // (a compiled model's values), -1 for a symbolic dimension where they are not (a kernel's).
  std::vector<int64_t> shape;
  DataType dtype;
  ShapeExpr dims{};  // empty: the shape is static; else the dimensions, some symbolic
  bool is_static() const { return dims.empty(); }
  std::string str() const;  // "float32[64, 32]", "float32[seq, 64]"
};

struct FunctionSignature {
  std::string name;
  std::vector<ArgSpec> args;
  std::vector<std::string> shape_vars{};  // the variables of the arguments' symbolic dimensions
};

// Name of the NUL-terminated JSON array of signatures embedded in exported libraries.
inline constexpr const char* kMetadataSymbol = "__loom_module_metadata";
std::string signatures_to_json(const std::vector<FunctionSignature>& sigs);
// Throws RuntimeError naming `origin` on malformed metadata.
std::vector<FunctionSignature> signatures_from_json(const std::string& json, const std::string& origin);

class Module {
 public:
  Module() = default;
  // `owner` keeps the code alive (a JIT session, a dlopen handle); functions[i] implements sigs[i].
  Module(std::vector<FunctionSignature> sigs, std::vector<CompiledFn> functions, std::shared_ptr<void> owner);

  // Loads a shared library written by codegen::export_library. Throws RuntimeError naming the path.
  static Module load(const std::string& path);
  // Loads a shared library held in memory (e.g. inside a compiled-model file) through an anonymous
  // in-memory file; `origin` names it in errors.
  static Module load_from_memory(const std::string& library_bytes, const std::string& origin);

  bool defined() const { return impl_ != nullptr; }
  bool has_function(const std::string& name) const;
  std::vector<std::string> function_names() const;
  // Throws RuntimeError if the module has no such function.
  const FunctionSignature& signature(const std::string& name) const;
  CompiledFn get_function(const std::string& name) const;

  // Checks the arguments against the signature (ShapeError / TypeError naming the function and the
  // argument), calls the function and turns a failure code into a RuntimeError with its message.
  void call(const std::string& name, const std::vector<NDArray>& args) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace loom::runtime

// Hooks called by compiled code. Exported with C linkage so JIT code and loaded modules resolve
// them from the process.
extern "C" {
// Records the message of a failure about to be returned as a non-zero code (per thread).
void loom_set_last_error(const char* message);
const char* loom_get_last_error();
// Heap memory for large or dynamically sized temporaries; never returns null for nbytes > 0
// (reports and returns null only when out of memory).
void* loom_alloc(uint64_t nbytes, uint64_t alignment);
void loom_free(void* ptr);
}
