// `loom accel-run`: compiles a chosen int8 operator for the accelerator (schedule -> lowering ->
// accelerator codegen), runs it on a backend, checks it against the naive reference and prints
// the counters (and cycles / GEMM utilization on timed backends).
#include <algorithm>
#include <iostream>
#include <map>

#include "accel_backend.h"
#include "cli.h"
#include "command.h"
#include "loom/codegen/accel.h"
#include "loom/ir/eval.h"
#include "loom/ir/printer.h"
#include "loom/ops/accel_operators.h"
#include "loom/ops/conv_shape.h"
#include "loom/runtime/error.h"
#include "loom/schedule/lower.h"

namespace loom::tools {

using namespace loom::ir;

static int accel_run(const std::vector<std::string>& args) {
  CLI::App app{
      "Compile an int8 operator for the accelerator, run it on a backend and verify it against the naive reference",
      "loom accel-run"};
  std::string op, config;
  int C = 64, O = 64, hw = 14, stride = 1, pad = 1, vt = 2, oc_blocks = 1;
  bool print_ir = false, disasm = false;
  BackendOptions bo;
  app.add_option("operator", op, "dense, conv2d or add")->required();
  add_config_option(app, config);
  number_option(app, "--channels", C, "input channels (a multiple of the config's block_in)", 1, 4096)
      ->capture_default_str();
  std::map<std::string, CLI::Option*> shaped = {
      {"--out-channels",
       number_option(app, "--out-channels", O, "dense, conv2d: output channels (a multiple of block_out)", 1, 4096)},
      {"--size", number_option(app, "--size", hw, "conv2d, add: height and width", 1, 256)},
      {"--stride", number_option(app, "--stride", stride, "conv2d: stride", 1, 16)},
      {"--pad", number_option(app, "--pad", pad, "conv2d: zero padding on every side", 0, 16)},
      {"--oc-blocks", number_option(app, "--oc-blocks", oc_blocks,
                                    "conv2d: output-channel blocks per tile (default: chosen)", 1, 256)}};
  for (auto& [name, o] : shaped)
    if (name != "--oc-blocks") o->capture_default_str();
  number_option(app, "--vthreads", vt, "virtual threads (contexts whose loads overlap the other's compute)", 1, 64)
      ->capture_default_str();
  app.add_flag("--print-ir", print_ir, "print the lowered loop IR");
  app.add_flag("--disasm", disasm, "print the instruction stream");
  add_backend_options(app, bo);
  if (int rc = parse(app, args); rc >= 0) return rc;
  // The options an operator does not use are errors rather than silently ignored.
  std::map<std::string, std::vector<std::string>> uses = {
      {"dense", {"--out-channels"}},
      {"conv2d", {"--out-channels", "--size", "--stride", "--pad", "--oc-blocks"}},
      {"add", {"--size"}}};
  if (!uses.count(op)) LOOM_THROW(Error, "unknown operator '", op, "' (dense, conv2d, add)");
  for (auto& [name, o] : shaped)
    if (o->count() && std::find(uses[op].begin(), uses[op].end(), name) == uses[op].end())
      LOOM_THROW(Error, name, " does not apply to ", op);
  accel::AccelConfig cfg = load_config(config);
  const ops::AccelTarget target = ops::accel_target(cfg);
  ops::AccelOpSpec spec;
  spec.kind = ops::parse_accel_op_kind(op);
  spec.channels = C;
  spec.out_channels = O;
  spec.size = hw;
  spec.stride = stride;
  spec.pad = pad;
  spec.virtual_threads = vt;
  spec.rq = ops::default_requantize(spec.kind);
  if (shaped["--oc-blocks"]->count()) {  // the chosen tiling with this many blocks per tile (checked)
    int out = int(ops::window_out(hw, 3, stride, pad, pad));
    ops::ConvShape shape{out, out, O / target.blocking.block_out, C / target.blocking.block_in, 3, 3, stride, false};
    spec.conv_tiling = ops::choose_conv_tiling(shape, vt, target.limits);
    spec.conv_tiling->oc_blocks = oc_blocks;
  }
  ops::AccelOperator a = ops::make_accel_operator(spec, target, op);
  if (print_ir) std::cout << a.func << "\n";
  codegen::AccelModule m = codegen::build_accel(a.func, cfg);
  auto dev = open_accel_backend(bo, cfg);
  if (disasm) std::cout << m.disassemble(*dev);
  std::vector<NDArray> arrays = a.random_args(1);
  auto stats = m.run(*dev, arrays);
  NDArray want = a.expected(arrays);
  double macs = a.macs;
  int64_t bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) bad += want.data<int8_t>()[i] != arrays.back().data<int8_t>()[i];
  std::cout << op << " on " << dev->name() << " (config '" << cfg.name << "'): " << stats.instructions
            << " instructions\n";
  for (auto& [k, v] : stats.counters) std::cout << "  " << k << ": " << v << "\n";
  if (stats.cycles) {
    double peak = double(cfg.batch) * cfg.block_in * cfg.block_out;
    std::cout << "  cycles: " << stats.cycles << ", GEMM utilization " << 100.0 * macs / (peak * double(stats.cycles))
              << "%\n";
  }
  std::cout << (bad ? "MISMATCH: " + std::to_string(bad) + " elements differ from the reference\n"
                    : "output matches the reference bit-exactly\n");
  return bad ? 1 : 0;
}

LOOM_REGISTER_COMMAND("accel-run", "compile an int8 operator for the accelerator, run it on a backend and verify it",
                      accel_run);

}  // namespace loom::tools
