// The zynq platform on a board's Linux: the accelerator's registers through its UIO device (the
// device-tree overlay's generic-uio node, mapped with mmap), the DMA region from u-dma-buf (a
// physically contiguous, cached buffer; its sysfs attributes give the physical address and do the
// cache maintenance of sync_for_device / sync_for_cpu).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "zynq_platform.h"

namespace loom::sim {

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

// A sysfs number ("0x10000", "16777216"); DeviceError naming the file when it is not one.
uint64_t read_number(const fs::path& p) {
  const std::string t = read_text(p);
  try {
    size_t used = 0;
    const uint64_t v = std::stoull(t, &used, 0);
    if (used == t.size()) return v;
  } catch (const std::exception&) {
  }
  LOOM_THROW(DeviceError, "zynq: ", p.string(), " should hold a number, has '", t, "'");
}

void write_text(const fs::path& p, const std::string& value) {
  std::ofstream out(p);
  if (!(out << value) || !out.flush())
    LOOM_THROW(DeviceError, "zynq: cannot write '", value, "' to ", p.string(), ": ", std::strerror(errno));
}

// An open, mapped device file, unmapped and closed with it.
struct Mapping {
  int fd = -1;
  void* base = MAP_FAILED;
  uint64_t bytes = 0;
  Mapping(const fs::path& file, uint64_t size, bool uncached, const char* what) : bytes(size) {
    fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC | (uncached ? O_SYNC : 0));
    if (fd < 0) LOOM_THROW(DeviceError, "zynq: cannot open ", what, " ", file.string(), ": ", std::strerror(errno));
    base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      LOOM_THROW(DeviceError, "zynq: cannot map ", size, " bytes of ", what, " ", file.string(), ": ",
                 std::strerror(err));
    }
  }
  ~Mapping() {
    ::munmap(base, bytes);
    ::close(fd);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
};

// Whether zynq.uio is a device path ("/dev/uio0") rather than a UIO name.
bool uio_is_path(const ZynqFields& f) { return !f.uio.empty() && f.uio.front() == '/'; }

// The UIO device ("uioN"): the path's file name, or the device whose sysfs name is zynq.uio.
std::string find_uio(const ZynqFields& f) {
  const fs::path classes = fs::path(f.sysfs) / "class/uio";
  if (uio_is_path(f)) return fs::path(f.uio).filename().string();
  std::string seen;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(classes, ec)) {
    const std::string name = read_text(entry.path() / "name");
    if (name == f.uio) return entry.path().filename().string();
    seen += (seen.empty() ? "" : ", ") + entry.path().filename().string() + " '" + name + "'";
  }
  LOOM_THROW(DeviceError, "zynq: no UIO device named '", f.uio, "' (", classes.string(), ": ",
             seen.empty() ? "no UIO devices" : seen,
             "): load the accelerator's device-tree overlay (docs/fpga.md), or give zynq.uio");
}

class LinuxZynqPlatform : public ZynqPlatform {
 public:
  explicit LinuxZynqPlatform(const ZynqFields& f)
      : uio_(find_uio(f)),
        dma_sysfs_(fs::path(f.sysfs) / "class/u-dma-buf" / f.udmabuf),
        regs_(uio_is_path(f) ? fs::path(f.uio) : fs::path(f.dev) / uio_, window(f.sysfs, uio_),
              /*uncached=*/true, "the accelerator's registers"),
        dma_(open_region(f)) {
    name_ = "zynq:" + uio_ + ":" + f.udmabuf;
  }
  std::string name() const override { return name_; }
  void write_register(uint32_t offset, uint32_t value) override { *reg(offset) = value; }
  uint32_t read_register(uint32_t offset) override { return *reg(offset); }
  uint64_t dma_address() const override { return phys_; }
  uint64_t dma_bytes() const override { return dma_->bytes; }
  void cpu_write(uint64_t offset, const void* src, uint64_t bytes) override {
    std::memcpy(static_cast<uint8_t*>(dma_->base) + offset, src, bytes);
  }
  void cpu_read(uint64_t offset, void* dst, uint64_t bytes) override {
    std::memcpy(dst, static_cast<const uint8_t*>(dma_->base) + offset, bytes);
  }
  // u-dma-buf's manual cache maintenance: the range and direction, then the trigger.
  void sync_for_device(uint64_t offset, uint64_t bytes) override { sync(offset, bytes, 1, "sync_for_device"); }
  void sync_for_cpu(uint64_t offset, uint64_t bytes) override { sync(offset, bytes, 2, "sync_for_cpu"); }

 private:
  static uint64_t window(const std::string& sysfs, const std::string& uio) {
    const fs::path map0 = fs::path(sysfs) / "class/uio" / uio / "maps/map0/size";
    if (!fs::exists(map0)) LOOM_THROW(DeviceError, "zynq: the UIO device has no register map (", map0.string(), ")");
    const uint64_t size = read_number(map0);
    if (size < kAccelRegsEnd)
      LOOM_THROW(DeviceError, "zynq: the UIO device's register map is ", size,
                 " bytes, the accelerator's registers take ", kAccelRegsEnd,
                 " (is it the accelerator's control port?)");
    return size;
  }
  std::unique_ptr<Mapping> open_region(const ZynqFields& f) {
    if (!fs::exists(dma_sysfs_ / "phys_addr"))
      LOOM_THROW(DeviceError, "zynq: no contiguous memory: no u-dma-buf device '", f.udmabuf, "' (",
                 dma_sysfs_.string(), "): load u-dma-buf with a region for the accelerator (modprobe u-dma-buf ",
                 f.udmabuf, "=134217728, or its device-tree node; docs/fpga.md)");
    phys_ = read_number(dma_sysfs_ / "phys_addr");
    const uint64_t size = read_number(dma_sysfs_ / "size");
    if (size == 0) LOOM_THROW(DeviceError, "zynq: u-dma-buf device '", f.udmabuf, "' has no memory");
    return std::make_unique<Mapping>(fs::path(f.dev) / f.udmabuf, size, /*uncached=*/false, "the DMA region");
  }
  volatile uint32_t* reg(uint32_t offset) {
    if (offset % 4 || offset + 4 > regs_.bytes)
      LOOM_THROW(DeviceError, name_, ": register offset 0x", std::hex, offset, std::dec, " outside the ", regs_.bytes,
                 "-byte window or not 4-byte aligned");
    return reinterpret_cast<volatile uint32_t*>(static_cast<uint8_t*>(regs_.base) + offset);
  }
  void sync(uint64_t offset, uint64_t bytes, int direction, const char* trigger) {
    write_text(dma_sysfs_ / "sync_offset", std::to_string(offset));
    write_text(dma_sysfs_ / "sync_size", std::to_string(bytes));
    write_text(dma_sysfs_ / "sync_direction", std::to_string(direction));
    write_text(dma_sysfs_ / trigger, "1");
  }

  std::string uio_, name_;
  fs::path dma_sysfs_;
  Mapping regs_;
  uint64_t phys_ = 0;
  std::unique_ptr<Mapping> dma_;
};

}  // namespace

std::unique_ptr<ZynqPlatform> make_linux_zynq_platform(const ZynqFields& fields) {
  return std::make_unique<LinuxZynqPlatform>(fields);
}

}  // namespace loom::sim
