#include "loom/runtime/accel_image.h"

#include <algorithm>
#include <cstring>

#include "loom/runtime/error.h"

namespace loom::runtime {

namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'A', 'C', 'C', 'L'};

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint32_t>(out, uint32_t(s.size()));
  out += s;
}

class Reader {
 public:
  Reader(const std::string& in, const std::string& origin) : in_(in), origin_(origin) {}
  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string bytes(uint64_t n, const char* what) {
    need(n, what);
    std::string s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  // A count of records of at least `min_bytes` each: refused before anything is allocated.
  uint64_t count(uint64_t n, uint64_t min_bytes, const char* what) {
    if (n > (in_.size() - pos_) / min_bytes) fail("the ", what, " count ", n, " exceeds the bytes left");
    return n;
  }
  bool at_end() const { return pos_ == in_.size(); }
  template <typename... A>
  [[noreturn]] void fail(const A&... a) const {
    LOOM_THROW(ModelError, origin_, ": accelerator image: ", a...);
  }

 private:
  void need(uint64_t n, const char* what) const {
    if (in_.size() - pos_ < n) fail("truncated (while reading ", what, ")");
  }
  const std::string& in_;
  const std::string& origin_;
  size_t pos_ = 0;
};

uint64_t read_field(const uint8_t* p, int bit, int width) {
  uint64_t v = 0;
  for (int b = 0; b < width; ++b) v |= uint64_t((p[(bit + b) / 8] >> ((bit + b) % 8)) & 1) << b;
  return v;
}

void write_field(uint8_t* p, int bit, int width, uint64_t v) {
  for (int b = 0; b < width; ++b) {
    uint8_t mask = uint8_t(1u << ((bit + b) % 8));
    p[(bit + b) / 8] = uint8_t(((v >> b) & 1) ? p[(bit + b) / 8] | mask : p[(bit + b) / 8] & ~mask);
  }
}

}  // namespace

std::string AccelImage::serialize() const {
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kAccelImageVersion);
  put_string(out, config_json);
  put<uint64_t>(out, link_base);
  put<uint64_t>(out, size);
  put<uint64_t>(out, alignment);
  put<uint64_t>(out, bytes.size());
  out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  put<uint32_t>(out, uint32_t(relocations.size()));
  for (const auto& r : relocations) {
    put<uint64_t>(out, r.offset);
    put<uint16_t>(out, r.bit);
    put<uint16_t>(out, r.width);
    put<uint32_t>(out, r.scale);
  }
  put<uint32_t>(out, uint32_t(streams.size()));
  for (const auto& s : streams) {
    put_string(out, s.name);
    put<uint64_t>(out, s.insn_offset);
    put<uint32_t>(out, s.count);
  }
  return out;
}

AccelImage AccelImage::parse(const std::string& in, const std::string& origin) {
  Reader r(in, origin);
  if (r.bytes(sizeof(kMagic), "magic") != std::string(kMagic, sizeof(kMagic)))
    r.fail("bad magic (not an accelerator image)");
  uint32_t version = r.get<uint32_t>("version");
  if (version != kAccelImageVersion)
    r.fail("format version ", version, ", this runtime reads version ", kAccelImageVersion);
  AccelImage img;
  img.config_json = r.bytes(r.get<uint32_t>("config length"), "config");
  img.link_base = r.get<uint64_t>("link base");
  img.size = r.get<uint64_t>("size");
  img.alignment = r.get<uint64_t>("alignment");
  std::string b = r.bytes(r.get<uint64_t>("image length"), "image bytes");
  img.bytes.assign(b.begin(), b.end());
  uint64_t nrel = r.count(r.get<uint32_t>("relocation count"), 16, "relocation");
  img.relocations.resize(nrel);
  for (auto& rel : img.relocations) {
    rel.offset = r.get<uint64_t>("relocation offset");
    rel.bit = r.get<uint16_t>("relocation bit");
    rel.width = r.get<uint16_t>("relocation width");
    rel.scale = r.get<uint32_t>("relocation scale");
  }
  uint64_t nstreams = r.count(r.get<uint32_t>("stream count"), 16, "stream");
  img.streams.resize(nstreams);
  for (auto& s : img.streams) {
    s.name = r.bytes(r.get<uint32_t>("stream name length"), "stream name");
    s.insn_offset = r.get<uint64_t>("stream offset");
    s.count = r.get<uint32_t>("stream count");
  }
  if (!r.at_end()) r.fail("bytes after the last stream");
  img.validate(origin);
  return img;
}

void AccelImage::validate(const std::string& origin) const {
  auto fail = [&](auto&&... a) { LOOM_THROW(ModelError, origin, ": accelerator image: ", a...); };
  if (alignment == 0 || (alignment & (alignment - 1))) fail("alignment ", alignment, " is not a power of two");
  if (link_base % alignment)
    fail("link base 0x", std::hex, link_base, std::dec, " is not a multiple of the alignment ", alignment);
  if (bytes.size() > size) fail(bytes.size(), " initial bytes exceed the image size ", size);
  for (size_t i = 0; i < relocations.size(); ++i) {
    const auto& r = relocations[i];
    if (r.width == 0 || r.width > 64 || r.scale == 0 || alignment % r.scale)
      fail("relocation ", i, ": width ", r.width, " / scale ", r.scale,
           " is invalid (width 1..64, scale dividing the alignment)");
    uint64_t end_bit = uint64_t(r.bit) + r.width;
    if (r.offset >= bytes.size() || (end_bit + 7) / 8 > bytes.size() - r.offset)
      fail("relocation ", i, " at offset ", r.offset, " lies outside the ", bytes.size(), " initial bytes");
  }
  for (const auto& s : streams) {
    if (s.count == 0 || s.insn_offset % 16 || s.insn_offset >= bytes.size() ||
        (bytes.size() - s.insn_offset) / 16 < s.count)
      fail("stream '", s.name, "' (", s.count, " instructions at offset ", s.insn_offset,
           ") lies outside the initial bytes");
  }
}

std::vector<uint8_t> relocate(const AccelImage& image, uint64_t base) {
  if (base % image.alignment)
    LOOM_THROW(ModelError, "accelerator image: base 0x", std::hex, base, std::dec,
               " is not a multiple of the alignment ", image.alignment);
  std::vector<uint8_t> out = image.bytes;
  // The move in bytes, as a direction and a magnitude (no 128-bit integers on 32-bit hosts); every
  // scale divides the alignment, so each move is a whole number of units.
  const bool up = base >= image.link_base;
  const uint64_t move = up ? base - image.link_base : image.link_base - base;
  for (size_t i = 0; i < image.relocations.size(); ++i) {
    const auto& r = image.relocations[i];
    uint8_t* p = out.data() + r.offset;
    const uint64_t field = read_field(p, r.bit, r.width), units = move / r.scale;
    const uint64_t largest = r.width == 64 ? ~uint64_t(0) : (uint64_t(1) << r.width) - 1;
    if (up ? units > largest - field : units > field)
      LOOM_THROW(ModelError, "accelerator image: relocation ", i, " (offset ", r.offset, ", bits ", r.bit, "..",
                 r.bit + r.width - 1, ") overflows at base 0x", std::hex, base, std::dec,
                 ": the device address does not fit the ", r.width, "-bit field");
    const uint64_t v = up ? field + units : field - units;
    write_field(p, r.bit, r.width, uint64_t(v));
  }
  return out;
}

LoadedAccelImage::LoadedAccelImage(AccelDevice& device, const AccelImage& image)
    : device_(device), streams_(image.streams), size_(image.size) {
  image.validate("accelerator image");
  base_ = device_.alloc(image.size == 0 ? image.alignment : image.size, image.alignment);
  try {
    std::vector<uint8_t> patched = relocate(image, base_);
    if (!patched.empty()) device_.write(base_, patched.data(), patched.size());
    // The tail (activations) starts zeroed, as on a freshly allocated board buffer.
    std::vector<uint8_t> zeros(std::min<uint64_t>(image.size - patched.size(), 1 << 20), 0);
    for (uint64_t off = patched.size(); off < image.size; off += zeros.size())
      device_.write(base_ + off, zeros.data(), std::min<uint64_t>(zeros.size(), image.size - off));
  } catch (...) {
    device_.free(base_);
    throw;
  }
}

LoadedAccelImage::~LoadedAccelImage() {
  try {
    device_.free(base_);
  } catch (const Error&) {  // the device is gone (a remote server stopped): nothing to free here
  }
}

uint64_t LoadedAccelImage::address(uint64_t offset, uint64_t bytes) const {
  if (offset > size_ || bytes > size_ - offset)
    LOOM_THROW(DeviceError, "accelerator image: [", offset, ", +", bytes, ") lies outside the ", size_, "-byte image");
  return base_ + offset;
}

void LoadedAccelImage::run(size_t stream, std::chrono::milliseconds timeout) {
  if (stream >= streams_.size())
    LOOM_THROW(DeviceError, "accelerator image: no stream ", stream, " (", streams_.size(), " streams)");
  const AccelStream& s = streams_[stream];
  try {
    device_.label_next_run(s.name);
    device_.launch(base_ + s.insn_offset, s.count);
    device_.wait(timeout);
  } catch (const DeviceError& e) {
    LOOM_THROW(DeviceError, "stream '", s.name, "': ", e.what());
  }
}

}  // namespace loom::runtime
