// Internal to loom_sim: the `zynq` backends (Pynq-Z1/Z2-class boards without XRT). The layer under
// BoardDevice (zynq_layer.cc) places buffers in one physically contiguous DMA region and reaches
// the registers through a ZynqPlatform: on the board, Linux's UIO and u-dma-buf (zynq_linux.cc);
// here, a simulator standing in for the board whose CPU view of the region is a cache that only
// explicit syncs reconcile, and which refuses to run or to be read while they are missing
// (zynq_sim.cc).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "loom/runtime/board_device.h"

namespace loom::sim {

class ZynqPlatform {
 public:
  virtual ~ZynqPlatform() = default;
  virtual std::string name() const = 0;
  // The accelerator's control registers (its AXI4-Lite window).
  virtual void write_register(uint32_t offset, uint32_t value) = 0;
  virtual uint32_t read_register(uint32_t offset) = 0;
  // The DMA region: its physical address (what the accelerator's DMA uses) and size.
  virtual uint64_t dma_address() const = 0;
  virtual uint64_t dma_bytes() const = 0;
  // The CPU's view of the region, at offsets into it (cached: the accelerator sees a CPU write
  // after sync_for_device, the CPU sees the accelerator's writes after sync_for_cpu).
  virtual void cpu_write(uint64_t offset, const void* src, uint64_t bytes) = 0;
  virtual void cpu_read(uint64_t offset, void* dst, uint64_t bytes) = 0;
  virtual void sync_for_device(uint64_t offset, uint64_t bytes) = 0;
  virtual void sync_for_cpu(uint64_t offset, uint64_t bytes) = 0;
};

// The config's "zynq" object: {"uio": the accelerator's UIO device, by name in
// /sys/class/uio/*/name ("loom_accel") or as a path
// ("/dev/uio0"); "udmabuf": the u-dma-buf device of the DMA region ("udmabuf0"); "sysfs", "dev":
// where those live ("/sys", "/dev"; other roots for tests)}; for the simulated boards also
// "dma_bytes": the region's size (default 128 MiB). DeviceError for a field of the wrong type.
struct ZynqFields {
  std::string uio = "loom_accel", udmabuf = "udmabuf0", sysfs = "/sys", dev = "/dev";
  uint64_t dma_bytes = uint64_t(128) << 20;
};
ZynqFields read_zynq_fields(const std::string& config_json);
// The config without its "zynq" object: what the simulator behind a simulated board is opened with.
std::string without_zynq_fields(const std::string& config_json);

// DeviceError naming what is missing: no UIO device by that name (and which there are), no
// u-dma-buf region, a register window smaller than the control block.
std::unique_ptr<ZynqPlatform> make_linux_zynq_platform(const ZynqFields& fields);
// `inner`: "fsim" or "rtl".
std::unique_ptr<ZynqPlatform> make_sim_zynq_platform(const std::string& inner, const std::string& config_json);

// BoardDevice's layer over a platform: buffers placed first-fit in 4 KiB pages of the region;
// DeviceError when it has no room.
std::unique_ptr<BoardLayer> make_zynq_layer(std::unique_ptr<ZynqPlatform> platform);

}  // namespace loom::sim
