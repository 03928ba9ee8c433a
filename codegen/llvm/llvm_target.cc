#include "llvm_target.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "codegen_llvm.h"
#include "loom/runtime/cpu_target.h"
#include "loom/runtime/error.h"

namespace loom::codegen::llvm_backend {

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

// Every target LLVM was built with (Debian's libLLVM has them all), for cross-compilation.
static void initialize_all_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
}

// Another architecture or another operating system than the host's (the vendor field does not
// matter: "x86_64-linux-gnu" is this host on Debian).
bool is_cross(const LLVMOptions& options) {
  if (options.target_triple.empty()) return false;
  llvm::Triple want(llvm::Triple::normalize(options.target_triple)), host(llvm::sys::getProcessTriple());
  return want.getArch() != host.getArch() || want.getOS() != host.getOS();
}

TargetChoice choose_target(const LLVMOptions& options) {
  initialize_llvm();
  TargetChoice t;
  t.triple = llvm::sys::getProcessTriple();
  if (is_cross(options)) {
    initialize_all_targets();
    // Another architecture: the CPU of the boards Loom targets unless one is named (never the
    // host's features): Zynq UltraScale+'s Cortex-A53, Zynq-7000's Cortex-A9 (NEON, which
    // armv7-a's generic CPU lacks).
    t.triple = llvm::Triple::normalize(options.target_triple);
    const llvm::Triple triple(t.triple);
    t.cpu = !options.target_cpu.empty() ? options.target_cpu
            : triple.isAArch64()        ? "cortex-a53"
            : triple.isARM()            ? "cortex-a9"
                                        : "generic";
    t.features = options.target_features;
    // LLVM's Cortex-A9 leaves NEON out (some parts lack it); Zynq-7000's has it.
    if (triple.isARM() && options.target_cpu.empty() && options.target_features.empty()) t.features = "+neon";
    return t;
  }
  if (options.target_cpu.empty()) {
    t.cpu = llvm::sys::getHostCPUName().str();
    // The CPU name alone can claim features the machine (or VM) lacks, or miss some: use what the
    // host reports.
    llvm::SubtargetFeatures features;
    for (auto& f : llvm::sys::getHostCPUFeatures()) features.AddFeature(f.getKey(), f.getValue());
    t.features = features.getString();
  } else {
    t.cpu = options.target_cpu;
  }
  if (!options.target_features.empty()) t.features = options.target_features;
  return t;
}

}  // namespace loom::codegen::llvm_backend

namespace loom::codegen {

TargetInfo target_info(const LLVMOptions& options) {
  llvm_backend::TargetChoice t = llvm_backend::choose_target(options);
  TargetInfo info;
  info.triple = t.triple;
  info.cpu = t.cpu;
  info.features = t.features;
  // The subtarget LLVM would compile for (a CPU name alone implies its feature set).
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) LOOM_THROW(CodegenError, "no LLVM target for '", t.triple, "': ", err);
  // An unknown CPU name is an error here (LLVM would only print a warning and ignore it).
  if (std::unique_ptr<llvm::MCSubtargetInfo> plain(target->createMCSubtargetInfo(t.triple, "", ""));
      plain && !t.cpu.empty() && !plain->isCPUStringValid(t.cpu))
    LOOM_THROW(CodegenError, "'", t.cpu, "' is not a CPU LLVM knows for ", t.triple,
               " (for example: x86-64-v3, znver4, sapphirerapids; cortex-a53, cortex-a72, neoverse-n1; cortex-a9)");
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(t.triple, t.cpu, t.features));
  auto has = [&](const std::string& f) { return sti && sti->checkFeatures("+" + f); };
  const llvm::Triple triple(t.triple);
  if (triple.isAArch64()) {
    info.vector_bits = 128;  // NEON (SVE's scalable vectors are not used)
    info.vector_registers = 32;
  } else if (!triple.isX86()) {
    info.vector_bits = 128;  // 32-bit Arm's NEON: 16 quad registers (no NEON: the code is scalar)
  } else if (has("avx512f")) {
    info.vector_bits = 512;
    info.vector_registers = 32;
  } else if (has("avx2") || has("avx")) {
    info.vector_bits = 256;
  }
  if (options.vector_width > 0 && options.vector_width < info.vector_bits) info.vector_bits = options.vector_width;
  for (const std::string& f : runtime::checked_cpu_features(runtime::triple_cpu_arch(t.triple)))
    if (has(f)) info.isa_features.push_back(f);
  // As the backend decides it (CodeGenLLVM::has_vnni).
  info.int8_dot =
      triple.isX86() &&
      (info.vector_bits == 512 ? has("avx512vnni") : (has("avx512vnni") && has("avx512vl")) || has("avxvnni"));
  return info;
}

}  // namespace loom::codegen

namespace loom::codegen::llvm_backend {

llvm::CodeGenOptLevel codegen_opt_level(int opt_level) {
  switch (opt_level) {
    case 0:
      return llvm::CodeGenOptLevel::None;
    case 1:
      return llvm::CodeGenOptLevel::Less;
    case 2:
      return llvm::CodeGenOptLevel::Default;
    default:
      return llvm::CodeGenOptLevel::Aggressive;
  }
}

const char* to_string(CodeFor f) {
  return f == CodeFor::Jit ? "jit" : f == CodeFor::SharedLibrary ? "shared library" : "text";
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const TargetChoice& target, const LLVMOptions& options,
                                                         CodeFor code_for) {
  initialize_llvm();
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!t) LOOM_THROW(CodegenError, "llvm codegen: no target for triple '", target.triple, "': ", error);
  llvm::TargetOptions to;
  // Loom's float semantics are IEEE without fast-math, but fusing a*b+c into an FMA is allowed
  // (as C compilers do with -ffp-contract=fast): GEMM needs it.
  to.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  const bool pic = code_for != CodeFor::Text;
  std::optional<llvm::CodeModel::Model> code_model;
  if (code_for == CodeFor::Jit) code_model = llvm::CodeModel::Small;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      target.triple, target.cpu, target.features, to, pic ? llvm::Reloc::PIC_ : llvm::Reloc::Static, code_model,
      codegen_opt_level(options.opt_level), /*JIT=*/code_for != CodeFor::SharedLibrary));
  if (!tm) LOOM_THROW(CodegenError, "llvm codegen: cannot create a target machine for CPU '", target.cpu, "'");
  return tm;
}

llvm::TargetMachine& target_machine_for(const TargetChoice& target, const LLVMOptions& options, CodeFor code_for) {
  thread_local std::map<std::string, std::unique_ptr<llvm::TargetMachine>> machines;
  const std::string key = target.triple + "|" + target.cpu + "|" + target.features + "|" +
                          std::to_string(int(codegen_opt_level(options.opt_level))) + "|" + to_string(code_for);
  std::unique_ptr<llvm::TargetMachine>& tm = machines[key];
  if (!tm) tm = make_target_machine(target, options, code_for);
  return *tm;
}

int vector_width_for(const llvm::TargetMachine& tm, const LLVMOptions& options) {
  if (options.vector_width > 0) return options.vector_width;
  // The subtarget knows what the CPU name implies and what the feature string adds or removes.
  const llvm::MCSubtargetInfo* sti = tm.getMCSubtargetInfo();
  return sti && tm.getTargetTriple().isX86() && sti->checkFeatures("+avx512f") ? 512 : 0;
}

std::string module_names(const std::vector<ir::LoweredFunc>& funcs) {
  std::string s;
  for (auto& f : funcs) s += (s.empty() ? "" : ", ") + f.name;
  return s;
}

static void optimize(llvm::Module& m, llvm::TargetMachine& tm, int opt_level) {
  if (opt_level <= 0) return;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = opt_level >= 2;
  pto.SLPVectorization = opt_level >= 2;
  pto.LoopUnrolling = true;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level == 1   ? llvm::OptimizationLevel::O1
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O3;
  pb.buildPerModuleDefaultPipeline(level).run(m, mam);
}

static std::unique_ptr<llvm::Module> new_module(const std::string& name, llvm::LLVMContext& ctx,
                                                llvm::TargetMachine& tm) {
  auto m = std::make_unique<llvm::Module>(name, ctx);
  m->setTargetTriple(tm.getTargetTriple().str());
  m->setDataLayout(tm.createDataLayout());
  return m;
}

static void verify(const llvm::Module& m, const std::string& what) {
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(m, &es))
    LOOM_THROW(CodegenError, "llvm codegen: invalid LLVM IR generated for ", what, " (a Loom bug): ", es.str());
}

std::unique_ptr<llvm::Module> translate_module(const std::vector<ir::LoweredFunc>& funcs, llvm::LLVMContext& ctx,
                                               llvm::TargetMachine& tm, const LLVMOptions& options, bool metadata) {
  auto m = new_module(funcs.size() == 1 ? funcs[0].name : "loom_module", ctx, tm);
  CodeGenLLVM cg(*m, tm, vector_width_for(tm, options));
  std::vector<runtime::FunctionSignature> sigs;
  for (auto& f : funcs) {
    cg.add_function(f);
    sigs.push_back(signature_of(f));
  }
  if (metadata) cg.add_metadata(runtime::signatures_to_json(sigs));
  verify(*m, module_names(funcs));
  return m;
}

std::unique_ptr<llvm::Module> translate_kernel(const ir::LoweredFunc& f, const std::string& symbol,
                                               llvm::LLVMContext& ctx, llvm::TargetMachine& tm,
                                               const LLVMOptions& options) {
  auto m = new_module(symbol, ctx, tm);
  CodeGenLLVM cg(*m, tm, vector_width_for(tm, options));
  cg.add_function(f, symbol);
  verify(*m, f.name);
  return m;
}

std::unique_ptr<llvm::Module> translate_forwarders(const std::vector<ir::LoweredFunc>& funcs,
                                                   const std::vector<std::string>& targets, llvm::LLVMContext& ctx,
                                                   llvm::TargetMachine& tm, const LLVMOptions& options, bool metadata) {
  auto m = new_module("loom_entries", ctx, tm);
  CodeGenLLVM cg(*m, tm, vector_width_for(tm, options));
  std::vector<runtime::FunctionSignature> sigs;
  for (size_t i = 0; i < funcs.size(); ++i) {
    cg.add_forwarder(funcs[i].name, targets[i]);
    sigs.push_back(signature_of(funcs[i]));
  }
  if (metadata) cg.add_metadata(runtime::signatures_to_json(sigs));
  verify(*m, "the entries of " + module_names(funcs));
  return m;
}

void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, const LLVMOptions& options) {
  optimize(m, tm, options.opt_level);
  if (!options.dump_ir_path.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    m.print(os, nullptr);
    std::ofstream out(options.dump_ir_path);
    if (!out) LOOM_THROW(CodegenError, "llvm codegen: cannot write LLVM IR to '", options.dump_ir_path, "'");
    out << os.str();
  }
  if (!options.dump_asm_path.empty()) {
    auto clone = llvm::CloneModule(m);
    std::ofstream out(options.dump_asm_path);
    if (!out) LOOM_THROW(CodegenError, "llvm codegen: cannot write assembly to '", options.dump_asm_path, "'");
    out << emit_machine_code(*clone, tm, /*assembly=*/true);
  }
}

std::unique_ptr<llvm::Module> compile_module(const std::vector<ir::LoweredFunc>& funcs, llvm::LLVMContext& ctx,
                                             llvm::TargetMachine& tm, const LLVMOptions& options, bool metadata) {
  auto m = translate_module(funcs, ctx, tm, options, metadata);
  optimize_module(*m, tm, options);
  return m;
}

std::string emit_machine_code(llvm::Module& module, llvm::TargetMachine& tm, bool assembly) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr,
                             assembly ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile))
    LOOM_THROW(CodegenError, "llvm codegen: the target cannot emit ", assembly ? "assembly" : "object files");
  pm.run(module);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace loom::codegen::llvm_backend
