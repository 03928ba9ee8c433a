// A user's program against an installed Loom (find_package(Loom), Loom::compiler and
// Loom::simulators, public headers only): compiles the built-in MLP for the CPU and runs it with
// the graph executor; runs an int8 matmul on the accelerator's functional simulator through the
// one device interface; and compiles accelerator operators with the public tiling choosers on
// hard and sampled shapes, each checked against this program's own loops (accel_shapes.cc). The
// simulator backends are there because the program links Loom::simulators: nothing registers
// them by hand. Prints "consumer ok" and exits 0 when everything matches.
#include <cmath>
#include <cstdio>
#include <string>

#include "accel_shapes.h"
#include "loom/accel/examples.h"
#include "loom/accel/program.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/reference.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/graph_executor.h"

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

  std::string backends;
  for (const std::string& b : accel_backends()) backends += " " + b;
  std::printf("accelerator backends registered by linking Loom::simulators:%s\n", backends.c_str());
  accel::AccelConfig cfg = accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/default.json");
  auto dev = make_accel_device("fsim", cfg.to_json());
  accel::Program p = accel::matmul_program(*dev, cfg, 16, 64, 64, 5);
  auto fresh = make_accel_device("fsim", cfg.to_json());
  accel::ProgramResult r = accel::run_program(p, *fresh);
  std::printf("int8 matmul on %s: %zu mismatched checks\n", fresh->name().c_str(), r.mismatched_checks);

  int wrong_shapes = check_accel_shapes(cfg, 2026, 10);
  std::printf("accelerator operators with the public choosers: %d shapes wrong or failed\n", wrong_shapes);
  bool ok = err < 1e-4 && r.mismatched_checks == 0 && wrong_shapes == 0;
  std::printf(ok ? "consumer ok\n" : "consumer FAILED\n");
  return ok ? 0 : 1;
}
