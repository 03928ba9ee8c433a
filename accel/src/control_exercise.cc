// The host's side of the control block exercised around a run (control_exercise.h).
#include "loom/accel/control_exercise.h"

#include <array>
#include <random>

#include "loom/runtime/error.h"
#include "loom/runtime/hex.h"

namespace loom::accel {

ProgramResult run_with_control_exercise(const Program& p, AccelDevice& device, uint64_t seed, ControlTrace& trace) {
  std::mt19937_64 g(seed);
  auto read = [&](const char* name, uint32_t offset) {
    trace.push_back(std::string(name) + " reads " + hex(device.read_reg(offset)));
  };
  auto write_read = [&](const char* name, uint32_t offset, uint32_t value) {
    device.write_reg(offset, value);
    trace.push_back(std::string(name) + " <- " + hex(value) + " reads " + hex(device.read_reg(offset)));
  };
  read("CONTROL", reg::kControl);
  write_read("CONTROL", reg::kControl, uint32_t(g()) & ~reg::kStart);  // no START: nothing happens
  write_read("GIE", reg::kGie, uint32_t(g()));
  write_read("IER", reg::kIer, uint32_t(g()));
  write_read("ISR", reg::kIsr, uint32_t(g()) & 3);
  write_read("ISR", reg::kIsr, uint32_t(g()) & 3);
  write_read("ISR", reg::kIsr, device.read_reg(reg::kIsr));  // toggled back to zero: the run's end raises it
  // The arguments take drawn values before the launch writes the program's.
  write_read("INSN_ADDR_LO", reg::kInsnAddrLo, uint32_t(g()));
  write_read("INSN_ADDR_HI", reg::kInsnAddrHi, uint32_t(g()));
  write_read("INSN_COUNT", reg::kInsnCount, uint32_t(g()));
  static constexpr std::array<std::pair<const char*, uint32_t>, 4> read_only = {{{"STATUS", reg::kStatus},
                                                                                 {"CYCLES_LO", reg::kCyclesLo},
                                                                                 {"CYCLES_HI", reg::kCyclesHi},
                                                                                 {"ERROR_INDEX", reg::kErrorIndex}}};
  const auto& [name, offset] = read_only[g() % read_only.size()];
  const uint32_t value = uint32_t(g());
  bool refused = false;
  try {
    device.write_reg(offset, value);
  } catch (const DeviceError&) {
    refused = true;
  }
  trace.push_back(std::string(name) + " <- " + hex(value) + (refused ? " refused" : " accepted"));
  // A read past the last register, inside the control window (the RTL's own SLVERR answers it).
  const uint32_t unknown = kWaitRegsEnd + 4 * uint32_t(g() % ((kControlWindowBytes - kWaitRegsEnd) / 4));
  try {
    trace.push_back("read of " + hex(unknown) + " answered " + hex(device.read_reg(unknown)));
  } catch (const DeviceError&) {
    trace.push_back("read of " + hex(unknown) + " refused");
  }

  // ISR, not CONTROL, tells whether the run is over: reading CONTROL would clear DONE, which the
  // trace reads after the run.
  ProgramResult r = run_program(p, device, [&] {
    if (device.read_reg(reg::kIsr) & reg::kIrqDone) return;  // already over (or synchronous)
    try {
      device.write_reg(reg::kControl, reg::kStart);
    } catch (const DeviceError&) {
      return;  // refused, as it must be
    }
    LOOM_THROW(DeviceError, device.name(), ": START written while the run was in progress was accepted");
  });
  read("CONTROL", reg::kControl);
  read("CONTROL", reg::kControl);
  read("ISR", reg::kIsr);
  read("INSN_COUNT", reg::kInsnCount);
  return r;
}

std::optional<std::string> first_difference(const ControlTrace& want, const ControlTrace& got) {
  for (size_t k = 0; k < std::max(want.size(), got.size()); ++k) {
    const std::string w = k < want.size() ? want[k] : "nothing", h = k < got.size() ? got[k] : "nothing";
    if (w != h) return "access " + std::to_string(k + 1) + ": " + h + "; the reference: " + w;
  }
  return std::nullopt;
}

}  // namespace loom::accel
