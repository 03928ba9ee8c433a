// The XRT layer where Loom was built without XRT (libxrt-dev not found at configure time).
#include "loom/runtime/error.h"
#include "xrt_layer.h"

namespace loom::sim {

std::unique_ptr<BoardLayer> make_xrt_layer(const std::string& config_json) {
  check_xrt_layer(config_json);
  return nullptr;
}

void check_xrt_layer(const std::string&) {
  LOOM_THROW(DeviceError,
             "the xrt backend is not built: Loom was configured without XRT (install libxrt-dev, "
             "or XRT under /opt/xilinx/xrt, and configure again)");
}

}  // namespace loom::sim
