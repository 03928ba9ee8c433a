// The CPU a compiled model's kernels were built for, and whether this process can run them.
//
// A model compiled on one machine is often run on another: a board's Arm cores (loom compile
// --host-target aarch64-linux-gnu), or an x86 machine of another generation. The executor graph
// records the kernels' target triple and the instruction-set extensions they use
// (checked_cpu_features); before the kernel library is loaded the runtime compares them with this
// process, so that a mismatch is a message naming both instead of a loader error or SIGILL.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace loom::runtime {

// The architecture this runtime was compiled for, as a triple's first field ("x86_64",
// "aarch64", "arm").
const char* this_cpu_arch();

// The architecture an ELF object's header names ("x86_64", "aarch64", "arm", "i386", "riscv64",
// or "ELF machine N"); empty when the bytes are not an ELF file.
std::string elf_cpu_arch(std::string_view bytes);

// The architecture of a target triple ("armv7a-linux-gnueabihf" -> "arm", "arm64-..." ->
// "aarch64").
std::string triple_cpu_arch(std::string_view triple);

// The instruction-set extensions of architecture `arch` (this_cpu_arch's names) that compiled
// code may depend on and that are checked against the CPU at load time, by LLVM's feature names
// ("avx2", "avx512f", "avxvnni", "amx-int8"; "neon", "dotprod", "i8mm"; ...).
std::vector<std::string> checked_cpu_features(std::string_view arch);

// Which of `features` (names from checked_cpu_features) this CPU lacks; unknown names and
// features of another architecture are not reported.
std::vector<std::string> missing_cpu_features(const std::vector<std::string>& features);

// Throws ModelError naming `origin` unless a kernel library compiled for `triple` (empty: not
// recorded) using `features`, whose bytes are `library`, can run in this process.
void check_cpu_target(std::string_view library, const std::string& triple, const std::string& cpu,
                      const std::vector<std::string>& features, const std::string& origin);

}  // namespace loom::runtime
