// The compiled-model file (.loom): everything a compiled model needs to run, in one file, read by
// the runtime alone (no compiler libraries):
//   - the executor graph (JSON: values, memory plan, kernel calls; see executor_graph.h),
//   - the parameters (one 64-byte aligned blob; the graph gives each one's offset and size),
//   - the machine code of every kernel (a shared library exported by the LLVM backend),
//   - for models with accelerator kernels, the linked accelerator image (runtime/accel_image.h),
//   - for models with GPU kernels, the CUDA program (runtime/cuda.h: PTX, cubin, launches).
//
// Layout (little-endian): "LOOMMODL", u32 format version, u32 section count, then per section a
// 4-byte kind ("GRPH" graph, "PARM" parameters, "KLIB" kernel library, "ACCL" accelerator
// image, "CUDA" CUDA program), u64 byte length and the bytes, and a trailing u64 FNV-1a hash of everything before it.
// Sections are found by kind, in any order; graph, parameters and library are required, each kind
// appears at most once. This is format version 3; versions 1 and 2 (sections by position: graph,
// parameters, library[, accelerator image]) are still read. A truncated, corrupted or newer-format
// file, or one with an unknown or repeated section, throws ModelError naming the file.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace loom::runtime {

inline constexpr uint32_t kModelFormatVersion = 3;  // what save_model_file writes

struct ModelFile {
  std::string graph_json;
  std::shared_ptr<uint8_t> params;  // 64-byte aligned
  uint64_t params_bytes = 0;
  std::string library;       // ELF shared object bytes
  std::string accel_image;   // serialized runtime::AccelImage; empty for CPU-only models
  std::string cuda_program;  // serialized runtime::CudaProgram; empty without GPU kernels
};

void save_model_file(const std::string& path, const ModelFile& model);
ModelFile load_model_file(const std::string& path);
// Parses the bytes of a model file; `origin` names it in errors.
ModelFile parse_model_file(const std::string& bytes, const std::string& origin);

// Aligned host buffer of `bytes` bytes (zeroed), shared.
std::shared_ptr<uint8_t> aligned_buffer(uint64_t bytes);

}  // namespace loom::runtime
