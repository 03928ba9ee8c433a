// The executor graph of a compiled model (the JSON section of a .loom file): parsed and checked
// before anything is allocated. Errors are ModelError naming the origin; nothing is allocated
// from sizes in the input (a storage of 2^40 bytes is only a number here).
#include <cstdint>
#include <string>

#include "loom/runtime/error.h"
#include "loom/runtime/executor_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    loom::runtime::ExecutorGraph plan = loom::runtime::ExecutorGraph::from_json(
        std::string(reinterpret_cast<const char*>(data), size), uint64_t(1) << 20, "fuzz");
    (void)plan.storage_total();
  } catch (const loom::Error&) {
  }
  return 0;
}
