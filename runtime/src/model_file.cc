#include "loom/runtime/model_file.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "format_version.h"
#include "loom/runtime/error.h"

namespace loom::runtime {

namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'M', 'O', 'D', 'L'};

// The sections a model file may hold; versions 1 and 2 hold them in this order, by position.
enum class SectionKind { Graph, Params, Library, AccelImage, CudaProgram };
struct SectionInfo {
  const char* tag;   // 4 bytes, format version 3 on
  const char* what;  // for errors
};
constexpr SectionInfo kSections[] = {{"GRPH", "the graph"},
                                     {"PARM", "the parameters"},
                                     {"KLIB", "the kernel library"},
                                     {"ACCL", "the accelerator image"},
                                     {"CUDA", "the CUDA program"}};

int section_of_tag(std::string_view tag) {
  for (size_t k = 0; k < std::size(kSections); ++k)
    if (tag == std::string_view(kSections[k].tag, 4)) return int(k);
  return -1;
}

// Bytes of a file shown in an error message: other than printable ASCII as \xNN.
std::string printable(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

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
  if (in.size() - pos < sizeof(T))
    LOOM_THROW(ModelError, origin, ": truncated compiled model (while reading ", what, ")");
  T v;
  std::memcpy(&v, in.data() + pos, sizeof(T));
  pos += sizeof(T);
  return v;
}

}  // namespace

std::shared_ptr<uint8_t> aligned_buffer(uint64_t bytes) {
  uint64_t rounded = (bytes + 63) / 64 * 64;
  // A 32-bit host (a board's Arm cores) cannot hold what a 64-bit one can: never truncate the size.
  if (bytes > std::numeric_limits<size_t>::max() - 64)
    LOOM_THROW(RuntimeError, "cannot allocate ", bytes, " bytes of host memory: more than this ", 8 * sizeof(void*),
               "-bit process can address");
  void* p = std::aligned_alloc(64, size_t(rounded == 0 ? 64 : rounded));
  if (!p) LOOM_THROW(RuntimeError, "out of host memory allocating ", bytes, " bytes");
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

void save_model_file(const std::string& path, const ModelFile& m) {
  std::vector<std::pair<SectionKind, std::string_view>> sections = {
      {SectionKind::Graph, m.graph_json},
      {SectionKind::Params, {reinterpret_cast<const char*>(m.params.get()), size_t(m.params_bytes)}},  // in memory
      {SectionKind::Library, m.library}};
  if (!m.accel_image.empty()) sections.push_back({SectionKind::AccelImage, m.accel_image});
  if (!m.cuda_program.empty()) sections.push_back({SectionKind::CudaProgram, m.cuda_program});
  std::string out;
  out.reserve(m.graph_json.size() + m.params_bytes + m.library.size() + m.accel_image.size() + m.cuda_program.size() +
              128);
  out.append(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kModelFormatVersion);
  put<uint32_t>(out, uint32_t(sections.size()));
  for (auto& [kind, bytes] : sections) {
    out.append(kSections[int(kind)].tag, 4);
    put<uint64_t>(out, bytes.size());
    out.append(bytes);
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
  const uint32_t version = get<uint32_t>(in, pos, origin, "the version");
  check_format_version(origin, "compiled model format", version, kModelFormatVersion);
  const bool tagged = version >= 3;
  uint32_t sections = get<uint32_t>(in, pos, origin, "the section count");
  if (!tagged) {  // versions 1 and 2: graph, parameters, library[, accelerator image], by position
    const uint32_t expected = version == 1 ? 3 : 4;
    if (sections != expected)
      LOOM_THROW(ModelError, origin, ": compiled model has ", sections, " sections, expected ", expected);
  } else if (sections > std::size(kSections)) {
    LOOM_THROW(ModelError, origin, ": compiled model has ", sections, " sections, at most ", std::size(kSections),
               " are known");
  }
  if (in.size() < pos + 8) LOOM_THROW(ModelError, origin, ": truncated compiled model");
  uint64_t stored_hash;
  std::memcpy(&stored_hash, in.data() + in.size() - 8, 8);
  std::string_view bodies[std::size(kSections)];
  bool seen[std::size(kSections)] = {};
  const size_t end = in.size() - 8;
  for (uint32_t s = 0; s < sections; ++s) {
    int kind = int(s);
    if (tagged) {
      if (end - std::min(pos, end) < 4)
        LOOM_THROW(ModelError, origin, ": truncated compiled model (while reading section ", s, "'s kind)");
      kind = section_of_tag(std::string_view(in.data() + pos, 4));
      if (kind < 0)
        LOOM_THROW(ModelError, origin, ": section ", s, " has unknown kind '",
                   printable(std::string_view(in.data() + pos, 4)), "'");
      if (seen[kind])
        LOOM_THROW(ModelError, origin, ": compiled model has two sections of kind '", kSections[kind].tag, "' (",
                   kSections[kind].what, ")");
      pos += 4;
    }
    seen[kind] = true;
    uint64_t len = get<uint64_t>(in, pos, origin, kSections[kind].what);
    if (pos > end || len > end - pos)  // the length itself may already reach into the trailing hash
      LOOM_THROW(ModelError, origin, ": truncated compiled model (", kSections[kind].what, " needs ", len, " bytes, ",
                 end - pos, " left)");
    bodies[kind] = std::string_view(in.data() + pos, len);
    pos += len;
  }
  if (pos != end) LOOM_THROW(ModelError, origin, ": ", end - pos, " unexpected bytes after the last section");
  if (fnv1a(in.data(), end) != stored_hash)
    LOOM_THROW(ModelError, origin, ": compiled model is corrupted (checksum mismatch)");
  for (SectionKind required : {SectionKind::Graph, SectionKind::Params, SectionKind::Library})
    if (!seen[int(required)])
      LOOM_THROW(ModelError, origin, ": compiled model has no section of kind '", kSections[int(required)].tag, "' (",
                 kSections[int(required)].what, ")");
  if (seen[int(SectionKind::CudaProgram)] && bodies[int(SectionKind::CudaProgram)].empty())
    LOOM_THROW(ModelError, origin, ": compiled model has an empty CUDA program");
  if (seen[int(SectionKind::AccelImage)] && bodies[int(SectionKind::AccelImage)].empty())
    LOOM_THROW(ModelError, origin, ": compiled model has an empty accelerator image");
  ModelFile m;
  m.graph_json = bodies[int(SectionKind::Graph)];
  std::string_view params = bodies[int(SectionKind::Params)];
  m.params = aligned_buffer(params.size());
  if (!params.empty()) std::memcpy(m.params.get(), params.data(), params.size());
  m.params_bytes = params.size();
  m.library = bodies[int(SectionKind::Library)];
  m.accel_image = bodies[int(SectionKind::AccelImage)];
  m.cuda_program = bodies[int(SectionKind::CudaProgram)];
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
