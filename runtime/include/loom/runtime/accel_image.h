// A linked accelerator image: the device memory that compiled accelerator code needs (instruction
// streams, micro-op kernels, parameters, room for activations), linked at one base address, with
// relocations that move it anywhere else. It is what the accelerator code generator produces at
// compile time and what a compiled model carries; running it needs only the runtime and a device
// backend (no compiler, no ISA knowledge: a relocation names the bits it patches).
//
//   AccelImage img = AccelImage::parse(bytes, "model.loom");
//   LoadedAccelImage loaded(device, img);                 // allocate, relocate, upload
//   device.write(loaded.address(input_offset), x, n);
//   loaded.run(0);                                        // launch stream 0 and wait
//
// Serialized layout (little-endian): "LOOMACCL", u32 version, u32 n + config JSON, u64 link_base,
// u64 size, u64 alignment, u64 n + initial bytes, u32 n + relocations (u64 offset, u16 bit,
// u16 width, u32 scale), u32 n + streams (u32 n + name, u64 insn_offset, u32 count).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/runtime/accel_device.h"

namespace loom::runtime {

inline constexpr uint32_t kAccelImageVersion = 1;

// An address field inside the image: bits [bit, bit + width) of the little-endian bytes starting at
// `offset` hold a device address in units of `scale` bytes (a DMA address counts scratchpad entries).
struct AccelRelocation {
  uint64_t offset = 0;
  uint16_t bit = 0, width = 0;
  uint32_t scale = 1;
};

// One instruction stream inside the image: `count` 16-byte instructions at `insn_offset`.
struct AccelStream {
  std::string name;
  uint64_t insn_offset = 0;
  uint32_t count = 0;
};

struct AccelImage {
  std::string config_json;     // the accelerator config the code was compiled for
  uint64_t link_base = 0;      // device address the image was linked at
  uint64_t size = 0;           // device bytes it occupies (bytes beyond `bytes` start zeroed)
  uint64_t alignment = 4096;   // a base address must be a multiple of it (keeps every scale exact)
  std::vector<uint8_t> bytes;  // initial contents of [0, bytes.size())
  std::vector<AccelRelocation> relocations;
  std::vector<AccelStream> streams;

  std::string serialize() const;
  // Throws ModelError naming `origin` for truncated, inconsistent or other-version bytes.
  static AccelImage parse(const std::string& bytes, const std::string& origin);
  // Checks offsets, sizes and relocations against the image; throws ModelError naming `origin`.
  void validate(const std::string& origin) const;
};

// Applies the relocations for a move from link_base to `base` to a copy of the initial bytes.
// Throws ModelError when a patched field overflows its width or `base` breaks the alignment.
std::vector<uint8_t> relocate(const AccelImage& image, uint64_t base);

// The image placed in one device's memory, for as long as it lives.
class LoadedAccelImage {
 public:
  LoadedAccelImage(AccelDevice& device, const AccelImage& image);
  ~LoadedAccelImage();
  LoadedAccelImage(const LoadedAccelImage&) = delete;
  LoadedAccelImage& operator=(const LoadedAccelImage&) = delete;

  uint64_t base() const { return base_; }
  // The device address of an image offset (bounds-checked against the image size).
  uint64_t address(uint64_t offset, uint64_t bytes = 0) const;
  // Launches stream i and waits for it; DeviceError from the backend names the stream.
  void run(size_t stream, std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));
  AccelDevice& device() { return device_; }
  const std::vector<AccelStream>& streams() const { return streams_; }

 private:
  AccelDevice& device_;
  std::vector<AccelStream> streams_;
  uint64_t size_ = 0, base_ = 0;
};

}  // namespace loom::runtime
