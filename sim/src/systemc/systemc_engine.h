// The "systemc" backend's clock: the accelerator's RtlCore inside a SystemC TLM-2.0 virtual
// platform (platform.cc, built as C++17 because SystemC 2.3.4 is C++17-only). This header stays
// free of SystemC so that the C++20 side of loom_sim can include it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace loom::sim::rtl {
class RtlCore;
class CycleEngine;
}  // namespace loom::sim::rtl

namespace loom::sim::sc {

// The memory model behind the accelerator's AXI4 master port (a TLM-2.0 target).
struct MemoryOptions {
  std::string model = "fixed";  // "fixed": every burst `latency` cycles; "banked": a DRAM with open rows
  uint32_t latency = 32;        // fixed: cycles to the first read beat, or to the write response
  uint32_t banks = 8;           // banked: rows interleaved over banks
  uint32_t row_bytes = 2048;
  uint32_t row_hit_latency = 20;   // the burst's row is open in its bank
  uint32_t row_miss_latency = 44;  // precharge + activate first
};

// Attaches `core` to a free accelerator slot of the process's platform (elaborated on first use
// with kSlots slots: the SystemC kernel elaborates once per process). Throws DeviceError when
// every slot is taken. The engine frees its slot when destroyed. In a shared-library build the
// platform is the module libloom_systemc.so beside libloom_sim.so, loaded on the first call
// (systemc_sim.cc), so that only a process that opens a systemc device loads SystemC.
constexpr int kSlots = 4;
std::unique_ptr<rtl::CycleEngine> make_systemc_engine(rtl::RtlCore& core, const MemoryOptions& memory);

}  // namespace loom::sim::sc

// The platform's entry point (platform.cc), looked up by name in the module: a new engine the
// caller owns.
extern "C" loom::sim::rtl::CycleEngine* loom_systemc_make_engine(loom::sim::rtl::RtlCore* core,
                                                                 const loom::sim::sc::MemoryOptions* memory);
