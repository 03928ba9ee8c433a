// Build-ids read from the loaded objects agree with readelf's reading of the files on disk.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "loom/runtime/build_id.h"

namespace loom::runtime {
namespace {

// readelf's "Build ID: ..." of `path`, or "" (an independent reader of the ELF notes).
std::string readelf_build_id(const std::string& path) {
  std::string out;
  if (FILE* p = popen(("readelf -n '" + path + "' 2>/dev/null").c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  size_t at = out.find("Build ID: ");
  if (at == std::string::npos) return "";
  size_t end = out.find_first_of(" \n", at + 10);
  return out.substr(at + 10, end - at - 10);
}

TEST(BuildId, LoadedObjectsAgreeWithReadelf) {
  std::vector<LoadedObject> objects = loaded_objects("libloom_runtime");
  ASSERT_EQ(objects.size(), 2u);  // the program, and the runtime library it loaded
  const LoadedObject* runtime_lib = nullptr;
  for (const LoadedObject& o : objects) {
    std::string want = readelf_build_id(o.path);
    ASSERT_FALSE(want.empty()) << o.path << " has no build-id (or readelf is missing)";
    EXPECT_EQ(o.build_id, want) << o.path;
    if (o.path.find("libloom_runtime") != std::string::npos) runtime_lib = &o;
  }
  ASSERT_NE(runtime_lib, nullptr);
  // The object holding a function of the runtime library is that library.
  EXPECT_EQ(loaded_build_id(reinterpret_cast<const void*>(&loaded_build_id)), runtime_lib->build_id);
  EXPECT_EQ(loaded_build_id(nullptr), "");
}

}  // namespace
}  // namespace loom::runtime
