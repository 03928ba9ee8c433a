#include "loom/accel/program.h"

#include <algorithm>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "loom/runtime/error.h"

namespace loom::accel {

namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'P', 'R', 'G', '1'};

class Writer {
 public:
  explicit Writer(std::ostream& os) : os_(os) {}
  template <typename T>
  void put(T v) {
    os_.write(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void bytes(const void* p, size_t n) { os_.write(static_cast<const char*>(p), std::streamsize(n)); }

 private:
  std::ostream& os_;
};

class Reader {
 public:
  Reader(std::istream& is, std::string path) : is_(is), path_(std::move(path)) {
    // The file's size bounds every block: a corrupt length is refused before anything is allocated.
    is_.seekg(0, std::ios::end);
    size_ = uint64_t(std::max<std::streamoff>(is_.tellg(), 0));
    is_.seekg(0, std::ios::beg);
  }
  template <typename T>
  T get() {
    T v{};
    bytes(&v, sizeof(T));
    return v;
  }
  void bytes(void* p, size_t n) {
    if (n > (uint64_t{1} << 32))
      LOOM_THROW(RuntimeError, "program '", path_, "': implausible block of ", n, " bytes (corrupt file?)");
    is_.read(static_cast<char*>(p), std::streamsize(n));
    if (!is_) LOOM_THROW(RuntimeError, "program '", path_, "': truncated file");
  }
  uint64_t left() const { return size_ - std::min(size_, uint64_t(std::max<std::streamoff>(is_.tellg(), 0))); }
  std::vector<uint8_t> block(uint64_t n) {
    std::vector<uint8_t> v;
    uint64_t at = uint64_t(std::max<std::streamoff>(is_.tellg(), 0));
    if (n > size_ - std::min(at, size_))
      LOOM_THROW(RuntimeError, "program '", path_, "': truncated file (a block of ", n, " bytes at offset ", at,
                 ", the file has ", size_, ")");
    v.resize(n);
    bytes(v.data(), n);
    return v;
  }

 private:
  std::istream& is_;
  std::string path_;
  uint64_t size_ = 0;
};

}  // namespace

void Program::save(const std::string& path) const {
  std::ofstream os(path, std::ios::binary);
  if (!os) LOOM_THROW(RuntimeError, "program: cannot write '", path, "'");
  Writer w(os);
  w.bytes(kMagic, 8);
  std::string json = config.to_json();
  w.put(uint32_t(json.size()));
  w.bytes(json.data(), json.size());
  w.put(uint32_t(segments.size()));
  for (auto& s : segments) {
    w.put(s.addr);
    w.put(uint64_t(s.data.size()));
    w.put(s.alignment);
    w.bytes(s.data.data(), s.data.size());
  }
  w.put(insn_addr);
  w.put(insn_count);
  w.put(uint32_t(checks.size()));
  for (auto& c : checks) {
    w.put(c.addr);
    w.put(uint64_t(c.data.size()));
    w.bytes(c.data.data(), c.data.size());
  }
}

Program Program::load(const std::string& path) {
  std::ifstream is(path, std::ios::binary);
  if (!is) LOOM_THROW(RuntimeError, "program: cannot open '", path, "'");
  std::ostringstream ss;
  ss << is.rdbuf();
  return parse(ss.str(), path);
}

Program Program::parse(const std::string& bytes, const std::string& path) {
  std::istringstream is(bytes);
  Reader r(is, path);
  char magic[8];
  r.bytes(magic, 8);
  if (std::memcmp(magic, kMagic, 8))
    LOOM_THROW(RuntimeError, "program '", path, "': not a Loom accelerator program (bad magic)");
  Program p;
  auto json = r.block(r.get<uint32_t>());
  p.config = AccelConfig::from_json(std::string(json.begin(), json.end()), "in '" + path + "'");
  uint32_t n = r.get<uint32_t>();
  for (uint32_t k = 0; k < n; ++k) {
    Segment s;
    s.addr = r.get<uint64_t>();
    uint64_t bytes = r.get<uint64_t>();
    s.alignment = r.get<uint64_t>();
    s.data = r.block(bytes);
    p.segments.push_back(std::move(s));
  }
  p.insn_addr = r.get<uint64_t>();
  p.insn_count = r.get<uint32_t>();
  uint32_t c = r.get<uint32_t>();
  for (uint32_t k = 0; k < c; ++k) {
    Segment s;
    s.addr = r.get<uint64_t>();
    s.data = r.block(r.get<uint64_t>());
    p.checks.push_back(std::move(s));
  }
  if (uint64_t extra = r.left())
    LOOM_THROW(RuntimeError, "program '", path, "': ", extra, " trailing bytes after the last check (corrupt file?)");
  p.validate(path);
  return p;
}

// The layout a device can load: each segment aligned and inside the 64-bit address space, no two
// overlapping, a non-empty instruction stream inside one segment, every check inside one.
void Program::validate(const std::string& origin) const {
  auto where = [&](const char* what, size_t k) {
    return "program '" + origin + "': " + what + " " + std::to_string(k);
  };
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [addr, end)
  for (size_t k = 0; k < segments.size(); ++k) {
    const Segment& s = segments[k];
    if (s.alignment == 0 || (s.alignment & (s.alignment - 1)))
      LOOM_THROW(RuntimeError, where("segment", k), ": alignment ", s.alignment, " is not a power of two");
    if (s.addr % s.alignment)
      LOOM_THROW(RuntimeError, where("segment", k), ": address 0x", std::hex, s.addr, " is not ", std::dec, s.alignment,
                 "-byte aligned");
    if (s.data.size() > UINT64_MAX - s.addr)
      LOOM_THROW(RuntimeError, where("segment", k), ": ", s.data.size(), " bytes at 0x", std::hex, s.addr,
                 " run past the end of the address space");
    ranges.push_back({s.addr, s.addr + s.data.size()});
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t k = 1; k < ranges.size(); ++k)
    if (ranges[k].first < ranges[k - 1].second)
      LOOM_THROW(RuntimeError, "program '", origin, "': memory segments at 0x", std::hex, ranges[k - 1].first,
                 " and 0x", ranges[k].first, " overlap");
  auto inside = [&](uint64_t addr, uint64_t bytes) {
    for (auto& [a, e] : ranges)
      if (addr >= a && addr - a <= e - a && bytes <= e - addr) return true;
    return false;
  };
  if (insn_count == 0) LOOM_THROW(RuntimeError, "program '", origin, "': the instruction stream is empty");
  if (!inside(insn_addr, 16ull * insn_count))
    LOOM_THROW(RuntimeError, "program '", origin, "': the instruction stream (", insn_count, " instructions at 0x",
               std::hex, insn_addr, ") is not inside a memory segment");
  for (size_t k = 0; k < checks.size(); ++k)
    if (!inside(checks[k].addr, checks[k].data.size()))
      LOOM_THROW(RuntimeError, where("check", k), ": ", checks[k].data.size(), " bytes at 0x", std::hex, checks[k].addr,
                 " are not inside a memory segment");
}

std::vector<Instruction> Program::instructions() const {
  for (auto& s : segments) {
    // Overflow-safe: offset and length within the segment (addresses near 2^64 must not wrap).
    if (insn_addr < s.addr) continue;
    uint64_t offset = insn_addr - s.addr, bytes = 16ull * insn_count;
    if (offset > s.data.size() || bytes > s.data.size() - offset) continue;
    IsaLayout layout(config);
    std::vector<Instruction> out;
    for (uint32_t k = 0; k < insn_count; ++k) {
      InsnWord w;
      std::memcpy(w.data(), s.data.data() + (insn_addr - s.addr) + 16ull * k, 16);
      out.push_back(decode(w, layout, k));
    }
    return out;
  }
  LOOM_THROW(RuntimeError, "program: the instruction stream at 0x", std::hex, insn_addr,
             " is not inside any memory segment");
}

ProgramResult run_program(const Program& p, AccelDevice& device, const std::function<void()>& while_running) {
  for (auto& s : p.segments) {
    device.alloc_at(s.addr, s.data.size());
    device.write(s.addr, s.data.data(), s.data.size());
  }
  device.launch(p.insn_addr, p.insn_count);
  if (while_running) while_running();
  device.wait();
  ProgramResult r;
  r.counters = device.counters();
  r.cycles = device.cycles();
  std::ostringstream rep;
  for (auto& c : p.checks) {
    std::vector<uint8_t> got(c.data.size());
    device.read(c.addr, got.data(), got.size());
    size_t bad = 0;
    for (size_t k = 0; k < got.size(); ++k) bad += got[k] != c.data[k];
    rep << "check 0x" << std::hex << c.addr << std::dec << " (" << c.data.size()
        << " bytes): " << (bad ? "MISMATCH in " + std::to_string(bad) + " bytes" : "ok") << "\n";
    r.mismatched_checks += bad != 0;
  }
  r.report = rep.str();
  return r;
}

uint64_t RecordingDevice::alloc(uint64_t bytes, uint64_t alignment) {
  uint64_t a = inner_.alloc(bytes, alignment);
  allocs_.push_back({a, bytes, alignment});
  return a;
}

void RecordingDevice::alloc_at(uint64_t addr, uint64_t bytes) {
  inner_.alloc_at(addr, bytes);
  allocs_.push_back({addr, bytes, 1});
}

void RecordingDevice::free(uint64_t addr) {
  inner_.free(addr);
  for (auto it = allocs_.begin(); it != allocs_.end(); ++it)
    if (it->addr == addr) {
      allocs_.erase(it);
      break;
    }
}

std::vector<Program::Segment> RecordingDevice::capture() {
  std::vector<Program::Segment> out;
  for (auto& a : allocs_) {
    Program::Segment s{a.addr, a.alignment, std::vector<uint8_t>(a.bytes)};
    inner_.read(a.addr, s.data.data(), a.bytes);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace loom::accel
