// In-process ELF linking with lld's library (when the build found liblld): the host's kernel
// libraries link without starting a linker process, whose start-up dominates a small link.
#pragma once

#include <string>
#include <vector>

namespace loom::codegen::llvm_backend {

struct InProcessLink {
  bool ran = false;  // false: no in-process linker (not built in, or unusable after a crash)
  bool ok = false;
  std::string log;  // lld's messages
};

// Links with lld's GNU driver; `args` as for ld.lld, without the program name. lld keeps global
// state, so links run one at a time.
InProcessLink link_in_process(const std::vector<std::string>& args);

}  // namespace loom::codegen::llvm_backend
