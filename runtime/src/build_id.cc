#include "loom/runtime/build_id.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace loom::runtime {

namespace {

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : bytes) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

// The NT_GNU_BUILD_ID note of a loaded object, or "".
std::string build_id_of(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((n->n_namesz + 3) & ~3u);
      if (desc + n->n_descsz > end) break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0)
        return hex(std::string_view(desc, n->n_descsz));
      p = desc + ((n->n_descsz + 3) & ~3u);
    }
  }
  return "";
}

bool holds(const dl_phdr_info* info, uintptr_t address) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && address >= begin && address < begin + ph.p_memsz) return true;
  }
  return false;
}

std::string executable_path() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string("(this program)");
}

}  // namespace

std::string loaded_build_id(const void* address) {
  struct Search {
    uintptr_t address;
    std::string id;
  } search{reinterpret_cast<uintptr_t>(address), ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (!holds(info, s->address)) return 0;
        s->id = build_id_of(info);
        return 1;
      },
      &search);
  return search.id;
}

std::vector<LoadedObject> loaded_objects(const std::string& name_part) {
  struct Search {
    const std::string& part;
    std::vector<LoadedObject> found;
    int seen = 0;
  } search{name_part, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        std::string path = info->dlpi_name ? info->dlpi_name : "";
        bool program = s->seen++ == 0;  // the first object listed is the program itself
        if (program) path = executable_path();
        if (program || (!path.empty() && path.find(s->part) != std::string::npos))
          s->found.push_back({path, build_id_of(info)});
        return 0;
      },
      &search);
  std::sort(search.found.begin(), search.found.end(),
            [](const LoadedObject& a, const LoadedObject& b) { return a.path < b.path; });
  return search.found;
}

}  // namespace loom::runtime
