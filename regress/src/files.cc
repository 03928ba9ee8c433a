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

void write_atomically(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::path tmp = p;
  tmp += ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f || !(f << text)) LOOM_THROW(RuntimeError, "cannot write '", tmp.string(), "'");
  }
  std::filesystem::rename(tmp, p);
}

}  // namespace loom::regress
