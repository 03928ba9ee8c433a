// Shared objects loaded at run time rather than linked, so that a process needing them only for
// some of its work loads them on that work's first use: Loom's own modules (the LLVM CPU backend,
// the SystemC platform), from the folder of the library that asks for them, and optional system
// libraries (NVRTC, XGBoost, the CUDA driver) by path or soname.
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

namespace loom::runtime {

// Loads `file` from the folder of the loaded object (executable or shared library) that holds
// `anchor` (one of the caller's functions), with RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE, and
// returns the address of its `symbol`; nullptr with the reason in `error` (no such object, the
// loader's message, or the missing symbol).
void* load_module_symbol(const void* anchor, const std::string& file, const char* symbol, std::string& error);
// Puts the loaded library that holds `anchor` into the global symbol scope, so that objects loaded
// later resolve their references to it; it is not there when a host loaded it with RTLD_LOCAL
// (Python imports its extension modules so). A no-op where it is there already.
void make_symbols_global(const void* anchor);

// The first of `candidates` (paths, or sonames on the loader's search path) that loads, with
// RTLD_NOW | RTLD_LOCAL, never closed; nullptr when none does, with each candidate's failure in
// `error` ("; " between them).
void* open_shared_object(const std::vector<std::string>& candidates, std::string& error);

// The address of the first of `names` that `object` defines; nullptr when it defines none.
void* find_symbol(void* object, std::initializer_list<const char*> names);

// Binds the function pointer `fn` to the first of `names` that `object` defines; false when it
// defines none, with the first name in `missing`.
template <typename Fn>
bool bind_symbol(void* object, Fn& fn, std::initializer_list<const char*> names, std::string& missing) {
  fn = reinterpret_cast<Fn>(find_symbol(object, names));
  if (!fn) missing = *names.begin();
  return fn != nullptr;
}

}  // namespace loom::runtime
