#include "loom/runtime/model_file.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "loom/runtime/error.h"

namespace loom::runtime {

namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'M', 'O', 'D', 'L'};

uint64_t fnv1a(const char* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<uint8_t>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T get(const std::string& in, size_t& pos, const std::string& origin, const char* what) {
  if (in.size() - pos < sizeof(T)) LOOM_THROW(ModelError, origin, ": truncated compiled model (while reading ", what, ")");
  T v;
  std::memcpy(&v, in.data() + pos, sizeof(T));
  pos += sizeof(T);
  return v;
}

}  // namespace

std::shared_ptr<uint8_t> aligned_buffer(uint64_t bytes) {
  uint64_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) LOOM_THROW(RuntimeError, "out of host memory allocating ", bytes, " bytes");
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

void save_model_file(const std::string& path, const ModelFile& m) {
  std::string out;
  out.reserve(m.graph_json.size() + m.params_bytes + m.library.size() + 64);
  out.append(kMagic, sizeof(kMagic));
  bool accel = !m.accel_image.empty();
  put<uint32_t>(out, accel ? kModelFormatVersionAccel : kModelFormatVersion);
  put<uint32_t>(out, accel ? 4 : 3);
  put<uint64_t>(out, m.graph_json.size());
  out += m.graph_json;
  put<uint64_t>(out, m.params_bytes);
  out.append(reinterpret_cast<const char*>(m.params.get()), m.params_bytes);
  put<uint64_t>(out, m.library.size());
  out += m.library;
  if (accel) {
    put<uint64_t>(out, m.accel_image.size());
    out += m.accel_image;
  }
  put<uint64_t>(out, fnv1a(out.data(), out.size()));
  // Write to a temporary name first so a failed write never leaves a half file under `path`.
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) LOOM_THROW(RuntimeError, "cannot write '", path, "'");
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!f) LOOM_THROW(RuntimeError, "cannot write '", path, "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) LOOM_THROW(RuntimeError, "cannot write '", path, "'");
}

ModelFile parse_model_file(const std::string& in, const std::string& origin) {
  if (in.size() < sizeof(kMagic) || std::memcmp(in.data(), kMagic, sizeof(kMagic)) != 0)
    LOOM_THROW(ModelError, origin, ": not a compiled Loom model (bad magic)");
  size_t pos = sizeof(kMagic);
  uint32_t version = get<uint32_t>(in, pos, origin, "the version");
  if (version != kModelFormatVersion && version != kModelFormatVersionAccel)
    LOOM_THROW(ModelError, origin, ": compiled model format version ", version, ", this runtime reads versions ", kModelFormatVersion, " and ",
               kModelFormatVersionAccel, " (recompile the model with this Loom)");
  const uint32_t kSections = version == kModelFormatVersion ? 3 : 4;
  uint32_t sections = get<uint32_t>(in, pos, origin, "the section count");
  if (sections != kSections) LOOM_THROW(ModelError, origin, ": compiled model has ", sections, " sections, expected ", kSections);
  if (in.size() < pos + 8) LOOM_THROW(ModelError, origin, ": truncated compiled model");
  uint64_t stored_hash;
  std::memcpy(&stored_hash, in.data() + in.size() - 8, 8);
  std::string body_names[4] = {"the graph", "the parameters", "the kernel library", "the accelerator image"};
  std::string bodies[4];
  ModelFile m;
  size_t end = in.size() - 8;
  for (uint32_t s = 0; s < kSections; ++s) {
    uint64_t len = get<uint64_t>(in, pos, origin, body_names[s].c_str());
    if (pos > end || len > end - pos)  // the length itself may already reach into the trailing hash
      LOOM_THROW(ModelError, origin, ": truncated compiled model (", body_names[s], " needs ", len, " bytes, ", end - pos, " left)");
    if (s == 1) {
      m.params = aligned_buffer(len);
      if (len) std::memcpy(m.params.get(), in.data() + pos, len);
      m.params_bytes = len;
    } else {
      bodies[s].assign(in.data() + pos, len);
    }
    pos += len;
  }
  if (pos != end) LOOM_THROW(ModelError, origin, ": ", end - pos, " unexpected bytes after the last section");
  if (fnv1a(in.data(), end) != stored_hash) LOOM_THROW(ModelError, origin, ": compiled model is corrupted (checksum mismatch)");
  m.graph_json = std::move(bodies[0]);
  m.library = std::move(bodies[2]);
  m.accel_image = std::move(bodies[3]);
  if (version == kModelFormatVersionAccel && m.accel_image.empty())
    LOOM_THROW(ModelError, origin, ": compiled model version ", version, " has an empty accelerator image");
  return m;
}

ModelFile load_model_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) LOOM_THROW(RuntimeError, "cannot open '", path, "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_model_file(ss.str(), "'" + path + "'");
}

}  // namespace loom::runtime
