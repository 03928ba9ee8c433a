// The ONNX importer on arbitrary bytes: protobuf parsing, then the graph built from whatever
// parsed (operators, attributes, initializers, constant folding of shape computations, shape
// inference). Errors are loom::Error (ModelError, ShapeError, ...) naming the node; external
// data is looked up in a folder that does not exist.
#include <cstdint>
#include <string>

#include "loom/frontend/onnx.h"
#include "loom/runtime/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    loom::frontend::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz",
                                      "/nonexistent-loom-fuzz");
  } catch (const loom::Error&) {
  }
  return 0;
}
