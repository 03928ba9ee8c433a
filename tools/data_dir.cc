#include "data_dir.h"

#include <filesystem>

namespace loom::tools {

std::string hw_data_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "loom";
    if (fs::is_directory(installed / "rtl", ec)) return installed.string();
  }
  return LOOM_SOURCE_HW_DIR;
}

}  // namespace loom::tools
