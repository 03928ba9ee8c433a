// Constrained-random accelerator programs: legal, terminating instruction streams with random
// data, for regressions that cross-check backends (`loom gen-program`, `loom sim --compare`).
//
// Each drawn instruction (a 2-D LOAD of inputs, weights or accumulators with padding and strides,
// a GEMM micro-op kernel that resets or accumulates, an ALU operation with an immediate or a
// vector operand, a STORE) stays inside the scratchpads and the program's DRAM image, and hands a
// dependency token to the module of the next one, so program order is the only order the modules
// can run in: every correct backend (fsim, the RTL, the SystemC platform) leaves the same memory.
// The stream ends with a STORE of the first output entries and FINISH.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/accel/driver.h"
#include "loom/accel/program.h"
#include "loom/runtime/accel_device.h"

namespace loom::accel {

struct ProgramConstraints {
  int length = 64;  // instructions drawn, in [1, 100000] (token hand-offs and the closing STORE added)
  // Relative weights of each kind of instruction (>= 0, not all 0).
  double load_inp = 1, load_wgt = 1, load_acc = 1, gemm = 1, alu = 1, store = 1;
  // A burst (weight 0 by default): a run of 2..40 LOADs of inputs or weights, each handing the
  // compute module a token that it takes later, one per ALU operation; the same with compute's
  // ALU operations running ahead, each freeing a later LOAD; the same between compute and STOREs
  // of the output buffer's upper half, either way round (tokens pile up, the queues fill, the
  // modules overlap; ALU operations touch no input or weight and no random program writes the
  // upper half of the output buffer, so the overlap is race-free); or a run of 2..40 STOREs (the
  // store queue fills).
  double burst = 0;
  int max_pad = 1;             // each side of a LOAD's padding, in [0, 15]
  int max_rows = 3;            // a LOAD's y size, in [1, 16]
  int max_cols = 4;            // a LOAD's x size, in [1, 16]
  int max_store_rows = 2;      // a STORE's y size, in [1, 16] (fewer where its rows would leave the image)
  double gemm_reset = 0.25;    // the share of GEMMs that reset the accumulators, in [0, 1]
  double alu_immediate = 0.5;  // the share of ALU operations with an immediate operand, in [0, 1]
  // The share of draws, in [0, 1], where a field that the instruction leaves free takes a value
  // from its whole range: a one-row transfer's stride, a one-iteration loop's factors, a
  // scratchpad base anywhere the transfer fits, micro-op indices across their buffers (the
  // accumulators' lower half), every field of an empty transfer (a quarter of
  // the wide draws of a LOAD or STORE make it empty) (what a coverage regression wants of every bit of
  // the instruction word; 0 draws nothing, so programs stay as they were).
  double wide_fields = 0;

  // From a JSON object of the fields above ({"length": 200, "weights": {"gemm": 3, "store": 0.5},
  // "max_pad": 2, ...}); ConfigError naming `origin` and the field for an unknown field or a value
  // out of range.
  static ProgramConstraints parse(const std::string& json_text, const std::string& origin);
  static ProgramConstraints load(const std::string& path);
  void validate(const std::string& origin) const;
};

// Draws a random stream through `drv` (the building block of random_program; tests drive a
// harness's device with it): the constructor places the DRAM image and its random contents on
// the driver's device, build() emits the instructions.
class RandomStream {
 public:
  RandomStream(Driver& drv, const AccelConfig& config, const ProgramConstraints& constraints, uint64_t seed);
  void build();
  const std::vector<int8_t>& initial() const { return initial_; }  // the image's contents before the run
  const DeviceBuffer& image() const { return image_; }

 private:
  static constexpr int kEntries = 64;      // entries of each kind in the DRAM image
  static constexpr uint64_t kPage = 4096;  // the AXI page DMA bursts may not cross
  uint32_t r(uint32_t n);
  bool chance(double p);
  bool wide();           // chance(wide_fields), without a draw when it is 0
  void go(Module next);  // hands a token from the last instruction's module to `next`'s
  void load(MemType m, int region, int entry_bytes, int64_t depth);
  void gemm();
  void alu();
  void burst();
  // `n` instructions of `producer`, each handing `consumer` a token that one of its `n`
  // instructions takes later: the two modules overlap (the caller keeps them from sharing data).
  void overlap(Module producer, Module consumer, uint32_t n, const std::function<void()>& produce,
               const std::function<void()>& consume);
  void drawn_store(uint32_t base);  // a STORE of random shape from scratchpad entry base + [0, 16)
  // The instructions themselves, in the module the caller handed the token to.
  void load_body(MemType m, int region, int entry_bytes, int64_t depth);
  // wide_fields: a one-iteration loop's factors and the micro-op indices from their whole ranges;
  // a one-row transfer's stride from its field's.
  void widen_factors(UopKernel& k);
  void widen_uops(UopKernel& k, bool gemm);
  void widen_stride(uint32_t y, uint32_t x, uint32_t& stride);
  void empty_transfer(MemType m);  // no rows or no columns, every other field drawn from its whole range
  void alu_body();
  void store_body(uint32_t sram, uint32_t y, uint32_t x);  // y rows of x out entries, from scratchpad entry `sram`

  Driver& drv_;
  AccelConfig cfg_;
  IsaLayout layout_;  // of cfg_: the fields' widths
  ProgramConstraints c_;
  std::mt19937_64 g_;
  uint64_t region_[4] = {};
  std::vector<int8_t> initial_;
  DeviceBuffer image_;
  std::optional<Module> last_;
  bool emitted_compute_ = false;
};

// A random program for `config` from `seed` (the same seed and constraints, the same program),
// built through a Driver on `device` (its memory holds the image while building; a program
// captures it). The program has no checks: a backend's memory after the run is compared with
// another backend's (`loom sim --compare fsim,rtl`).
Program random_program(AccelDevice& device, const AccelConfig& config, const ProgramConstraints& constraints,
                       uint64_t seed);

}  // namespace loom::accel
