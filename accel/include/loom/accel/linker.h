// Links accelerator code at compile time into a relocatable runtime::AccelImage: the driver
// builds instruction streams and micro-op kernels into an image held in host memory (a
// LinkDevice), as if the device memory started at the link base; every DMA address of every
// sealed stream becomes a relocation, so the runtime can place the image anywhere.
//
//   ImageLinker link(config);
//   uint64_t w = link.reserve(weight_bytes, weights);   // parameters: initial contents
//   uint64_t x = link.reserve(input_bytes);             // activations: zeroed
//   ... emit with link.driver(), addressing link.address(x) ...
//   link.seal_stream("conv1");
//   runtime::AccelImage image = link.finish();
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "loom/accel/driver.h"
#include "loom/runtime/accel_image.h"

namespace loom::accel {

// Device memory in host memory with bump allocation from `base`, for linking: it can be written
// and read but not run (register access throws DeviceError). Freed memory is not reused, so
// every address handed out stays valid in the finished image.
class LinkDevice : public AccelDevice {
 public:
  explicit LinkDevice(uint64_t base) : base_(base), top_(base) {}
  std::string name() const override { return "link"; }
  uint64_t alloc(uint64_t bytes, uint64_t alignment = 64) override;
  void free(uint64_t) override {}
  void write(uint64_t addr, const void* src, uint64_t bytes) override;
  void read(uint64_t addr, void* dst, uint64_t bytes) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  uint32_t read_reg(uint32_t offset) override;
  std::string error_message() const override { return "the link device does not run programs"; }

  uint64_t base() const { return base_; }
  uint64_t size() const { return top_ - base_; }
  const std::vector<uint8_t>& written() const { return mem_; }  // [base, base + written().size())

 private:
  void check(uint64_t addr, uint64_t bytes, const char* what) const;
  uint64_t base_, top_;
  std::vector<uint8_t> mem_;
};

class ImageLinker {
 public:
  explicit ImageLinker(const AccelConfig& config);
  const AccelConfig& config() const { return driver_->config(); }
  Driver& driver() { return *driver_; }

  // Reserves `bytes` of device memory in the image (aligned for every scratchpad's DMA), zeroed or
  // initialized from `init`; returns its offset from the image start.
  uint64_t reserve(uint64_t bytes, const void* init = nullptr);
  uint64_t address(uint64_t offset) const { return device_.base() + offset; }

  // Ends the driver's current stream with FINISH, records it under `name` and relocates every DMA
  // address in it. Returns the stream's index in the image.
  size_t seal_stream(const std::string& name);
  // The linked image (the linker is spent afterwards).
  runtime::AccelImage finish();

  static constexpr uint64_t kLinkBase = 0x10000;  // nonzero, so a missing relocation shows at once

 private:
  LinkDevice device_;
  std::unique_ptr<Driver> driver_;
  runtime::AccelImage image_;
};

}  // namespace loom::accel
