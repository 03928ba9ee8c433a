// Compiling and running built-in workloads on the CPU, shared by `loom run`, `loom export` and
// `loom demo`.
#pragma once
#include <ostream>
#include <string>

namespace loom::tools {

struct CpuRunOptions {
  int threads = 0;  // 0: the runtime's default
  int reps = 5;
  bool print_ir = false;
  bool verify = true;
  std::string load_path;    // call from this exported library instead of JIT-compiling
  std::string export_path;  // also write the compiled function here
};

struct CpuRunReport {
  double compile_ms = 0, best_ms = 0, gflops = 0, max_abs_error = 0;
  int threads = 0;
  std::string reference;  // what the output was checked against
};

CpuRunReport run_cpu_workload(const std::string& name, int size, const CpuRunOptions& opt, std::ostream& log);
void print_report(const std::string& name, const CpuRunReport& r, bool verified, std::ostream& os);

}  // namespace loom::tools
