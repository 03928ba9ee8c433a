// The "systemc" backend: the Verilated accelerator as one component of a SystemC TLM-2.0 virtual
// platform (a host initiator on its AXI4-Lite port, a choice of memory models behind its AXI4
// master port). Built when SystemC (libsystemc-dev) and the RTL models are found at configure
// time; otherwise opening it is a DeviceError that says so. docs/systemc.md.
#pragma once

namespace loom::sim {

bool systemc_available();
void register_systemc_sim();

}  // namespace loom::sim
