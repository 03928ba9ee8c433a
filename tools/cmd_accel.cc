// Accelerator subcommands: build an example program, disassemble a program, run a program on an
// accelerator backend (the functional simulator by default) and print its counters.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "accel_backend.h"
#include "cli.h"
#include "command.h"
#include "data_dir.h"
#include "loom/accel/board_design.h"
#include "loom/accel/boards.h"
#include "loom/accel/examples.h"
#include "loom/accel/hw_params.h"
#include "loom/accel/isa_coverage.h"
#include "loom/accel/program.h"
#include "loom/accel/program_gen.h"
#include "loom/accel/vitis_kernel.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"

namespace loom::tools {

using namespace loom::accel;

namespace {

int example(const std::vector<std::string>& args) {
  CLI::App app{"Write an example accelerator program: a blocked int8 matmul C = A x W^T with its expected output",
               "loom accel-example"};
  std::string out, config;
  int M = 0, N = 0, K = 0;
  uint64_t seed = 1;
  app.add_option("--out", out, "program file to write")->required()->check(output_file());
  add_config_option(app, config);
  auto* m = number_option(app, "--m", M, "rows of A (a multiple of the config's batch; default 4 x batch)", 1, 16384);
  auto* n = number_option(app, "--n", N, "rows of W (a multiple of block_out; default 4 x block_out)", 1, 16384);
  auto* k = number_option(app, "--k", K, "the reduction (a multiple of block_in; default 8 x block_in)", 1, 16384);
  number_option(app, "--seed", seed, "seed of the random operands", 0, UINT64_MAX)->capture_default_str();
  if (int rc = parse(app, args); rc >= 0) return rc;
  AccelConfig cfg = load_config(config);
  if (!m->count()) M = 4 * cfg.batch;
  if (!n->count()) N = 4 * cfg.block_out;
  if (!k->count()) K = 8 * cfg.block_in;
  auto dev = make_accel_device("fsim", cfg.to_json());
  Program p = matmul_program(*dev, cfg, M, N, K, seed);
  p.save(out);
  std::cout << "wrote " << out << ": int8 matmul " << M << "x" << N << "x" << K << " on config '" << cfg.name << "', "
            << p.insn_count << " instructions, " << p.segments.size() << " memory segments, " << p.checks.size()
            << " check\n";
  return 0;
}

int gen_program(const std::vector<std::string>& args) {
  CLI::App app{
      "Write a constrained-random accelerator program: a legal, terminating stream of LOAD, GEMM, ALU and "
      "STORE instructions over random data, whose every instruction hands a token to the next (check it "
      "across backends with `loom sim PROGRAM --compare fsim,rtl`)",
      "loom gen-program"};
  std::string out, config, constraints_path;
  uint64_t seed = 1;
  int length = 0;
  app.add_option("--out", out, "program file to write")->required()->check(output_file());
  add_config_option(app, config);
  number_option(app, "--seed", seed, "seed of the program and its data", 0, UINT64_MAX)->capture_default_str();
  auto* o_length =
      number_option(app, "--length", length, "instructions drawn (default: the constraints' 64)", 1, 100000);
  app.add_option("--constraints", constraints_path,
                 "JSON: length, weights {load_inp, load_wgt, load_acc, gemm, alu, store, burst}, max_pad, max_rows, "
                 "max_cols, max_store_rows, gemm_reset, alu_immediate, wide_fields")
      ->check(CLI::ExistingFile);
  std::string toward;
  app.add_option("--toward", toward,
                 "coverage file (loom coverage --json, a regression's coverage.json): raise the weights of the "
                 "instruction kinds whose bins it has not hit")
      ->check(CLI::ExistingFile);
  if (int rc = parse(app, args); rc >= 0) return rc;
  AccelConfig cfg = load_config(config);
  ProgramConstraints c = constraints_path.empty() ? ProgramConstraints{} : ProgramConstraints::load(constraints_path);
  if (o_length->count()) c.length = length;
  if (!toward.empty()) c = toward_holes(c, IsaCoverage::load(toward));
  auto dev = make_accel_device("fsim", cfg.to_json());
  Program p = random_program(*dev, cfg, c, seed);
  p.save(out);
  std::cout << "wrote " << out << ": a random program of seed " << seed << " on config '" << cfg.name << "', "
            << p.insn_count << " instructions\n";
  return 0;
}

int coverage(const std::vector<std::string>& args) {
  CLI::App app{
      "The ISA's functional coverage of accelerator programs (accel/isa_coverage.h): how many of each "
      "program's instructions fall in each bin, merged with earlier coverage files; prints every group "
      "and every hole",
      "loom coverage"};
  std::vector<std::string> programs, merge;
  std::string json_out;
  app.add_option("programs", programs, "program files (from `loom gen-program`, `loom accel-example`, a recording)")
      ->check(CLI::ExistingFile);
  app.add_option("--merge", merge, "coverage files (--json of an earlier run) to add")->check(CLI::ExistingFile);
  app.add_option("--json", json_out, "write the merged coverage here")->check(output_file());
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (programs.empty() && merge.empty()) LOOM_THROW(Error, "give program files or --merge coverage files");
  IsaCoverage total;
  for (const std::string& f : merge) total.merge(IsaCoverage::load(f));
  for (const std::string& f : programs) total.sample(Program::load(f));
  if (!json_out.empty()) std::ofstream(json_out) << total.to_json() << "\n";
  std::cout << total.report();
  return 0;
}

int disasm(const std::vector<std::string>& args) {
  CLI::App app{"Disassemble an accelerator program, one line per instruction", "loom disasm"};
  std::string file;
  app.add_option("program", file, "program file (from `loom accel-example` or a recording)")
      ->required()
      ->check(CLI::ExistingFile);
  if (int rc = parse(app, args); rc >= 0) return rc;
  Program p = Program::load(file);
  std::cout << disassemble(p.instructions());
  return 0;
}

// Runs `p` on two backends with commit records on and reports the first instruction whose records
// differ (exit 1), or that all are equal (exit 0).
int compare_backends(const std::string& file, const Program& p, const std::vector<std::string>& backends) {
  std::vector<sim::CommitRecord> records[2];
  std::string errors[2];
  for (int s = 0; s < 2; ++s) {
    BackendOptions bo;
    bo.backend = backends[size_t(s)];
    auto dev = open_accel_backend(bo, p.config);
    records[s] = sim::run_recorded(
        dev.get(), bo.backend, [&] { run_program(p, *dev); }, errors[s], "--compare: ");
  }
  return report_divergence(file, backends, records, errors);
}

int simulate(const std::vector<std::string>& args) {
  CLI::App app{
      "Run an accelerator program on a backend and print its counters; exits 1 if its expected outputs do not match",
      "loom sim"};
  std::string file, config;
  BackendOptions bo;
  app.add_option("program", file, "program file (from `loom accel-example` or a recording)")
      ->required()
      ->check(CLI::ExistingFile);
  add_config_option(app, config)->description("check that the program was built for this accelerator config (JSON)");
  add_backend_options(app, bo);
  std::vector<std::string> compare;
  auto* o_compare = add_compare_option(app, compare,
                                       "run on two backends (e.g. fsim,rtl) and report the first instruction whose "
                                       "effect differs, from per-instruction commit records");
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (o_compare->count() && any_backend_option(bo))
    LOOM_THROW(ConfigError,
               "--compare runs each backend with its default options: leave out --backend and the simulator options");
  Program p = Program::load(file);
  if (!config.empty()) {
    AccelConfig given = load_config(config);
    if (!(given == p.config))
      LOOM_THROW(ConfigError, "program was built for config '", p.config.name, "', which differs from ", config);
    p.config.backend_sections = given.backend_sections;  // this machine's settings for the backends
  }
  if (o_compare->count()) return compare_backends(file, p, compare);
  auto dev = open_accel_backend(bo, p.config);
  ProgramResult r = run_program(p, *dev);
  // What ran, from the device's counters (the header's count includes FINISH and anything the
  // device did not reach).
  uint64_t executed = 0;
  for (AccelCounter c : {AccelCounter::LoadInsns, AccelCounter::UopLoadInsns, AccelCounter::AccLoadInsns,
                         AccelCounter::GemmInsns, AccelCounter::AluInsns, AccelCounter::StoreInsns})
    if (auto it = r.counters.find(to_string(c)); it != r.counters.end()) executed += it->second;
  std::cout << "ran " << file << " on " << bo.backend << " (config '" << p.config.name << "'): executed " << executed
            << " LOAD/GEMM/ALU/STORE instructions of the " << p.insn_count << "-instruction stream\n";
  if (r.cycles) std::cout << "  cycles: " << r.cycles << "\n";
  for (auto& [k, v] : r.counters) std::cout << "  " << k << ": " << v << "\n";
  std::cout << r.report;
  return r.mismatched_checks ? 1 : 0;
}

int hw_params(const std::vector<std::string>& args) {
  CLI::App app{"Generate the RTL's SystemVerilog parameter package (loom_accel_pkg) from an accelerator config",
               "loom hw-params"};
  std::string config, out;
  add_config_option(app, config);
  app.add_option("--out", out, "file to write (default: print the package)")->check(output_file());
  accel::RtlOptions rtl;
  add_gemm_multipliers_option(app, rtl);
  if (int rc = parse(app, args); rc >= 0) return rc;
  AccelConfig cfg = load_config(config);
  std::string text = sv_package(cfg, rtl);
  if (out.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream f(out);
  if (!f) LOOM_THROW(Error, "hw-params: cannot write '", out, "'");
  f << text;
  std::cout << "wrote " << out << " (SystemVerilog package loom_accel_pkg for config '" << cfg.name << "')\n";
  return 0;
}

// Writes `text` to `path`; an Error naming `who` and the path otherwise.
void write_file(const std::filesystem::path& path, const std::string& text, const char* who) {
  std::ofstream f(path);
  if (!f || !(f << text)) LOOM_THROW(Error, who, ": cannot write '", path.string(), "'");
}

// out/rtl: the config's parameter package and the RTL sources with the kernel top (from `hw`, a
// folder with rtl/ and kernel/); returns how many files it wrote.
int write_rtl_folder(const std::string& hw, const std::string& out, const AccelConfig& cfg, const char* who) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(out) / "rtl", ec);
  if (ec) LOOM_THROW(Error, who, ": cannot create '", out, "/rtl': ", ec.message());
  write_file(fs::path(out) / "rtl" / "loom_accel_pkg.sv", sv_package(cfg), who);
  int written = 1;
  for (const char* sub : {"rtl", "kernel"}) {
    fs::path dir = fs::path(hw) / sub;
    if (!fs::is_directory(dir)) LOOM_THROW(Error, who, ": no RTL at '", dir.string(), "' (give --hw)");
    for (auto& e : fs::directory_iterator(dir)) {
      std::string name = e.path().filename().string();
      if (e.path().extension() != ".sv" || name == "loom_accel_pkg_check.sv") continue;
      fs::copy_file(e.path(), fs::path(out) / "rtl" / name, fs::copy_options::overwrite_existing, ec);
      if (ec) LOOM_THROW(Error, who, ": cannot copy '", e.path().string(), "': ", ec.message());
      ++written;
    }
  }
  return written;
}

// The Vitis RTL kernel's files for a config: kernel.xml, the packaging script, the connectivity
// file, and rtl/ with the package and the RTL sources (docs/fpga.md).
int hw_kernel(const std::vector<std::string>& args) {
  CLI::App app{
      "Write what Vitis needs to package the accelerator RTL as an RTL kernel (kernel.xml, "
      "package_kernel.tcl, loom_accel.cfg, rtl/), for one accelerator config",
      "loom hw-kernel"};
  std::string config, out, memory = "DDR[0]", hw = hw_data_dir();
  add_config_option(app, config);
  app.add_option("--out", out, "folder to write (created)")->required();
  app.add_option("--memory", memory, "platform memory for the AXI master: DDR[0] (Alveo), HP0 (Zynq, Kria), ...")
      ->capture_default_str();
  app.add_option("--hw", hw, "the RTL to copy: a folder with rtl/ and kernel/ (Loom's hw/ or share/loom)")
      ->capture_default_str();
  if (int rc = parse(app, args); rc >= 0) return rc;
  AccelConfig cfg = load_config(config);
  accel::VitisKernelFiles files = accel::vitis_kernel_files(cfg, memory);
  const int copied = write_rtl_folder(hw, out, cfg, "hw-kernel");
  namespace fs = std::filesystem;
  write_file(fs::path(out) / "kernel.xml", files.kernel_xml, "hw-kernel");
  write_file(fs::path(out) / "package_kernel.tcl", files.package_tcl, "hw-kernel");
  write_file(fs::path(out) / "loom_accel.cfg", files.connectivity_cfg, "hw-kernel");
  std::cout << "wrote " << out << ": kernel.xml, package_kernel.tcl, loom_accel.cfg (memory " << memory << "), rtl/ ("
            << copied << " SystemVerilog files) for config '" << cfg.name << "'\n"
            << "next: cd " << out << " && vivado -mode batch -source package_kernel.tcl -tclargs rtl loom_accel.xo\n";
  return 0;
}

// A board's whole system for a config: the block design, the wrapper, the device-tree overlay,
// the config with its zynq section, and the RTL (docs/fpga.md).
int hw_board(const std::vector<std::string>& args) {
  std::string boards_list;
  for (const accel::Board& b : accel::boards()) boards_list += (boards_list.empty() ? "" : ", ") + b.name;
  CLI::App app{
      "Write a board's system around the accelerator: the Vivado block design (block_design.tcl), the Verilog "
      "wrapper and RTL (rtl/), the device-tree overlay (loom_accel.dtso) and the config file the zynq backend "
      "reads (board.json)",
      "loom hw-board"};
  std::string board_name, config, out, hw = hw_data_dir();
  accel::BoardDesignOptions o;
  app.add_option("--board", board_name, "the board: " + boards_list)->required();
  add_config_option(app, config);
  app.add_option("--out", out, "folder to write (created)")->required();
  app.add_option("--uio", o.uio, "the UIO device's name (the overlay's node)")->capture_default_str();
  app.add_option("--udmabuf", o.udmabuf, "the u-dma-buf device's name")->capture_default_str();
  app.add_option("--dma-bytes", o.dma_bytes, "the contiguous DMA region (default: the board's)");
  app.add_option("--clock-mhz", o.clock_mhz, "the fabric clock (default: the board's)");
  app.add_option("--hw", hw, "the RTL to copy: a folder with rtl/ and kernel/ (Loom's hw/ or share/loom)")
      ->capture_default_str();
  if (int rc = parse(app, args); rc >= 0) return rc;
  const accel::Board& board = accel::board(board_name);
  AccelConfig cfg = load_config(config);
  accel::BoardDesignFiles files = accel::board_design_files(cfg, board, o);
  const int copied = write_rtl_folder(hw, out, cfg, "hw-board");
  namespace fs = std::filesystem;
  const fs::path dir(out);
  write_file(dir / "rtl" / (std::string(accel::kBoardDesignTop) + ".v"), files.wrapper_v, "hw-board");
  write_file(dir / "block_design.tcl", files.block_design_tcl, "hw-board");
  write_file(dir / "loom_accel.dtso", files.overlay_dtso, "hw-board");
  write_file(dir / "loom_accel.bif", files.bootgen_bif, "hw-board");
  write_file(dir / "board.json", files.board_json, "hw-board");
  if (!files.shell_json.empty()) write_file(dir / "shell.json", files.shell_json, "hw-board");
  std::cout << "wrote " << out << " for the " << board.title << " (" << board.part << "), config '" << cfg.name
            << "': block_design.tcl (HP port " << files.hp_bits << " bits, " << files.clock_mhz
            << " MHz), loom_accel.dtso (UIO '" << o.uio << "', " << files.dma_bytes / (1 << 20) << " MiB u-dma-buf '"
            << o.udmabuf << "'), board.json, rtl/ (" << copied + 1 << " files)\n"
            << "next: cd " << out << " && vivado -mode batch -source block_design.tcl (docs/fpga.md)\n";
  return 0;
}

}  // namespace

LOOM_REGISTER_COMMAND(
    "hw-board", "write a board's system: Vivado block design, device-tree overlay, board.json (Pynq-Z1, ZCU104, KV260)",
    hw_board);
LOOM_REGISTER_COMMAND("hw-kernel", "write the Vitis RTL kernel's files (kernel.xml, packaging Tcl, connectivity)",
                      hw_kernel);
LOOM_REGISTER_COMMAND("accel-example", "write an example accelerator program (blocked int8 matmul)", example);
LOOM_REGISTER_COMMAND("gen-program", "write a constrained-random accelerator program (legal, terminating, with data)",
                      gen_program);
LOOM_REGISTER_COMMAND("coverage", "the ISA's functional coverage of accelerator programs, merged, with its holes",
                      coverage);
LOOM_REGISTER_COMMAND("disasm", "disassemble an accelerator program, one line per instruction", disasm);
LOOM_REGISTER_COMMAND("sim", "run an accelerator program on a backend and print its counters", simulate);
LOOM_REGISTER_COMMAND("hw-params", "generate the RTL's SystemVerilog parameter package from an accelerator config",
                      hw_params);

}  // namespace loom::tools
