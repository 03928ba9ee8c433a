// lld as a library: lld::lldMain with the ELF driver only, serialized by a mutex, its output
// captured for the caller's diagnostic.
#include "lld_link.h"

#include <mutex>

#ifdef LOOM_HAVE_LLD
#include <lld/Common/Driver.h>
#include <llvm/Support/raw_ostream.h>

LLD_HAS_DRIVER(elf)
#endif

namespace loom::codegen::llvm_backend {

InProcessLink link_in_process(const std::vector<std::string>& args) {
  InProcessLink result;
#ifdef LOOM_HAVE_LLD
  static std::mutex lock;
  static bool usable = true;  // lld cannot run again after a fatal error it recovered from
  std::lock_guard<std::mutex> guard(lock);
  if (!usable) return result;
  std::vector<const char*> argv{"ld.lld"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  llvm::raw_string_ostream messages(result.log);  // unbuffered: both of lld's streams into one log
  const lld::Result r = lld::lldMain(argv, messages, messages, {{lld::Gnu, &lld::elf::link}});
  usable = r.canRunAgain;
  result.ran = true;
  result.ok = r.retCode == 0;
#else
  (void)args;
#endif
  return result;
}

}  // namespace loom::codegen::llvm_backend
