#include "loom/runtime/board_device.h"

#include "loom/runtime/error.h"

namespace loom {

BoardDevice::BoardDevice(std::unique_ptr<BoardLayer> layer) : layer_(std::move(layer)) {}

uint64_t BoardDevice::alloc(uint64_t bytes, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)))
    LOOM_THROW(DeviceError, name(), ": alignment ", alignment, " is not a power of two");
  if (bytes == 0) bytes = 1;
  if (bytes > (uint64_t(1) << 40) || alignment > (uint64_t(1) << 30))
    LOOM_THROW(DeviceError, name(), ": cannot allocate ", bytes, " bytes aligned to ", alignment);
  std::unique_ptr<BoardBuffer> b = layer_->alloc(bytes);
  uint64_t addr = b->address();
  if (addr % alignment) {  // the runtime's own alignment is smaller: room to align inside
    b = layer_->alloc(bytes + alignment - 1);
    addr = (b->address() + alignment - 1) / alignment * alignment;
  }
  uint64_t offset = addr - b->address();
  placed_[addr] = Placed{std::move(b), offset, bytes};
  return addr;
}

void BoardDevice::alloc_at(uint64_t addr, uint64_t bytes) {
  LOOM_THROW(DeviceError, name(), ": cannot allocate [0x", std::hex, addr, ", 0x", addr + bytes, std::dec,
             ") at a fixed address: the board's runtime places buffers (replay a program with relocation instead)");
}

void BoardDevice::free(uint64_t addr) {
  if (!placed_.erase(addr))
    LOOM_THROW(DeviceError, name(), ": free of 0x", std::hex, addr, std::dec, ", not allocated");
}

BoardDevice::Placed& BoardDevice::holding(uint64_t addr, uint64_t bytes, const char* what) {
  auto it = placed_.upper_bound(addr);
  if (it != placed_.begin()) {
    --it;
    uint64_t start = it->first, size = it->second.bytes;
    if (addr >= start && bytes <= size && addr - start <= size - bytes) return it->second;
  }
  LOOM_THROW(DeviceError, name(), ": ", what, " of ", bytes, " bytes at 0x", std::hex, addr, std::dec,
             ": no one allocation holds the range");
}

void BoardDevice::write(uint64_t addr, const void* src, uint64_t bytes) {
  if (bytes == 0) return;
  Placed& p = holding(addr, bytes, "write");
  uint64_t at = addr - p.buffer->address();
  p.buffer->write(src, bytes, at);
  p.buffer->sync(SyncDirection::ToDevice, bytes, at);
}

void BoardDevice::read(uint64_t addr, void* dst, uint64_t bytes) {
  if (bytes == 0) return;
  Placed& p = holding(addr, bytes, "read");
  uint64_t at = addr - p.buffer->address();
  p.buffer->sync(SyncDirection::FromDevice, bytes, at);
  p.buffer->read(dst, bytes, at);
}

std::string BoardDevice::error_message() const {
  uint32_t status = layer_->read_register(reg::kStatus);
  if (!(status & reg::kError)) return "<no error>";
  auto fault = AccelFault((status >> reg::kFaultShift) & reg::kFaultMask);
  uint32_t index = layer_->read_register(reg::kErrorIndex);
  std::string m =
      "instruction " + std::to_string(index) + ": " +
      (fault < AccelFault::Count && fault != AccelFault::None ? to_string(fault) : "error (no cause reported)");
  if (fault == AccelFault::Deadlock) {  // the wait registers say who waits where
    static const char* modules[] = {"load", "compute", "store"};
    for (uint32_t k = 0; k < 3; ++k) {
      uint32_t w = layer_->read_register(kWaitRegBase + 4 * k);
      if (w >> 31)
        m += std::string("; ") + modules[k] + " module waits at instruction " + std::to_string(w & 0x7fffffffu);
    }
  }
  return m;
}

}  // namespace loom
