// Per-instruction commit records: what each LOAD, GEMM, ALU and STORE left behind, as a digest of
// the state it writes (a LOAD: its scratchpad; GEMM and ALU: the accumulator and output
// scratchpads; a STORE: the DRAM rows it wrote), taken when the instruction completes. Each
// scratchpad has one writer module and each module runs its instructions in order, so the records
// of two correct backends are equal instruction by instruction even though the RTL's modules run
// concurrently; the first instruction whose records differ is where two backends part
// (`loom sim --compare fsim,rtl`).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/accel/isa.h"
#include "loom/runtime/accel_device.h"

namespace loom::sim {

struct CommitRecord {
  uint32_t run = 0;    // the device's run (START) it belongs to, from 1
  std::string label;   // that run's name (a model's kernel), if the host gave one
  uint32_t index = 0;  // in the instruction stream
  accel::Module module = accel::Module::Load;
  accel::Opcode opcode = accel::Opcode::Finish;
  std::string target;  // what was digested: "inp scratchpad", "acc and out scratchpads", "DRAM rows ..."
  uint64_t digest = 0;
  // The dependency-token counters when it finished (load->compute, compute->load, compute->store,
  // store->compute). Shown, not compared: on the RTL they depend on how the modules overlap.
  std::array<uint32_t, 4> tokens{};
  std::string describe() const;  // "instruction 12 (GEMM): acc and out scratchpads, digest 0x..."
};

// Backends that record commits (fsim, rtl, systemc): on from the next run, records taken per run.
class CommitLogSource {
 public:
  virtual ~CommitLogSource() = default;
  virtual void record_commits(bool on) = 0;
  virtual std::vector<CommitRecord> take_commits() = 0;  // since the last take, in index order
};

// The commit log of `device`; ConfigError "<what>backend '<backend>' does not record per-instruction
// commits (fsim, rtl and systemc do)" for a device that keeps none.
CommitLogSource& commit_log_of(AccelDevice* device, const std::string& backend, const std::string& what = "");
// Runs `run` on `device` with commit records on and returns them; `error` receives the text of the
// DeviceError it stopped with, if any (commit_log_of's ConfigError for a device without a log).
std::vector<CommitRecord> run_recorded(AccelDevice* device, const std::string& backend,
                                       const std::function<void()>& run, std::string& error,
                                       const std::string& what = "");

uint64_t digest_bytes(const void* data, size_t bytes, uint64_t h = 0xcbf29ce484222325ull);  // FNV-1a 64

struct Divergence {
  uint32_t run = 0, index = 0;
  std::optional<CommitRecord> a, b;  // a side without a record did not commit that instruction
};
// The first (run, instruction index) whose records differ (or exist on one side only); none if
// equal.
std::optional<Divergence> first_divergence(const std::vector<CommitRecord>& a, const std::vector<CommitRecord>& b);

}  // namespace loom::sim
