// A self-contained accelerator program: config, device-memory image (in allocation order),
// instruction stream location, and optional expected memory contents after the run. Written by
// `loom accel-example`, read by `loom disasm` / `loom sim`.
//
// File format (little-endian binary):
//   "LOOMPRG1"                                  8-byte magic
//   u32 n, n bytes                              accelerator config as JSON
//   u32 segments; per segment: u64 addr, u64 bytes, u64 alignment, bytes of data
//   u64 insn_addr, u32 insn_count               the stream (inside one of the segments)
//   u32 checks;   per check:   u64 addr, u64 bytes, bytes of expected data
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/accel/isa.h"
#include "loom/runtime/accel_device.h"

namespace loom::accel {

struct Program {
  struct Segment {
    uint64_t addr = 0, alignment = 64;
    std::vector<uint8_t> data;
  };
  AccelConfig config;
  std::vector<Segment> segments;
  uint64_t insn_addr = 0;
  uint32_t insn_count = 0;
  std::vector<Segment> checks;  // expected contents after the run

  void save(const std::string& path) const;
  static Program load(const std::string& path);  // throws RuntimeError naming the path
  // The same from the bytes of a program file; `origin` names it in errors.
  static Program parse(const std::string& bytes, const std::string& origin);
  std::vector<Instruction> instructions() const;  // decoded (IsaError names the index)
  // Throws RuntimeError naming `origin` unless every segment is aligned, inside the address space
  // and apart from the others, and the stream and every check lie inside a segment (parse checks).
  void validate(const std::string& origin) const;
};

struct ProgramResult {
  std::map<std::string, uint64_t> counters;
  uint64_t cycles = 0;
  size_t mismatched_checks = 0;
  std::string report;  // one line per check
};

// Loads the program into a fresh device at the recorded addresses (alloc_at), runs it and
// compares the checks. `while_running`, when set, is called between the launch and the wait (a
// host that touches the control block while the accelerator runs).
ProgramResult run_program(const Program& p, AccelDevice& device, const std::function<void()>& while_running = {});

// A device decorator that records allocations so the memory image can be captured as a Program.
class RecordingDevice : public AccelDevice {
 public:
  explicit RecordingDevice(AccelDevice& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  uint64_t alloc(uint64_t bytes, uint64_t alignment = 64) override;
  void alloc_at(uint64_t addr, uint64_t bytes) override;
  void free(uint64_t addr) override;
  void write(uint64_t addr, const void* src, uint64_t bytes) override { inner_.write(addr, src, bytes); }
  void read(uint64_t addr, void* dst, uint64_t bytes) override { inner_.read(addr, dst, bytes); }
  void write_reg(uint32_t offset, uint32_t value) override { inner_.write_reg(offset, value); }
  uint32_t read_reg(uint32_t offset) override { return inner_.read_reg(offset); }
  std::string error_message() const override { return inner_.error_message(); }
  // Live allocations in allocation order, with their current contents.
  std::vector<Program::Segment> capture();

 private:
  struct Alloc {
    uint64_t addr, bytes, alignment;
  };
  AccelDevice& inner_;
  std::vector<Alloc> allocs_;
};

}  // namespace loom::accel
