#include "files.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "loom/runtime/error.h"

namespace loom::regress {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void replace_atomically(const std::filesystem::path& p,
                        const std::function<void(const std::filesystem::path&)>& write) {
  std::filesystem::path tmp = p;
  tmp += ".tmp" + std::to_string(getpid());
  write(tmp);
  std::filesystem::rename(tmp, p);
}

void write_atomically(const std::filesystem::path& p, const std::string& text) {
  replace_atomically(p, [&](const std::filesystem::path& tmp) {
    std::ofstream f(tmp, std::ios::binary);
    if (!f || !(f << text)) LOOM_THROW(RuntimeError, "cannot write '", tmp.string(), "'");
  });
}

}  // namespace loom::regress
