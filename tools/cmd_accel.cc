// Accelerator subcommands: build an example program, disassemble a program, run a program on an
// accelerator backend (the functional simulator by default) and print its counters.
#include <fstream>
#include <iostream>

#include "accel_backend.h"
#include "command.h"
#include "loom/accel/examples.h"
#include "loom/accel/hw_params.h"
#include "loom/accel/program.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"

namespace loom::tools {

using namespace loom::accel;

namespace {

AccelConfig config_option(const Options& opt) {
  return opt.has("config") ? AccelConfig::load(opt.get("config")) : default_config();
}

int example(const std::vector<std::string>& args) {
  Options opt(args);
  if (!opt.has("out")) LOOM_THROW(Error, "usage: loom accel-example --out FILE [--config cfg.json] [--m M] [--n N] [--k K] [--seed S]");
  AccelConfig cfg = config_option(opt);
  int M = int(opt.get_int("m", 4 * cfg.batch)), N = int(opt.get_int("n", 4 * cfg.block_out)), K = int(opt.get_int("k", 8 * cfg.block_in));
  auto dev = make_accel_device("fsim", cfg.to_json());
  Program p = matmul_program(*dev, cfg, M, N, K, uint64_t(opt.get_int("seed", 1)));
  p.save(opt.get("out"));
  std::cout << "wrote " << opt.get("out") << ": int8 matmul " << M << "x" << N << "x" << K << " on config '" << cfg.name << "', "
            << p.insn_count << " instructions, " << p.segments.size() << " memory segments, " << p.checks.size() << " check\n";
  return 0;
}

int disasm(const std::vector<std::string>& args) {
  Options opt(args);
  if (opt.positional().size() != 1) LOOM_THROW(Error, "usage: loom disasm FILE");
  Program p = Program::load(opt.positional()[0]);
  std::cout << disassemble(p.instructions());
  return 0;
}

int simulate(const std::vector<std::string>& args) {
  Options opt(args);
  if (opt.positional().size() != 1) LOOM_THROW(Error, "usage: loom sim FILE [--config cfg.json] ", kBackendUsage);
  Program p = Program::load(opt.positional()[0]);
  if (opt.has("config") && !(config_option(opt) == p.config))
    LOOM_THROW(ConfigError, "program was built for config '", p.config.name, "', which differs from ", opt.get("config"));
  std::string backend = opt.get("backend", "fsim");
  auto dev = open_accel_backend(opt, p.config);
  ProgramResult r = run_program(p, *dev);
  std::cout << "ran " << p.insn_count << " instructions on " << backend << " (config '" << p.config.name << "')\n";
  if (r.cycles) std::cout << "  cycles: " << r.cycles << "\n";
  for (auto& [k, v] : r.counters) std::cout << "  " << k << ": " << v << "\n";
  std::cout << r.report;
  return r.mismatched_checks ? 1 : 0;
}

}  // namespace

LOOM_REGISTER_COMMAND("accel-example", "write an example accelerator program (blocked int8 matmul)",
                      "loom accel-example --out FILE [--config cfg.json] [--m M] [--n N] [--k K] [--seed S]", example);
LOOM_REGISTER_COMMAND("disasm", "disassemble an accelerator program, one line per instruction", "loom disasm FILE", disasm);
LOOM_REGISTER_COMMAND("sim", "run an accelerator program on a backend and print its counters",
                      std::string("loom sim FILE [--config cfg.json] ") + kBackendUsage + "\n  exits 1 if the program's expected outputs do not match", simulate);

}  // namespace loom::tools

namespace loom::tools {

static int hw_params(const std::vector<std::string>& args) {
  Options opt(args);
  accel::AccelConfig cfg = opt.has("config") ? accel::AccelConfig::load(opt.get("config")) : accel::default_config();
  std::string text = accel::sv_package(cfg);
  if (!opt.has("out")) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(opt.get("out"));
  if (!out) LOOM_THROW(Error, "hw-params: cannot write '", opt.get("out"), "'");
  out << text;
  std::cout << "wrote " << opt.get("out") << " (SystemVerilog package loom_accel_pkg for config '" << cfg.name << "')\n";
  return 0;
}

LOOM_REGISTER_COMMAND("hw-params", "generate the RTL's SystemVerilog parameter package from an accelerator config",
                      "loom hw-params [--config cfg.json] [--out loom_accel_pkg.sv]", hw_params);

}  // namespace loom::tools
