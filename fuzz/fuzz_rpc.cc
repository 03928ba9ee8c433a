// Requests of the RPC device protocol (runtime/src/rpc_server.cc), checked as the server checks
// them before executing: every malformed body is a DeviceError naming the field.
#include <cstdint>

#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    loom::rpc::check_request(data, size);
  } catch (const loom::Error&) {
  }
  return 0;
}
