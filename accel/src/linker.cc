#include "loom/accel/linker.h"

#include <cstring>

#include "loom/runtime/error.h"

namespace loom::accel {

uint64_t LinkDevice::alloc(uint64_t bytes, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)))
    LOOM_THROW(DeviceError, "link device: alignment ", alignment, " is not a power of two");
  uint64_t addr = (top_ + alignment - 1) / alignment * alignment;
  if (bytes > (uint64_t(1) << 40) || addr + bytes < addr)
    LOOM_THROW(DeviceError, "link device: an allocation of ", bytes, " bytes exceeds the 1 TiB an image may span");
  top_ = addr + std::max<uint64_t>(bytes, 1);
  return addr;
}

void LinkDevice::check(uint64_t addr, uint64_t bytes, const char* what) const {
  if (addr < base_ || addr > top_ || bytes > top_ - addr)
    LOOM_THROW(DeviceError, "link device: ", what, " of ", bytes, " bytes at 0x", std::hex, addr,
               " outside the allocated [0x", base_, ", 0x", top_, ")");
}

void LinkDevice::write(uint64_t addr, const void* src, uint64_t bytes) {
  check(addr, bytes, "write");
  uint64_t end = addr - base_ + bytes;
  if (mem_.size() < end) mem_.resize(end, 0);
  if (bytes) std::memcpy(mem_.data() + (addr - base_), src, bytes);
}

void LinkDevice::read(uint64_t addr, void* dst, uint64_t bytes) {
  check(addr, bytes, "read");
  auto* out = static_cast<uint8_t*>(dst);
  for (uint64_t i = 0; i < bytes; ++i) {
    uint64_t off = addr - base_ + i;
    out[i] = off < mem_.size() ? mem_[off] : 0;
  }
}

void LinkDevice::write_reg(uint32_t offset, uint32_t) {
  LOOM_THROW(DeviceError, "link device: register 0x", std::hex, offset, std::dec,
             " written; linked code runs on a real backend");
}
uint32_t LinkDevice::read_reg(uint32_t offset) {
  LOOM_THROW(DeviceError, "link device: register 0x", std::hex, offset, std::dec,
             " read; linked code runs on a real backend");
}

ImageLinker::ImageLinker(const AccelConfig& config) : device_(kLinkBase) {
  driver_ = std::make_unique<Driver>(device_, config);
  image_.config_json = config.to_json();
  image_.link_base = kLinkBase;
  // A base must keep every DMA address a whole number of entries: align to a power of two that
  // every entry size divides.
  uint64_t align = 4096;
  for (MemType m : {MemType::Uop, MemType::Wgt, MemType::Inp, MemType::Acc, MemType::Out}) {
    int e = entry_bytes(config, m);
    while (align % uint64_t(e)) {
      if (align > (uint64_t(1) << 32))
        LOOM_THROW(ConfigError, "config '", config.name, "': an entry of ", e,
                   " bytes has no power-of-two alignment; relocatable images need power-of-two entry sizes");
      align *= 2;
    }
  }
  if (kLinkBase % align)
    LOOM_THROW(ConfigError, "config '", config.name, "': entries of this size need an alignment (", align,
               ") above the link base");
  image_.alignment = align;
}

uint64_t ImageLinker::reserve(uint64_t bytes, const void* init) {
  DeviceBuffer b = driver_->alloc(bytes);
  if (init && bytes) driver_->copy_to_device(b, init, bytes);
  return b.addr - device_.base();
}

size_t ImageLinker::seal_stream(const std::string& name) {
  Driver::SealedStream s = driver_->seal_stream();
  IsaLayout layout(driver_->config());
  const AccelConfig& c = driver_->config();
  for (size_t k = 0; k < s.instructions.size(); ++k) {
    const Instruction& i = s.instructions[k];
    if (i.opcode != Opcode::Load && i.opcode != Opcode::Store) continue;
    if (i.y_size == 0 || i.x_size == 0) continue;  // a no-op that only carries tokens reads no memory
    for (const auto& f : layout.fields(i.opcode))
      if (f.name == "dram_base")
        image_.relocations.push_back(
            {s.addr - device_.base() + 16 * k, uint16_t(f.offset), uint16_t(f.width), uint32_t(entry_bytes(c, i.mem))});
  }
  image_.streams.push_back({name, s.addr - device_.base(), s.count});
  return image_.streams.size() - 1;
}

runtime::AccelImage ImageLinker::finish() {
  image_.size = (device_.size() + image_.alignment - 1) / image_.alignment * image_.alignment;
  image_.bytes = device_.written();
  image_.validate("linked accelerator image");
  return std::move(image_);
}

}  // namespace loom::accel
