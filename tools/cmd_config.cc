// `loom config check FILE`: an accelerator config checked and explained: what it derives (entry
// sizes, buffer depths, index widths, micro-op and instruction fields) and where it can run.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "command.h"
#include "loom/accel/config.h"
#include "loom/accel/isa.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/sim/backends.h"

namespace loom::tools {

namespace {

struct Buffer {
  const char* name;
  accel::MemType mem;
  int64_t bytes, depth;
  int index_bits;
};

int check(const std::string& path, bool as_json) {
  accel::AccelConfig c = accel::AccelConfig::load(path);  // ConfigError naming the field, with advice
  accel::IsaLayout layout(c);
  sim::register_backends();
  const Buffer buffers[] = {{"inp", accel::MemType::Inp, c.inp_buffer_bytes, c.inp_depth(), c.inp_index_bits()},
                            {"wgt", accel::MemType::Wgt, c.wgt_buffer_bytes, c.wgt_depth(), c.wgt_index_bits()},
                            {"acc", accel::MemType::Acc, c.acc_buffer_bytes, c.acc_depth(), c.acc_index_bits()},
                            {"out", accel::MemType::Out, c.out_buffer_bytes, c.out_depth(), c.out_index_bits()},
                            {"uop", accel::MemType::Uop, c.uop_buffer_bytes, c.uop_depth(), c.uop_index_bits()}};
  // Where it runs: every registered backend asked without opening a device.
  nlohmann::json backends = nlohmann::json::object();
  for (const std::string& b : accel_backends()) {
    try {
      check_accel_backend(b, c.to_json());
      backends[b] = "ok";
    } catch (const Error& e) {
      backends[b] = e.what();
    }
  }
  nlohmann::json j = nlohmann::json::parse(c.to_json());
  j["derived"] = {{"gemm_macs_per_cycle", c.batch * c.block_in * c.block_out},
                  {"dram_bus_bytes", c.dram_bus_bytes()},
                  {"uop_bits",
                   {{"dst", c.uop_dst_bits()},
                    {"src", c.uop_src_bits()},
                    {"wgt", c.uop_wgt_bits()},
                    {"total", c.uop_bits()},
                    {"word", 8 * accel::AccelConfig::kUopBytes}}}};
  for (const Buffer& b : buffers)
    j["derived"]["buffers"][b.name] = {{"bytes", b.bytes},
                                       {"entry_bytes", accel::entry_bytes(c, b.mem)},
                                       {"depth", b.depth},
                                       {"index_bits", b.index_bits}};
  for (accel::Opcode op :
       {accel::Opcode::Load, accel::Opcode::Store, accel::Opcode::Gemm, accel::Opcode::Alu, accel::Opcode::Finish}) {
    nlohmann::json fields = nlohmann::json::array();
    for (const auto& f : layout.fields(op))
      fields.push_back({{"name", f.name}, {"offset", f.offset}, {"width", f.width}});
    j["derived"]["instructions"][accel::to_string(op)] = {
        {"bits", layout.insn_bits(op)}, {"of", accel::IsaLayout::kInsnBits}, {"fields", fields}};
  }
  j["backends"] = backends;
  if (as_json) {
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  std::cout << "config '" << c.name << "' (" << path << "): valid\n"
            << "  GEMM core: " << c.batch << "x" << c.block_in << "x" << c.block_out << " ("
            << c.batch * c.block_in * c.block_out << " multiply-adds per cycle); inp/wgt/acc/out " << c.inp_bits << "/"
            << c.wgt_bits << "/" << c.acc_bits << "/" << c.out_bits << " bits; DRAM bus " << c.dram_bus_bytes()
            << " bytes\n"
            << "  buffer       bytes  entry bytes    depth  index bits\n";
  for (const Buffer& b : buffers)
    std::cout << "  " << std::left << std::setw(5) << b.name << std::right << std::setw(12) << b.bytes << std::setw(13)
              << accel::entry_bytes(c, b.mem) << std::setw(9) << b.depth << std::setw(12) << b.index_bits << "\n";
  std::cout << "  micro-op: dst " << c.uop_dst_bits() << " + src " << c.uop_src_bits() << " + wgt " << c.uop_wgt_bits()
            << " = " << c.uop_bits() << " of " << 8 * accel::AccelConfig::kUopBytes << " bits\n"
            << "  instructions (bits used of " << accel::IsaLayout::kInsnBits << "):";
  for (accel::Opcode op : {accel::Opcode::Load, accel::Opcode::Store, accel::Opcode::Gemm, accel::Opcode::Alu})
    std::cout << " " << accel::to_string(op) << " " << layout.insn_bits(op);
  std::cout << "\n    config-sized fields: sram_base " << layout.sram_bits << ", uop_begin " << layout.uop_begin_bits
            << ", uop_end " << layout.uop_end_bits << ", dst/src/wgt factors " << layout.dst_factor_bits << "/"
            << layout.src_factor_bits << "/" << layout.wgt_factor_bits << "\n  backends:\n";
  for (auto& [b, v] : backends.items())
    std::cout << "    " << std::left << std::setw(10) << b << std::right << " " << v.get<std::string>() << "\n";
  return 0;
}

int config_cmd(const std::vector<std::string>& args) {
  CLI::App app{"Accelerator configs: `loom config check FILE` validates one and prints what it derives", "loom config"};
  app.require_subcommand(1);
  auto* chk = app.add_subcommand("check",
                                 "validate a config file and print its entry sizes, buffer depths, index widths, "
                                 "micro-op and instruction fields, and which backends can run it");
  std::string path;
  bool as_json = false;
  chk->add_option("file", path, "the config (JSON)")->required()->check(CLI::ExistingFile);
  chk->add_flag("--json", as_json, "print it as JSON");
  if (int rc = parse(app, args); rc >= 0) return rc;
  return check(path, as_json);
}

}  // namespace

LOOM_REGISTER_COMMAND("config", "check an accelerator config and print what it derives (`loom config check FILE`)",
                      config_cmd);

}  // namespace loom::tools
