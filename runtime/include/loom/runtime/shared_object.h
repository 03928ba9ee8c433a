// Loom's own modules, loaded at run time rather than linked (the LLVM CPU backend, the SystemC
// platform): a library that a process needs only for some of its work is loaded on that work's
// first use, from the folder of the library that asks for it, and stays loaded.
#pragma once
#include <string>

namespace loom::runtime {

// Loads `file` from the folder of the loaded object (executable or shared library) that holds
// `anchor` (one of the caller's functions), with RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE, and
// returns the address of its `symbol`; nullptr with the reason in `error` (no such object, the
// loader's message, or the missing symbol).
void* load_module_symbol(const void* anchor, const std::string& file, const char* symbol, std::string& error);

}  // namespace loom::runtime
