// A user's program against an installed Loom: compiles the built-in MLP for the CPU and runs it
// with the graph executor, then runs an int8 matmul on the accelerator's functional simulator
// through the one device interface (backends registered explicitly). Prints "consumer ok" and
// exits 0 when both match their references.
#include <cmath>
#include <cstdio>

#include "loom/accel/examples.h"
#include "loom/accel/program.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"
#include "loom/sim/backends.h"

int main() {
  using namespace loom;
  graph::Graph g = graph::builtin_model("mlp");
  auto ex = runtime::GraphExecutor::from_model_file(graph::build(g).file, "mlp");
  NDArray x = NDArray::empty(ex.input_spec(0).shape, ex.input_spec(0).dtype);
  x.fill_random(3);
  NDArray got = ex.run({x})[0], want = graph::reference_run(g, {x})[0];
  double err = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    err = std::fmax(err, std::fabs(got.get_as_double(i) - want.get_as_double(i)));
  std::printf("mlp on the CPU: max |error| vs the interpreter %g\n", err);

  sim::register_backends();
  accel::AccelConfig cfg = accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/default.json");
  auto dev = make_accel_device("fsim", cfg.to_json());
  accel::Program p = accel::matmul_program(*dev, cfg, 16, 64, 64, 5);
  auto fresh = make_accel_device("fsim", cfg.to_json());
  accel::ProgramResult r = accel::run_program(p, *fresh);
  std::printf("int8 matmul on %s: %zu mismatched checks\n", fresh->name().c_str(), r.mismatched_checks);
  bool ok = err < 1e-4 && r.mismatched_checks == 0;
  std::printf(ok ? "consumer ok\n" : "consumer FAILED\n");
  return ok ? 0 : 1;
}
