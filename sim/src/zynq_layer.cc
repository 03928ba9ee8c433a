// The zynq layer under BoardDevice: buffers carved from the platform's DMA region, syncs and
// registers passed through (zynq_platform.h); the config's "zynq" fields; the backends' registration.
#include <map>
#include <nlohmann/json.hpp>

#include "loom/runtime/error.h"
#include "loom/sim/board.h"
#include "simulated_board.h"
#include "zynq_platform.h"

namespace loom::sim {

namespace {

constexpr uint64_t kPage = 4096;

// The region's pages in use, first fit; shared by the layer and its buffers so that a buffer
// freed after the layer is gone is no error.
struct Region {
  std::unique_ptr<ZynqPlatform> platform;
  std::map<uint64_t, uint64_t> used;  // offset -> bytes (whole pages)

  uint64_t place(uint64_t bytes) {
    const uint64_t want = (bytes + kPage - 1) / kPage * kPage;
    uint64_t at = 0, largest = 0;
    for (const auto& [offset, size] : used) {
      if (offset - at >= want) break;
      largest = std::max(largest, offset - at);
      at = offset + size;
    }
    const uint64_t total = platform->dma_bytes();
    if (at > total || total - at < want) {
      largest = std::max(largest, at <= total ? total - at : 0);
      LOOM_THROW(DeviceError, platform->name(), ": the DMA region (", total >> 20, " MiB at 0x", std::hex,
                 platform->dma_address(), std::dec, ") has no room for ", bytes, " bytes (largest free block ", largest,
                 " bytes): reserve a larger one (u-dma-buf's size, docs/fpga.md)");
    }
    used[at] = want;
    return at;
  }
};

class ZynqBuffer : public BoardBuffer {
 public:
  ZynqBuffer(std::shared_ptr<Region> region, uint64_t bytes)
      : region_(std::move(region)), offset_(region_->place(bytes)), bytes_(bytes) {}
  ~ZynqBuffer() override { region_->used.erase(offset_); }
  uint64_t address() const override { return region_->platform->dma_address() + offset_; }
  uint64_t size() const override { return bytes_; }
  void write(const void* src, uint64_t bytes, uint64_t offset) override {
    check(bytes, offset, "write");
    region_->platform->cpu_write(offset_ + offset, src, bytes);
  }
  void read(void* dst, uint64_t bytes, uint64_t offset) override {
    check(bytes, offset, "read");
    region_->platform->cpu_read(offset_ + offset, dst, bytes);
  }
  void sync(SyncDirection d, uint64_t bytes, uint64_t offset) override {
    check(bytes, offset, "sync");
    if (d == SyncDirection::ToDevice)
      region_->platform->sync_for_device(offset_ + offset, bytes);
    else
      region_->platform->sync_for_cpu(offset_ + offset, bytes);
  }

 private:
  void check(uint64_t bytes, uint64_t offset, const char* what) const {
    if (offset > bytes_ || bytes > bytes_ - offset)
      LOOM_THROW(DeviceError, region_->platform->name(), ": buffer at 0x", std::hex, address(), std::dec, ": ", what,
                 " of ", bytes, " bytes at offset ", offset, " past its ", bytes_, " bytes");
  }
  std::shared_ptr<Region> region_;
  uint64_t offset_, bytes_;
};

class ZynqLayer : public BoardLayer {
 public:
  explicit ZynqLayer(std::unique_ptr<ZynqPlatform> platform) : region_(std::make_shared<Region>()) {
    region_->platform = std::move(platform);
  }
  std::string name() const override { return region_->platform->name(); }
  std::unique_ptr<BoardBuffer> alloc(uint64_t bytes) override { return std::make_unique<ZynqBuffer>(region_, bytes); }
  void write_register(uint32_t offset, uint32_t value) override { region_->platform->write_register(offset, value); }
  uint32_t read_register(uint32_t offset) override { return region_->platform->read_register(offset); }

 private:
  std::shared_ptr<Region> region_;
};

}  // namespace

std::unique_ptr<BoardLayer> make_zynq_layer(std::unique_ptr<ZynqPlatform> platform) {
  return std::make_unique<ZynqLayer>(std::move(platform));
}

ZynqFields read_zynq_fields(const std::string& config_json) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  nlohmann::json z = j.is_object() && j.contains("zynq") ? j["zynq"] : nlohmann::json::object();
  if (!z.is_object()) LOOM_THROW(DeviceError, "zynq backend: config field zynq must be an object, got ", z.dump());
  ZynqFields f;
  auto field = [&](const char* key, auto& out) {
    if (!z.contains(key)) return;
    try {
      out = z[key].get<std::remove_reference_t<decltype(out)>>();
    } catch (const nlohmann::json::exception&) {
      LOOM_THROW(DeviceError, "zynq backend: config field zynq.", key, " has the wrong type: ", z[key].dump());
    }
  };
  field("uio", f.uio);
  field("udmabuf", f.udmabuf);
  field("sysfs", f.sysfs);
  field("dev", f.dev);
  field("dma_bytes", f.dma_bytes);
  for (const auto& [key, value] : z.items())
    if (key != "uio" && key != "udmabuf" && key != "sysfs" && key != "dev" && key != "dma_bytes")
      LOOM_THROW(DeviceError, "zynq backend: unknown config field zynq.", key,
                 " (known: uio, udmabuf, sysfs, dev, dma_bytes)");
  if (f.dma_bytes < kPage || f.dma_bytes % kPage)
    LOOM_THROW(DeviceError, "zynq backend: zynq.dma_bytes must be a positive multiple of 4096, got ", f.dma_bytes);
  return f;
}

std::string without_zynq_fields(const std::string& config_json) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (!j.is_object() || !j.contains("zynq")) return config_json;
  j.erase("zynq");
  return j.dump();
}

void register_zynq_backends() {
  register_simulated_boards(
      "zynq",
      [](const std::string& inner, const std::string& json) {
        return make_zynq_layer(make_sim_zynq_platform(inner, json));
      },
      [](const std::string& inner, const std::string& json) {
        read_zynq_fields(json);
        check_accel_backend(inner, without_zynq_fields(json));
      });
  register_accel_backend("zynq", [](const std::string& json) -> std::unique_ptr<AccelDevice> {
    return std::make_unique<BoardDevice>(make_zynq_layer(make_linux_zynq_platform(read_zynq_fields(json))));
  });
  register_accel_backend_check("zynq",
                               [](const std::string& json) { make_linux_zynq_platform(read_zynq_fields(json)); });
}

}  // namespace loom::sim
