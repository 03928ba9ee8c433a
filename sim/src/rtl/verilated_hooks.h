// Hooks into the Verilator runtime (force-included into loom_verilated's sources, see
// sim/CMakeLists.txt): a failed SystemVerilog assertion ($error, or $stop) is recorded for the
// simulator to report as a DeviceError instead of stopping the process, and the runtime's output
// goes through loom_vl_printf, which keeps the last line it printed (the assertion's message).
#pragma once
#include <string>

// Only where this header comes first (the force-include); users that include it after
// verilated.h just need the functions below.
#ifndef VL_PRINTF
#define VL_PRINTF loom_vl_printf
#endif
int loom_vl_printf(const char* format, ...);
// Replaces the runtime's (VL_USER_STOP_MAYBE): $stop and failed assertions' $error end up here.
void vl_stop_maybe(const char* filename, int linenum, const char* hier, bool maybe);

namespace loom::sim::rtl {
// True once an assertion failed (cheap: checked every simulated cycle).
bool rtl_stop_pending();
// The assertion failure recorded since the last call ("" if none), cleared by the call:
// "hw/rtl/loom_fifo.sv:40: <the message the RTL printed>".
std::string take_rtl_stop();
}  // namespace loom::sim::rtl
