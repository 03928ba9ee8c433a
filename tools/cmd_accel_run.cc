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
#include "loom/ops/accel_schedules.h"
#include "loom/runtime/error.h"
#include "loom/schedule/lower.h"

namespace loom::tools {

using namespace loom::ir;

static int accel_run(const std::vector<std::string>& args) {
  CLI::App app{"Compile an int8 operator for the accelerator, run it on a backend and verify it against the naive reference",
               "loom accel-run"};
  std::string op, config;
  int C = 64, O = 64, hw = 14, stride = 1, pad = 1, vt = 2, oc_blocks = 1;
  bool print_ir = false, disasm = false;
  BackendOptions bo;
  app.add_option("operator", op, "dense, conv2d or add")->required();
  app.add_option("--config", config, "accelerator config (JSON; default: the built-in default config)")->check(CLI::ExistingFile);
  number_option(app, "--channels", C, "input channels (a multiple of the config's block_in)", 1, 4096)->capture_default_str();
  std::map<std::string, CLI::Option*> shaped = {
      {"--out-channels", number_option(app, "--out-channels", O, "dense, conv2d: output channels (a multiple of block_out)", 1, 4096)},
      {"--size", number_option(app, "--size", hw, "conv2d, add: height and width", 1, 256)},
      {"--stride", number_option(app, "--stride", stride, "conv2d: stride", 1, 16)},
      {"--pad", number_option(app, "--pad", pad, "conv2d: zero padding on every side", 0, 16)},
      {"--oc-blocks", number_option(app, "--oc-blocks", oc_blocks, "conv2d: output-channel blocks per tile (default: chosen)", 1, 256)}};
  for (auto& [name, o] : shaped)
    if (name != "--oc-blocks") o->capture_default_str();
  number_option(app, "--vthreads", vt, "virtual threads (contexts whose loads overlap the other's compute)", 1, 64)->capture_default_str();
  app.add_flag("--print-ir", print_ir, "print the lowered loop IR");
  app.add_flag("--disasm", disasm, "print the instruction stream");
  add_backend_options(app, bo);
  if (int rc = parse(app, args); rc >= 0) return rc;
  // The options an operator does not use are errors rather than silently ignored.
  std::map<std::string, std::vector<std::string>> uses = {
      {"dense", {"--out-channels"}}, {"conv2d", {"--out-channels", "--size", "--stride", "--pad", "--oc-blocks"}}, {"add", {"--size"}}};
  if (!uses.count(op)) LOOM_THROW(Error, "unknown operator '", op, "' (dense, conv2d, add)");
  for (auto& [name, o] : shaped)
    if (o->count() && std::find(uses[op].begin(), uses[op].end(), name) == uses[op].end())
      LOOM_THROW(Error, name, " does not apply to ", op);
  accel::AccelConfig cfg = config.empty() ? accel::default_config() : accel::AccelConfig::load(config);
  ops::Blocking b{cfg.batch, cfg.block_in, cfg.block_out};
  if (C % b.block_in || O % b.block_out)
    LOOM_THROW(ShapeError, "channels (", C, ") and out-channels (", O, ") must be multiples of the config's blocks (", b.block_in, ", ", b.block_out, ")");
  if (op == "conv2d" && hw + 2 * pad < 3) LOOM_THROW(Error, "conv2d: --size ", hw, " with --pad ", pad, " is smaller than the 3x3 kernel");
  std::vector<Tensor> inputs;
  ops::QuantizedStages q;
  schedule::Schedule* sched = nullptr;
  std::unique_ptr<schedule::Schedule> holder;
  double macs = 0;
  Tensor reference;  // what the output must equal (the operator's own definition unless set)
  if (op == "dense") {
    Tensor X = placeholder({1, C / b.block_in, b.batch, b.block_in}, DataType::Int(8), "X");
    Tensor W = placeholder({O / b.block_out, C / b.block_in, b.block_out, b.block_in}, DataType::Int(8), "W");
    q = ops::dense_int8_blocked(X, W, {8, true});
    holder = std::make_unique<schedule::Schedule>(std::vector<Tensor>{q.out});
    ops::AccelLimits lim{cfg.inp_depth(), cfg.wgt_depth(), cfg.acc_depth()};
    ops::schedule_dense_int8_accel(*holder, q, b, ops::choose_dense_tiling(1, C / b.block_in, O / b.block_out, vt, lim));
    inputs = {X, W};
    macs = double(b.batch) * C * O;
  } else if (op == "conv2d") {
    Tensor X = placeholder({1, C / b.block_in, hw, hw, b.batch, b.block_in}, DataType::Int(8), "X");
    Tensor W = placeholder({O / b.block_out, C / b.block_in, 3, 3, b.block_out, b.block_in}, DataType::Int(8), "W");
    q = ops::conv2d_int8_blocked(X, W, stride, pad, {8, true});
    holder = std::make_unique<schedule::Schedule>(std::vector<Tensor>{q.out});
    int out = (hw + 2 * pad - 3) / stride + 1;
    ops::AccelLimits lim{cfg.inp_depth(), cfg.wgt_depth(), cfg.acc_depth()};
    ops::ConvShape shape{out, out, O / b.block_out, C / b.block_in, 3, 3, stride, false};
    ops::AccelConvTiling t = ops::choose_conv_tiling(shape, vt, lim);
    if (shaped["--oc-blocks"]->count()) {
      t.oc_blocks = oc_blocks;
      check_conv_tiling(shape, t, lim);  // names what does not divide or fit
    }
    ops::schedule_conv2d_int8_accel(*holder, q, b, t);
    inputs = {X, W};
    macs = double(b.batch) * O * C * 9 * out * out;
  } else if (op == "add") {
    Tensor A = placeholder({1, C / b.block_in, hw, hw, b.batch, b.block_in}, DataType::Int(8), "A");
    Tensor B = placeholder({1, C / b.block_in, hw, hw, b.batch, b.block_in}, DataType::Int(8), "B");
    Tensor Eye = placeholder({b.block_in, b.block_in}, DataType::Int(8), "eye");
    if (b.block_in != b.block_out) LOOM_THROW(ShapeError, "add: the accelerator widens through an identity block, which needs block_in == block_out");
    auto add = ops::add_int8_widening(A, B, Eye, {1, false});
    q = add.q;
    reference = ops::add_int8(A, B, {1, false}).out;  // the CPU definition: plain int32 adds
    holder = std::make_unique<schedule::Schedule>(std::vector<Tensor>{q.out});
    ops::AccelConvTiling t = ops::choose_conv_tiling(hw, hw, C / b.block_in, vt, cfg.acc_depth());
    t.oc_blocks = 1;
    ops::schedule_add_int8_accel(*holder, add, b, t);
    inputs = {A, B, Eye};
    macs = 2.0 * C * hw * hw * b.block_in;  // the two widening GEMMs
  }
  sched = holder.get();
  std::vector<Tensor> fargs = inputs;
  fargs.push_back(q.out);
  LoweredFunc f = schedule::lower(*sched, fargs, op);
  if (print_ir) std::cout << f << "\n";
  codegen::AccelModule m = codegen::build_accel(f, cfg);
  auto dev = open_accel_backend(bo, cfg);
  if (disasm) std::cout << m.disassemble(*dev);
  std::vector<NDArray> arrays;
  std::map<const Operation*, NDArray> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int64_t> shape;
    for (auto& e : inputs[i].shape()) shape.push_back(*as_const_int(e));
    arrays.push_back(NDArray::empty(shape, DataType::Int(8)));
    arrays.back().fill_random(1 + i, -128, 127);
    if (inputs[i].name() == "eye") {  // add's identity block
      auto id = ops::identity_block(int(shape[0]));
      std::copy(id.begin(), id.end(), arrays.back().data<int8_t>());
    }
    in[inputs[i].op().get()] = arrays.back();
  }
  std::vector<int64_t> oshape;
  for (auto& e : q.out.shape()) oshape.push_back(*as_const_int(e));
  arrays.push_back(NDArray::zeros(oshape, DataType::Int(8)));
  auto stats = m.run(*dev, arrays);
  NDArray want = reference_eval({reference.defined() ? reference : q.out}, in)[0];
  int64_t bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) bad += want.data<int8_t>()[i] != arrays.back().data<int8_t>()[i];
  std::cout << op << " on " << dev->name() << " (config '" << cfg.name << "'): " << stats.instructions << " instructions\n";
  for (auto& [k, v] : stats.counters) std::cout << "  " << k << ": " << v << "\n";
  if (stats.cycles) {
    double peak = double(cfg.batch) * cfg.block_in * cfg.block_out;
    std::cout << "  cycles: " << stats.cycles << ", GEMM utilization " << 100.0 * macs / (peak * double(stats.cycles)) << "%\n";
  }
  std::cout << (bad ? "MISMATCH: " + std::to_string(bad) + " elements differ from the reference\n" : "output matches the reference bit-exactly\n");
  return bad ? 1 : 0;
}

LOOM_REGISTER_COMMAND("accel-run", "compile an int8 operator for the accelerator, run it on a backend and verify it", accel_run);

}  // namespace loom::tools
