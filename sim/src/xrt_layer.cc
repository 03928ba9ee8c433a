// The XRT layer (Xilinx Runtime 2.13, native C++ API): the accelerator as a user-managed RTL
// kernel. Buffers are xrt::bo in the kernel's memory bank (physical addresses for its AXI master,
// explicit syncs), registers go through xrt::ip. Built only where the XRT headers and
// xrt_coreutil are found (sim/CMakeLists.txt).
#include <filesystem>
#include <nlohmann/json.hpp>

#include "experimental/xrt_ip.h"
#include "loom/runtime/error.h"
#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt_layer.h"

namespace loom::sim {

namespace {

class XrtBuffer : public BoardBuffer {
 public:
  explicit XrtBuffer(xrt::bo bo) : bo_(std::move(bo)) {}
  uint64_t address() const override { return bo_.address(); }
  uint64_t size() const override { return bo_.size(); }
  void write(const void* src, uint64_t bytes, uint64_t offset) override { bo_.write(src, bytes, offset); }
  void read(void* dst, uint64_t bytes, uint64_t offset) override { bo_.read(dst, bytes, offset); }
  void sync(SyncDirection d, uint64_t bytes, uint64_t offset) override {
    bo_.sync(d == SyncDirection::ToDevice ? XCL_BO_SYNC_BO_TO_DEVICE : XCL_BO_SYNC_BO_FROM_DEVICE, bytes, offset);
  }

 private:
  xrt::bo bo_;
};

class XrtLayer : public BoardLayer {
 public:
  XrtLayer(unsigned index, const std::string& xclbin, const std::string& kernel, unsigned group)
      : name_("xrt:" + std::to_string(index) + ":" + kernel), group_(group) {
    try {
      device_ = xrt::device(index);
    } catch (const std::exception& e) {
      LOOM_THROW(DeviceError, "no XRT device found (looked for device index ", index, "): ", e.what());
    }
    try {
      uuid_ = device_.load_xclbin(xclbin);
      ip_ = xrt::ip(device_, uuid_, kernel);
    } catch (const std::exception& e) {
      LOOM_THROW(DeviceError, "XRT device ", index, ": cannot load kernel '", kernel, "' from '", xclbin,
                 "': ", e.what());
    }
  }
  std::string name() const override { return name_; }
  std::unique_ptr<BoardBuffer> alloc(uint64_t bytes) override {
    try {
      return std::make_unique<XrtBuffer>(xrt::bo(device_, bytes, xrt::bo::flags::normal, group_));
    } catch (const std::exception& e) {
      LOOM_THROW(DeviceError, name_, ": cannot allocate ", bytes, " bytes in memory group ", group_, ": ", e.what());
    }
  }
  void write_register(uint32_t offset, uint32_t value) override { ip_.write_register(offset, value); }
  uint32_t read_register(uint32_t offset) override { return ip_.read_register(offset); }

 private:
  std::string name_;
  unsigned group_;
  xrt::device device_;
  xrt::uuid uuid_;
  xrt::ip ip_;
};

}  // namespace

namespace {

struct XrtFields {
  unsigned index = 0;
  std::string xclbin, kernel = "loom_accel";
  unsigned memory_group = 0;
};

// The config's "xrt" object read, the device probed and the xclbin required: what both the check
// and the layer need before anything is loaded.
XrtFields probe_xrt(const std::string& config_json) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  nlohmann::json x = j.is_object() && j.contains("xrt") ? j["xrt"] : nlohmann::json::object();
  auto field = [&](const char* key, auto fallback) {
    using T = decltype(fallback);
    if (!x.contains(key)) return fallback;
    try {
      return x[key].get<T>();
    } catch (const nlohmann::json::exception&) {
      LOOM_THROW(DeviceError, "xrt backend: config field xrt.", key, " has the wrong type: ", x[key].dump());
    }
  };
  XrtFields f;
  f.xclbin = field("xclbin", std::string());
  f.index = field("device", 0u);
  f.kernel = field("kernel", f.kernel);
  f.memory_group = field("memory_group", 0u);
  if (f.xclbin.empty()) {
    // Without a bitstream there is nothing to run, but whether a board is there at all is worth saying first.
    try {
      xrt::device probe(f.index);
    } catch (const std::exception& e) {
      LOOM_THROW(DeviceError, "no XRT device found (looked for device index ", f.index, "): ", e.what());
    }
    LOOM_THROW(DeviceError,
               "xrt backend: the config has no xrt.xclbin (the bitstream with the loom_accel kernel; "
               "docs/fpga.md)");
  }
  return f;
}

}  // namespace

void check_xrt_layer(const std::string& config_json) {
  XrtFields f = probe_xrt(config_json);
  try {
    xrt::device probe(f.index);
  } catch (const std::exception& e) {
    LOOM_THROW(DeviceError, "no XRT device found (looked for device index ", f.index, "): ", e.what());
  }
  if (!std::filesystem::is_regular_file(f.xclbin))
    LOOM_THROW(DeviceError, "xrt backend: no xclbin file '", f.xclbin, "'");
}

std::unique_ptr<BoardLayer> make_xrt_layer(const std::string& config_json) {
  XrtFields f = probe_xrt(config_json);
  return std::make_unique<XrtLayer>(f.index, f.xclbin, f.kernel, f.memory_group);
}

}  // namespace loom::sim
