#include "loom/runtime/shared_object.h"

#include <dlfcn.h>

#include <filesystem>

namespace loom::runtime {

void make_symbols_global(const void* anchor) {
  Dl_info self{};
  // RTLD_NOLOAD: only a library loaded already, its flags promoted (never a second copy).
  if (dladdr(anchor, &self) && self.dli_fname) dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
}

void* load_module_symbol(const void* anchor, const std::string& file, const char* symbol, std::string& error) {
  Dl_info self{};
  if (!dladdr(anchor, &self) || !self.dli_fname) {
    error = "cannot find the folder of the library that loads " + file;
    return nullptr;
  }
  const std::string path = (std::filesystem::path(self.dli_fname).parent_path() / file).string();
  make_symbols_global(anchor);  // the module's references into the library that loads it
  // Never unloaded: what the module made (JIT-compiled code, a simulation kernel) lives until the
  // process ends.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    const char* e = dlerror();
    error = "cannot load " + path + " (" + (e ? e : "unknown error") + ")";
    return nullptr;
  }
  void* address = dlsym(lib, symbol);
  if (!address) error = path + " lacks " + symbol;
  return address;
}

void* open_shared_object(const std::vector<std::string>& candidates, std::string& error) {
  error.clear();
  for (const std::string& c : candidates) {
    if (void* object = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) return object;
    const char* e = dlerror();
    error += (error.empty() ? "" : "; ") + (e ? std::string(e) : c + ": unknown error");
  }
  return nullptr;
}

void* find_symbol(void* object, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (void* address = dlsym(object, n)) return address;
  return nullptr;
}

}  // namespace loom::runtime
