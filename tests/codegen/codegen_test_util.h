// Helpers for the LLVM backend tests: build lowered functions by hand, run them compiled and
// interpreted, and compare.
#pragma once
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/codegen/llvm.h"
#include "loom/ir/buffer.h"
#include "loom/ir/eval.h"
#include "loom/ir/stmt.h"

namespace loom::test {

inline ir::Buffer arg(const std::string& name, DataType t, std::vector<int64_t> shape) {
  std::vector<ir::Expr> s;
  for (int64_t d : shape) s.push_back(ir::Expr(static_cast<int>(d)));
  return ir::make_buffer(name, t, s);
}

inline std::vector<int64_t> shape_of(const ir::Buffer& b) {
  std::vector<int64_t> s;
  for (auto& e : b->shape) s.push_back(*ir::as_const_int(e));
  return s;
}

// Random inputs for every argument (outputs too: the function must overwrite them).
inline std::vector<NDArray> random_args(const ir::LoweredFunc& f, uint64_t seed, double lo = -10, double hi = 10) {
  std::vector<NDArray> args;
  for (auto& b : f.args) {
    NDArray a = NDArray::empty(shape_of(b), b->dtype);
    a.fill_random(seed++, b->dtype.is_uint() ? 0 : lo, hi);
    args.push_back(a);
  }
  return args;
}

inline std::vector<NDArray> deep_copy(const std::vector<NDArray>& v) {
  std::vector<NDArray> r;
  for (auto& a : v) r.push_back(a.copy());
  return r;
}

inline codegen::LLVMOptions unoptimized() {
  codegen::LLVMOptions o;
  o.opt_level = 0;
  return o;
}

// Compiles `f`, runs it and the interpreter on the same inputs, and compares every argument.
inline ::testing::AssertionResult matches_interpreter(const ir::LoweredFunc& f, uint64_t seed = 1, double lo = -10,
                                                      double hi = 10, const codegen::LLVMOptions& opts = {}) {
  runtime::Module m = codegen::build_llvm({f}, opts);
  std::vector<NDArray> got = random_args(f, seed, lo, hi);
  std::vector<NDArray> want = deep_copy(got);
  m.call(f.name, got);
  ir::interpret(f, want);
  for (size_t i = 0; i < got.size(); ++i) {
    double tol = f.args[i]->dtype.is_float() && f.args[i]->dtype.bits() == 16 ? 1e-3 : 1e-5;
    auto r = arrays_close(got[i], want[i], tol, tol);
    if (!r) return r << " (argument '" << f.args[i]->name << "' of " << f.name << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace loom::test
