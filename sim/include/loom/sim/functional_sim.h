// Bit-exact functional simulator of the accelerator, as an AccelDevice backend ("fsim").
// Runs an instruction stream the way the hardware's three modules would — load, compute and
// store each in program order, synchronized only by their dependency tokens — and reports
// illegal instructions, out-of-range DMA, scratchpad overflows and token deadlocks with the
// index of the instruction at fault instead of crashing or hanging.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/accel/isa.h"
#include "loom/runtime/accel_device.h"
#include "loom/sim/commit_log.h"

namespace loom::sim {

class FunctionalSim : public AccelDevice, public CommitLogSource {
 public:
  explicit FunctionalSim(accel::AccelConfig config, uint64_t dram_bytes = uint64_t{256} << 20);
  std::string name() const override { return "fsim"; }

  uint64_t alloc(uint64_t bytes, uint64_t alignment = 64) override;
  void alloc_at(uint64_t addr, uint64_t bytes) override { allocator_.alloc_at(addr, bytes, name()); }
  void free(uint64_t addr) override;
  void write(uint64_t addr, const void* src, uint64_t bytes) override;
  void read(uint64_t addr, void* dst, uint64_t bytes) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  uint32_t read_reg(uint32_t offset) override;
  std::string error_message() const override { return error_; }

  const accel::AccelConfig& config() const { return config_; }
  static constexpr uint64_t kDramBase = 0x10000000;

  // Which ready module runs next. Every order the dependency tokens allow is legal hardware
  // behaviour; tests run streams under several to check their tokens are sufficient.
  enum class Interleave { LoadFirst, StoreFirst, Random };
  void set_interleave(Interleave policy, uint64_t seed = 1) {
    interleave_ = policy;
    interleave_seed_ = seed;
  }
  // A run fails after this many micro-op executions (a GEMM or ALU micro-op over one block), so a
  // legal but enormous stream ends with a message instead of running for hours. The default is
  // about two minutes of simulation (~8 M steps/s); ResNet-18 takes 7.6 M.
  static constexpr uint64_t kDefaultStepLimit = 1'000'000'000;
  void set_step_limit(uint64_t steps) { step_limit_ = steps; }

  void record_commits(bool on) override { record_commits_ = on; }
  void label_next_run(const std::string& label) override { next_label_ = label; }
  std::vector<CommitRecord> take_commits() override;

 private:
  struct State;
  void run();
  uint8_t* dram_ptr(uint64_t addr, uint64_t bytes, const char* what);

  accel::AccelConfig config_;
  uint64_t dram_bytes_;
  std::unique_ptr<uint8_t[]> dram_;
  DeviceMemoryAllocator allocator_;
  std::vector<uint32_t> regs_;
  Interleave interleave_ = Interleave::LoadFirst;
  uint64_t interleave_seed_ = 1;
  uint64_t step_limit_ = kDefaultStepLimit;
  bool record_commits_ = false;
  uint32_t runs_ = 0;  // STARTs so far
  std::string next_label_, run_label_;
  std::vector<CommitRecord> commits_;
  std::string error_;
};

// Registers the "fsim" backend with make_accel_device. Linking the loom_sim target does it
// (register_backends, loom/sim/backends.h); a direct call is for programs that link it otherwise.
void register_functional_sim();

}  // namespace loom::sim
