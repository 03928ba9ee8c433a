// What Vitis needs to package hw/rtl as an RTL kernel, generated from an accelerator config and
// the register map (runtime/accel_device.h), so no offset is written twice: the kernel
// description (kernel.xml: ports, the argument registers), the Vivado packaging script and a
// linker connectivity file. docs/fpga.md walks from these to an .xclbin on a board.
#pragma once
#include <string>

#include "loom/accel/config.h"

namespace loom::accel {

struct VitisKernelFiles {
  std::string kernel_xml;        // kernel.xml
  std::string package_tcl;       // package_kernel.tcl: vivado -mode batch -source ... -tclargs RTL_DIR OUT.xo
  std::string connectivity_cfg;  // loom_accel.cfg: v++ --link --config
};

// `memory`: the platform's memory the AXI master is linked to ("DDR[0]" on Alveo, "HP0" on Zynq
// and Kria boards).
VitisKernelFiles vitis_kernel_files(const AccelConfig& config, const std::string& memory = "DDR[0]");

inline constexpr const char* kVitisKernelName = "loom_accel";
inline constexpr const char* kVitisKernelTop = "loom_accel_kernel";  // hw/kernel/loom_accel_kernel.sv

}  // namespace loom::accel
