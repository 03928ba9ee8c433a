// `loom accel-run`: compiles a chosen int8 operator for the accelerator (schedule -> lowering ->
// accelerator codegen), runs it on a backend, checks it against the naive reference and prints
// the counters (and cycles / GEMM utilization on timed backends).
#include <iostream>

#include "accel_backend.h"
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
  Options opt(args, {"print-ir", "disasm"});
  if (opt.positional().size() != 1)
    LOOM_THROW(Error, "usage: loom accel-run <dense|conv2d|add> [--backend fsim|rtl] [--config cfg.json] [--channels C] [--out-channels O] [--size HW] "
                      "[--stride S] [--pad P] [--vthreads V] [--oc-blocks N] [--print-ir] [--disasm]");
  std::string op = opt.positional()[0];
  accel::AccelConfig cfg = opt.has("config") ? accel::AccelConfig::load(opt.get("config")) : accel::default_config();
  ops::Blocking b{cfg.batch, cfg.block_in, cfg.block_out};
  int C = int(opt.get_int("channels", 64)), O = int(opt.get_int("out-channels", 64)), vt = int(opt.get_int("vthreads", 2));
  if (C % b.block_in || O % b.block_out)
    LOOM_THROW(ShapeError, "channels (", C, ") and out-channels (", O, ") must be multiples of the config's blocks (", b.block_in, ", ", b.block_out, ")");
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
    ops::schedule_dense_int8_accel(*holder, q, b, vt);
    inputs = {X, W};
    macs = double(b.batch) * C * O;
  } else if (op == "conv2d") {
    int hw = int(opt.get_int("size", 14)), stride = int(opt.get_int("stride", 1)), pad = int(opt.get_int("pad", 1));
    Tensor X = placeholder({1, C / b.block_in, hw, hw, b.batch, b.block_in}, DataType::Int(8), "X");
    Tensor W = placeholder({O / b.block_out, C / b.block_in, 3, 3, b.block_out, b.block_in}, DataType::Int(8), "W");
    q = ops::conv2d_int8_blocked(X, W, stride, pad, {8, true});
    holder = std::make_unique<schedule::Schedule>(std::vector<Tensor>{q.out});
    int out = (hw + 2 * pad - 3) / stride + 1;
    ops::AccelConvTiling t = ops::choose_conv_tiling(out, out, O / b.block_out, vt, cfg.acc_depth());
    if (opt.has("oc-blocks")) t.oc_blocks = int(opt.get_int("oc-blocks", 1));
    ops::schedule_conv2d_int8_accel(*holder, q, b, t);
    inputs = {X, W};
    macs = double(b.batch) * O * C * 9 * out * out;
  } else if (op == "add") {
    int hw = int(opt.get_int("size", 14));
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
  } else {
    LOOM_THROW(Error, "unknown operator '", op, "' (dense, conv2d, add)");
  }
  sched = holder.get();
  std::vector<Tensor> fargs = inputs;
  fargs.push_back(q.out);
  LoweredFunc f = schedule::lower(*sched, fargs, op);
  if (opt.has("print-ir")) std::cout << f << "\n";
  codegen::AccelModule m = codegen::build_accel(f, cfg);
  auto dev = open_accel_backend(opt, cfg);
  if (opt.has("disasm")) std::cout << m.disassemble(*dev);
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

LOOM_REGISTER_COMMAND("accel-run", "compile an int8 operator for the accelerator, run it on a backend and verify it",
                      std::string("loom accel-run <dense|conv2d|add> [--config cfg.json] [--channels C] [--out-channels O]\n"
                                  "               [--size HW] [--stride S] [--pad P] [--vthreads V] [--oc-blocks N] [--print-ir] [--disasm]\n"
                                  "               ") + kBackendUsage,
                      accel_run);

}  // namespace loom::tools
