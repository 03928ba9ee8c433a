// An accelerator on an FPGA board behind a vendor runtime (XRT): device memory is buffers the
// runtime allocates, each with the physical address the accelerator's DMA uses and a host copy
// that explicit syncs move to and from the device; the control registers are reached through the
// runtime. BoardDevice implements the device interface on a small layer of those operations, so
// buffer placement, sync directions, the register sequence and error decoding are one code path
// whether the layer is XRT on a board (backend "xrt") or a simulator standing in for the board
// (backends "board-fsim", "board-rtl"), which the tests run.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "loom/runtime/accel_device.h"

namespace loom {

enum class SyncDirection { ToDevice, FromDevice };

class BoardBuffer {
 public:
  virtual ~BoardBuffer() = default;
  virtual uint64_t address() const = 0;  // physical, as the accelerator's DMA sees it
  virtual uint64_t size() const = 0;
  // The host copy.
  virtual void write(const void* src, uint64_t bytes, uint64_t offset) = 0;
  virtual void read(void* dst, uint64_t bytes, uint64_t offset) = 0;
  // Moves [offset, offset + bytes) between the host copy and the device.
  virtual void sync(SyncDirection direction, uint64_t bytes, uint64_t offset) = 0;
};

class BoardLayer {
 public:
  virtual ~BoardLayer() = default;
  virtual std::string name() const = 0;
  virtual std::unique_ptr<BoardBuffer> alloc(uint64_t bytes) = 0;  // DeviceError when full
  virtual void write_register(uint32_t offset, uint32_t value) = 0;
  virtual uint32_t read_register(uint32_t offset) = 0;
};

class BoardDevice : public AccelDevice {
 public:
  explicit BoardDevice(std::unique_ptr<BoardLayer> layer);
  std::string name() const override { return layer_->name(); }
  // One buffer per allocation (with room to align inside it when the runtime's address is not).
  uint64_t alloc(uint64_t bytes, uint64_t alignment = 64) override;
  void alloc_at(uint64_t addr, uint64_t bytes) override;  // DeviceError: the board's runtime places buffers
  void free(uint64_t addr) override;
  // Host copy, then sync to the device / sync from the device, then host copy; DeviceError when
  // no one buffer holds the range.
  void write(uint64_t addr, const void* src, uint64_t bytes) override;
  void read(uint64_t addr, void* dst, uint64_t bytes) override;
  void write_reg(uint32_t offset, uint32_t value) override { layer_->write_register(offset, value); }
  uint32_t read_reg(uint32_t offset) override { return layer_->read_register(offset); }
  // From STATUS and ERROR_INDEX: "instruction N: <fault>".
  std::string error_message() const override;

 private:
  struct Placed {
    std::unique_ptr<BoardBuffer> buffer;
    uint64_t offset = 0, bytes = 0;  // where the allocation starts inside the buffer, its size
  };
  Placed& holding(uint64_t addr, uint64_t bytes, const char* what);
  std::unique_ptr<BoardLayer> layer_;
  std::map<uint64_t, Placed> placed_;  // by the allocation's device address
};

}  // namespace loom
