#include "loom/sim/commit_log.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "loom/runtime/error.h"

namespace loom::sim {

std::string CommitRecord::describe() const {
  std::ostringstream m;
  if (!label.empty()) m << label << ": ";
  m << "instruction " << index << " (" << accel::to_string(module) << " " << accel::to_string(opcode) << "): " << target
    << ", digest 0x" << std::hex << digest << std::dec << "; tokens l2c " << tokens[0] << ", c2l " << tokens[1]
    << ", c2s " << tokens[2] << ", s2c " << tokens[3];
  return m.str();
}

uint64_t digest_bytes(const void* data, size_t bytes, uint64_t h) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

std::optional<Divergence> first_divergence(const std::vector<CommitRecord>& a, const std::vector<CommitRecord>& b) {
  using Key = std::pair<uint32_t, uint32_t>;  // (run, index)
  std::map<Key, const CommitRecord*> ma, mb;
  for (auto& r : a) ma[{r.run, r.index}] = &r;
  for (auto& r : b) mb[{r.run, r.index}] = &r;
  auto ia = ma.begin(), ib = mb.begin();
  while (ia != ma.end() || ib != mb.end()) {
    const Key k = ia == ma.end() ? ib->first : ib == mb.end() ? ia->first : std::min(ia->first, ib->first);
    const CommitRecord* ra = ia != ma.end() && ia->first == k ? ia->second : nullptr;
    const CommitRecord* rb = ib != mb.end() && ib->first == k ? ib->second : nullptr;
    if (!ra || !rb || ra->digest != rb->digest || ra->target != rb->target || ra->opcode != rb->opcode) {
      Divergence d;
      d.run = k.first;
      d.index = k.second;
      if (ra) d.a = *ra;
      if (rb) d.b = *rb;
      return d;
    }
    ++ia, ++ib;
  }
  return std::nullopt;
}

CommitLogSource& commit_log_of(AccelDevice* device, const std::string& backend, const std::string& what) {
  auto* log = dynamic_cast<CommitLogSource*>(device);
  if (!log)
    LOOM_THROW(ConfigError, what, "backend '", backend,
               "' does not record per-instruction commits (fsim, rtl and systemc do)");
  return *log;
}

std::vector<CommitRecord> run_recorded(AccelDevice* device, const std::string& backend,
                                       const std::function<void()>& run, std::string& error, const std::string& what) {
  CommitLogSource& log = commit_log_of(device, backend, what);
  log.record_commits(true);
  try {
    run();
  } catch (const DeviceError& e) {
    error = e.what();
  }
  return log.take_commits();
}

}  // namespace loom::sim
