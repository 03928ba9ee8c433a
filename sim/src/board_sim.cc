// Simulators as boards: buffers with a host copy that only syncs move (loom/sim/board.h).
#include <cstring>
#include <vector>

#include "loom/runtime/error.h"
#include "loom/sim/board.h"
#include "simulated_board.h"
#include "xrt_layer.h"

namespace loom::sim {

namespace {

class SimBuffer : public BoardBuffer {
 public:
  SimBuffer(std::shared_ptr<AccelDevice> dev, uint64_t bytes)
      : dev_(std::move(dev)), addr_(dev_->alloc(bytes, 4096)), host_(bytes, 0xa5) {}
  ~SimBuffer() override {
    try {
      dev_->free(addr_);
    } catch (const Error&) {
    }
  }
  uint64_t address() const override { return addr_; }
  uint64_t size() const override { return host_.size(); }
  void write(const void* src, uint64_t bytes, uint64_t offset) override {
    check(bytes, offset, "write");
    std::memcpy(host_.data() + offset, src, bytes);
  }
  void read(void* dst, uint64_t bytes, uint64_t offset) override {
    check(bytes, offset, "read");
    std::memcpy(dst, host_.data() + offset, bytes);
  }
  void sync(SyncDirection d, uint64_t bytes, uint64_t offset) override {
    check(bytes, offset, "sync");
    if (d == SyncDirection::ToDevice)
      dev_->write(addr_ + offset, host_.data() + offset, bytes);
    else
      dev_->read(addr_ + offset, host_.data() + offset, bytes);
  }

 private:
  void check(uint64_t bytes, uint64_t offset, const char* what) const {
    if (offset > host_.size() || bytes > host_.size() - offset)
      LOOM_THROW(DeviceError, "board buffer at 0x", std::hex, addr_, std::dec, ": ", what, " of ", bytes,
                 " bytes at offset ", offset, " past its ", host_.size(), " bytes");
  }
  std::shared_ptr<AccelDevice> dev_;
  uint64_t addr_;
  std::vector<uint8_t> host_;  // stale until synced: what a board's host buffer is
};

class SimBoardLayer : public BoardLayer {
 public:
  SimBoardLayer(const std::string& inner, const std::string& config_json)
      : name_("board-" + inner), dev_(make_accel_device(inner, config_json)) {}
  std::string name() const override { return name_; }
  std::unique_ptr<BoardBuffer> alloc(uint64_t bytes) override { return std::make_unique<SimBuffer>(dev_, bytes); }
  void write_register(uint32_t offset, uint32_t value) override { dev_->write_reg(offset, value); }
  uint32_t read_register(uint32_t offset) override { return dev_->read_reg(offset); }

 private:
  std::string name_;
  std::shared_ptr<AccelDevice> dev_;
};

}  // namespace

std::unique_ptr<BoardLayer> make_sim_board_layer(const std::string& inner, const std::string& config_json) {
  return std::make_unique<SimBoardLayer>(inner, config_json);
}

void register_simulated_boards(const std::string& prefix, const SimulatedLayerFactory& make,
                               const SimulatedLayerCheck& check) {
  for (std::string inner : {"fsim", "rtl"}) {
    bool have = false;
    for (auto& b : accel_backends()) have |= b == inner;
    if (!have) continue;
    register_accel_backend(prefix + "-" + inner,
                           [inner, make](const std::string& json) -> std::unique_ptr<AccelDevice> {
                             return std::make_unique<BoardDevice>(make(inner, json));
                           });
    register_accel_backend_check(prefix + "-" + inner, [inner, check](const std::string& json) { check(inner, json); });
  }
}

void register_board_backends() {
  // The board stands on the inner backend, reading its options: it can open what that one can.
  register_simulated_boards("board", make_sim_board_layer, [](const std::string& inner, const std::string& json) {
    check_accel_backend(inner, json);
  });
  register_accel_backend("xrt", [](const std::string& json) -> std::unique_ptr<AccelDevice> {
    return std::make_unique<BoardDevice>(make_xrt_layer(json));
  });
  register_accel_backend_check("xrt", check_xrt_layer);
}

}  // namespace loom::sim
