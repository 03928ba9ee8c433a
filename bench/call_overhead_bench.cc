// The cost of calling a compiled operator from Python (loom.build's Function) against the same
// call from C++, in the same run, and zero-copy shown on a 100 MB tensor: the Python half is
// bench/python_call_overhead.py, run by this program with the package of this build.
//
//   build/bin/call_overhead_bench [--elements N] [--calls K]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/codegen/llvm.h"
#include "loom/ir/tensor.h"
#include "loom/runtime/ndarray.h"
#include "loom/schedule/lower.h"

using namespace loom;

int main(int argc, char** argv) {
  int elements = 16, calls = 200000;
  try {
    for (int i = 1; i + 1 < argc; i += 2) {
      std::string a = argv[i];
      if (a == "--elements")
        elements = bench::count_option(argv[i + 1], "--elements", 1 << 24);
      else if (a == "--calls")
        calls = bench::count_option(argv[i + 1], "--calls", 100000000);
      else
        throw std::invalid_argument("unknown option " + a + " (--elements N, --calls K)");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "call_overhead_bench: %s\n", e.what());
    return 2;
  }
  // C = A + B over `elements` float32s: the operator bench/python_call_overhead.py builds too.
  ir::Tensor A = ir::placeholder({elements}, DataType::Float(32), "A");
  ir::Tensor B = ir::placeholder({elements}, DataType::Float(32), "B");
  ir::Tensor C = ir::compute(
      {elements}, [&](ir::Var i) { return A(i) + B(i); }, "C");
  schedule::Schedule s({C});
  runtime::Module m = codegen::build_llvm({schedule::lower(s, {A, B, C}, "vadd")});
  runtime::CompiledFn fn = m.get_function("vadd");
  NDArray a = NDArray::zeros({elements}, DataType::Float(32)), b = NDArray::zeros({elements}, DataType::Float(32)),
          c = NDArray::zeros({elements}, DataType::Float(32));
  void* args[3] = {a.raw_data(), b.raw_data(), c.raw_data()};
  for (int i = 0; i < 1000; ++i) fn(args);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    if (fn(args) != 0) return 1;
  double cpp_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;

  std::string cmd = "PYTHONPATH=" LOOM_PYTHON_DIR " /usr/bin/python3 " LOOM_BENCH_DIR
                    "/python_call_overhead.py --elements " +
                    std::to_string(elements) + " --calls " + std::to_string(calls / 4);
  std::string py = bench::command_output(cmd);
  std::printf("call overhead of a compiled operator (C = A + B, %d float32), %s\n", elements,
              bench::cpu_name().c_str());
  std::printf("  C++, the compiled function called directly: %.3f us per call (%d calls)\n", cpp_ns / 1e3, calls);
  if (py.empty()) {
    std::printf("  Python: not measured (the package loom of this build or /usr/bin/python3 is missing)\n");
    return 0;
  }
  double py_ns = 0;
  if (std::sscanf(py.c_str(), "python_call_ns %lf", &py_ns) != 1) {
    std::printf("  Python: unexpected output:\n%s", py.c_str());
    return 1;
  }
  std::printf("  Python, loom.build's Function on loom.empty arrays: %.3f us per call\n", py_ns / 1e3);
  std::printf("  extra per call from Python: %.3f us (goal: under 5 us); ratio %.1fx\n", (py_ns - cpp_ns) / 1e3,
              py_ns / cpp_ns);
  std::printf("%s", py.substr(py.find('\n') + 1).c_str());
  return 0;
}
