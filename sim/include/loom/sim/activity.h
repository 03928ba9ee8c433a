// Switching activity of an RTL simulation, for checking the energy model (accel/energy_model.h)
// against something that is not it: each signal's bit toggles, read from an FST waveform of a run
// (the rtl backend's "fst" option), weighted by the load its bits drive in a yosys netlist of the
// same RTL (the cells each bit feeds: a multiplier input as many loads as the other operand has
// bits, since it switches a row of partial products; any other cell input, one).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom::sim {

struct SignalActivity {
  std::string name;  // hierarchical below the top module, dot-separated ("compute.core.acc_q")
  int width = 0;
  uint64_t toggles = 0;  // bit changes over the waveform (to or from X/Z not counted)
};

// Every signal of the waveform once (aliases of one net count once). Needs the rtl backend built
// (Verilator's FST reader); DeviceError naming the file when it cannot be read.
std::vector<SignalActivity> fst_toggles(const std::string& fst_path);

// The mean load of each named net's bits in a yosys JSON netlist (write_json of the flattened,
// un-mapped design: `proc; flatten`) of module `top`; Error naming the file when it has no such
// module.
std::map<std::string, double> netlist_loads(const std::string& json_path, const std::string& top);

// Σ toggles × load: a signal the netlist does not name (renamed by Verilator, or not driving a
// cell) counts one load per bit. `matched`, if given, receives the share of toggles with a load.
double weighted_activity(const std::vector<SignalActivity>& toggles, const std::map<std::string, double>& loads,
                         double* matched = nullptr);

}  // namespace loom::sim
