// The check of a kernel library's CPU target against this process (cpu_target.h): the ELF
// header for the architecture, CPUID (x86) or the auxiliary vector (Arm) for the extensions.
#include "loom/runtime/cpu_target.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "loom/runtime/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) || defined(__arm__)
#include <sys/auxv.h>
#endif

namespace loom::runtime {

namespace {

// One checkable extension: its architecture and LLVM's name (has_feature asks this CPU).
struct Feature {
  const char* arch;
  const char* name;
};

constexpr Feature kFeatures[] = {
    {"x86_64", "sse3"},       {"x86_64", "ssse3"},      {"x86_64", "sse4.1"},     {"x86_64", "sse4.2"},
    {"x86_64", "avx"},        {"x86_64", "avx2"},       {"x86_64", "fma"},        {"x86_64", "f16c"},
    {"x86_64", "avx512f"},    {"x86_64", "avx512dq"},   {"x86_64", "avx512cd"},   {"x86_64", "avx512bw"},
    {"x86_64", "avx512vl"},   {"x86_64", "avx512vbmi"}, {"x86_64", "avx512vnni"}, {"x86_64", "avx512bf16"},
    {"x86_64", "avx512fp16"}, {"x86_64", "avxvnni"},    {"x86_64", "amx-tile"},   {"x86_64", "amx-int8"},
    {"x86_64", "amx-bf16"},   {"aarch64", "neon"},      {"aarch64", "fullfp16"},  {"aarch64", "dotprod"},
    {"aarch64", "i8mm"},      {"aarch64", "sve"},       {"arm", "neon"},          {"arm", "vfp4"},
};

#if defined(__x86_64__)
struct Cpuid {
  unsigned a = 0, b = 0, c = 0, d = 0;
};
Cpuid cpuid(unsigned leaf, unsigned sub) {
  Cpuid r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) return {};
  return r;
}
// The register state the operating system saves (XCR0): without it the instructions fault.
uint64_t os_saved_state() {
  if (!(cpuid(1, 0).c & (1u << 27))) return 0;  // no OSXSAVE
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}
bool has_feature(std::string_view f) {
  static const Cpuid l1 = cpuid(1, 0), l7 = cpuid(7, 0), l71 = cpuid(7, 1);
  static const uint64_t xcr0 = os_saved_state();
  const bool avx_state = (xcr0 & 0x6) == 0x6, avx512_state = avx_state && (xcr0 & 0xe0) == 0xe0;
  const bool amx_state = (xcr0 & 0x60000) == 0x60000;
  auto bit = [](unsigned reg, int b) { return ((reg >> b) & 1u) != 0; };
  if (f == "sse3") return bit(l1.c, 0);
  if (f == "ssse3") return bit(l1.c, 9);
  if (f == "sse4.1") return bit(l1.c, 19);
  if (f == "sse4.2") return bit(l1.c, 20);
  if (f == "avx") return avx_state && bit(l1.c, 28);
  if (f == "fma") return avx_state && bit(l1.c, 12);
  if (f == "f16c") return avx_state && bit(l1.c, 29);
  if (f == "avx2") return avx_state && bit(l7.b, 5);
  if (f == "avxvnni") return avx_state && bit(l71.a, 4);
  if (f == "avx512f") return avx512_state && bit(l7.b, 16);
  if (f == "avx512dq") return avx512_state && bit(l7.b, 17);
  if (f == "avx512cd") return avx512_state && bit(l7.b, 28);
  if (f == "avx512bw") return avx512_state && bit(l7.b, 30);
  if (f == "avx512vl") return avx512_state && bit(l7.b, 31);
  if (f == "avx512vbmi") return avx512_state && bit(l7.c, 1);
  if (f == "avx512vnni") return avx512_state && bit(l7.c, 11);
  if (f == "avx512fp16") return avx512_state && bit(l7.d, 23);
  if (f == "avx512bf16") return avx512_state && bit(l71.a, 5);
  if (f == "amx-bf16") return amx_state && bit(l7.d, 22);
  if (f == "amx-tile") return amx_state && bit(l7.d, 24);
  if (f == "amx-int8") return amx_state && bit(l7.d, 25);
  return true;
}
#elif defined(__aarch64__)
bool has_feature(std::string_view f) {
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  if (f == "neon") return hw & (1ul << 1);       // HWCAP_ASIMD
  if (f == "fullfp16") return hw & (1ul << 10);  // HWCAP_ASIMDHP
  if (f == "dotprod") return hw & (1ul << 20);   // HWCAP_ASIMDDP
  if (f == "sve") return hw & (1ul << 22);       // HWCAP_SVE
  if (f == "i8mm") return hw2 & (1ul << 13);     // HWCAP2_I8MM
  return true;
}
#elif defined(__arm__)
bool has_feature(std::string_view f) {
  const unsigned long hw = getauxval(AT_HWCAP);
  if (f == "neon") return hw & (1ul << 12);  // HWCAP_NEON
  if (f == "vfp4") return hw & (1ul << 16);  // HWCAP_VFPv4
  return true;
}
#else
bool has_feature(std::string_view) { return true; }
#endif

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

const char* this_cpu_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__arm__)
  return "arm";
#elif defined(__i386__)
  return "i386";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "unknown";
#endif
}

std::string elf_cpu_arch(std::string_view bytes) {
  if (bytes.size() < 20 || bytes.substr(0, 4) != std::string_view("\177ELF", 4)) return "";
  const bool little = bytes[5] == 1;
  const auto b0 = uint8_t(bytes[18]), b1 = uint8_t(bytes[19]);
  const unsigned machine = little ? b0 | (b1 << 8) : (b0 << 8) | b1;
  switch (machine) {
    case 3:
      return "i386";
    case 40:
      return "arm";
    case 62:
      return "x86_64";
    case 183:
      return "aarch64";
    case 243:
      return bytes[4] == 2 ? "riscv64" : "riscv32";
    default:
      return "ELF machine " + std::to_string(machine);
  }
}

std::string triple_cpu_arch(std::string_view triple) {
  const std::string_view arch = triple.substr(0, triple.find('-'));
  if (arch == "aarch64" || arch == "arm64") return "aarch64";
  if (arch.substr(0, 3) == "arm" || arch.substr(0, 5) == "thumb") return "arm";
  if (arch == "x86_64" || arch == "amd64") return "x86_64";
  if (arch.size() == 4 && arch[0] == 'i' && arch.substr(2) == "86") return "i386";
  return std::string(arch);
}

std::vector<std::string> checked_cpu_features(std::string_view arch) {
  std::vector<std::string> names;
  for (const Feature& f : kFeatures)
    if (arch == f.arch) names.push_back(f.name);
  return names;
}

std::vector<std::string> missing_cpu_features(const std::vector<std::string>& features) {
  const std::vector<std::string> known = checked_cpu_features(this_cpu_arch());
  std::vector<std::string> missing;
  for (const std::string& f : features)
    if (std::find(known.begin(), known.end(), f) != known.end() && !has_feature(f)) missing.push_back(f);
  return missing;
}

void check_cpu_target(std::string_view library, const std::string& triple, const std::string& cpu,
                      const std::vector<std::string>& features, const std::string& origin) {
  const std::string here = this_cpu_arch();
  const std::string built = elf_cpu_arch(library);
  const std::string recorded = triple.empty() ? built : triple_cpu_arch(triple);
  std::string what = triple.empty() ? built : triple;
  if (!cpu.empty()) what += ", cpu " + cpu;
  if (!built.empty() && !recorded.empty() && built != recorded)
    LOOM_THROW(ModelError, origin, ": the kernel library is ", built,
               " code, but the executor graph says it was compiled for ", triple,
               " (a corrupted or hand-assembled file)");
  if (built.empty() && !library.empty())
    LOOM_THROW(ModelError, origin, ": the kernel library is not an ELF shared object");
  if (!recorded.empty() && recorded != here)
    LOOM_THROW(
        ModelError, origin, ": its CPU kernels were compiled for ", what, ", and this runtime runs on ", here,
        ": run it on an ", recorded,
        " machine (with a runtime built for it, docs/cross.md), or compile the model again with --host-target for ",
        here);
  const std::vector<std::string> missing = missing_cpu_features(features);
  if (!missing.empty())
    LOOM_THROW(
        ModelError, origin, ": its CPU kernels were compiled for ", what, " and use ", join(missing),
        ", which this CPU lacks: compile the model again on this machine, or for a CPU without them (--host-cpu)");
}

}  // namespace loom::runtime
