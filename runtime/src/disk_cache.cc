#include "loom/runtime/disk_cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <vector>

#include "loom/runtime/env.h"

namespace loom::runtime {

namespace fs = std::filesystem;

namespace {

std::string hex64(uint64_t h) {
  std::ostringstream os;
  os << std::hex << std::setw(16) << std::setfill('0') << h;
  return os.str();
}

// Seeds the check with another basis than the key, so a key collision does not also collide here.
constexpr uint64_t kCheckSeed = 0x84222325cbf29ce4ull;
constexpr std::string_view kMagic = "LOOMCACHE1\n";

std::string entry_header(std::string_view bytes, std::string_view check) {
  return std::string(kMagic) + content_hash(check, kCheckSeed) + "\n" + binary_digest(bytes) + "\n" +
         std::to_string(bytes.size()) + "\n";
}

}  // namespace

std::string content_hash(std::string_view text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;  // FNV-1a
  return hex64(h);
}

std::string binary_digest(std::string_view bytes) {
  uint64_t h = kFnvOffsetBasis ^ bytes.size();
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  return content_hash(bytes.substr(i), h);
}

fs::path cache_directory(const char* env_var, const char* what) {
  if (auto d = env::text(env_var)) return *d == "off" ? fs::path() : fs::path(*d);
  if (auto x = env::text("XDG_CACHE_HOME")) return fs::path(*x) / "loom" / what;
  if (auto h = env::text("HOME")) return fs::path(*h) / ".cache" / "loom" / what;
  return {};
}

std::optional<std::string> read_cache_entry(const fs::path& file, std::string_view check) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The header is four lines; the size line says where the bytes end.
  size_t pos = 0;
  for (int line = 0; line < 4; ++line) {
    pos = all.find('\n', pos);
    if (pos == std::string::npos) return std::nullopt;
    ++pos;
  }
  std::string bytes = all.substr(pos);
  if (all.compare(0, pos, entry_header(bytes, check)) != 0) return std::nullopt;  // damaged, or another key
  std::error_code ec;
  fs::last_write_time(file, fs::file_time_type::clock::now(), ec);  // recently used
  return bytes;
}

bool write_file_atomically(const fs::path& file, std::string_view bytes) {
  static std::atomic<uint64_t> serial{0};
  fs::path tmp = file;
  tmp += ".tmp" + std::to_string(::getpid()) + "_" + std::to_string(serial++);
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out.write(bytes.data(), std::streamsize(bytes.size())) || !out.flush()) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);  // atomic: a concurrent reader sees the old entry or the whole new one
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

bool write_cache_entry(const fs::path& file, std::string_view bytes, std::string_view check) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) return false;
  std::string all = entry_header(bytes, check);
  all.append(bytes);
  return write_file_atomically(file, all);
}

void trim_cache(const fs::path& dir, const std::string& suffix, uint64_t max_bytes) {
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    uint64_t size;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    std::error_code e;
    // A temporary file an hour old was left by a process that died writing it.
    if (name.find(suffix + ".tmp") != std::string::npos) {
      auto written = it->last_write_time(e);
      if (!e && fs::file_time_type::clock::now() - written > std::chrono::hours(1)) fs::remove(p, e);
      continue;
    }
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    uint64_t size = it->file_size(e);
    auto used = e ? fs::file_time_type() : it->last_write_time(e);
    if (e) continue;  // removed by another process meanwhile
    entries.push_back({p, used, size});
    total += size;
  }
  if (total <= max_bytes) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= max_bytes / 4 * 3) break;
    std::error_code r;
    if (fs::remove(e.path, r)) total -= e.size;
  }
}

}  // namespace loom::runtime
