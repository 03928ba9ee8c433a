// The compiled-model file (.loom): everything a compiled model needs to run, in one file, read by
// the runtime alone (no compiler libraries):
//   - the executor graph (JSON: values, memory plan, kernel calls; see graph_executor.h),
//   - the parameters (one 64-byte aligned blob; the graph gives each one's offset and size),
//   - the machine code of every kernel (a shared library exported by the LLVM backend).
//
// Layout (little-endian): "LOOMMODL", u32 format version, u32 section count (3), then per section
// u64 byte length + bytes (graph, params, library), and a trailing u64 FNV-1a hash of everything
// before it. A truncated, corrupted or other-version file throws ModelError naming the file.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace loom::runtime {

inline constexpr uint32_t kModelFormatVersion = 1;

struct ModelFile {
  std::string graph_json;
  std::shared_ptr<uint8_t> params;  // 64-byte aligned
  uint64_t params_bytes = 0;
  std::string library;  // ELF shared object bytes
};

void save_model_file(const std::string& path, const ModelFile& model);
ModelFile load_model_file(const std::string& path);
// Parses the bytes of a model file; `origin` names it in errors.
ModelFile parse_model_file(const std::string& bytes, const std::string& origin);

// Aligned host buffer of `bytes` bytes (zeroed), shared.
std::shared_ptr<uint8_t> aligned_buffer(uint64_t bytes);

}  // namespace loom::runtime
