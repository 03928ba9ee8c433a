#include <cstring>

#include "accel_emitter.h"
#include "loom/codegen/accel.h"
#include "loom/ir/functor.h"
#include "loom/ir/printer.h"

namespace loom::codegen {

using namespace loom::ir;

namespace {

runtime::FunctionSignature signature_for(const LoweredFunc& f) {
  runtime::FunctionSignature sig{f.name, {}};
  for (auto& b : f.args) {
    runtime::ArgSpec a{b->name, {}, b->dtype};
    for (auto& e : b->shape) {
      auto* c = as_const_int(e);
      if (!c)
        LOOM_THROW(CodegenError, "accelerator backend, function '", f.name, "': argument '", b->name,
                   "' has a non-constant shape");
      a.shape.push_back(*c);
    }
    sig.args.push_back(a);
  }
  return sig;
}

void check_args(const runtime::FunctionSignature& sig, const std::vector<NDArray>& args) {
  if (args.size() != sig.args.size())
    LOOM_THROW(ShapeError, sig.name, ": expects ", sig.args.size(), " arguments, got ", args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& want = sig.args[i];
    if (args[i].dtype() != want.dtype)
      LOOM_THROW(TypeError, sig.name, ": argument '", want.name, "' expects ", want.str(), ", got ",
                 args[i].describe());
    if (args[i].shape() != want.shape)
      LOOM_THROW(ShapeError, sig.name, ": argument '", want.name, "' expects ", want.str(), ", got ",
                 args[i].describe());
  }
}

uint64_t arg_bytes(const runtime::ArgSpec& a) {
  uint64_t n = uint64_t(a.dtype.bytes());
  for (auto d : a.shape) n *= uint64_t(d);
  return n;
}

}  // namespace

AccelModule::AccelModule(LoweredFunc func, accel::AccelConfig config)
    : func_(std::move(func)), config_(std::move(config)), sig_(signature_for(func_)) {}

AccelModule build_accel(const LoweredFunc& func, const accel::AccelConfig& config) {
  config.validate();
  // Constructs the backend cannot run are reported now, not half-way through a run.
  class Check : public IRVisitor {
   public:
    explicit Check(const std::string& n) : name(n) {}
    std::string name;
    void visit_for(const ForNode* op) override {
      if (op->for_kind == ForKind::Parallel || op->for_kind == ForKind::ThreadBinding)
        LOOM_THROW(CodegenError, "accelerator backend, function '", name, "': loop '", op->var.name(), "' is ",
                   to_string(op->for_kind), "; accelerator host loops must be serial, unrolled or virtual threads");
      IRVisitor::visit_for(op);
    }
    void visit_allocate(const AllocateNode* op) override {
      const std::string& s = op->buffer->scope;
      if (s != scope::kAccInput && s != scope::kAccWeight && s != scope::kAccAccum)
        LOOM_THROW(CodegenError, "accelerator backend, function '", name, "': allocation '", op->buffer->name,
                   "' in scope '", s, "' (only acc.inp, acc.wgt, acc.acc); run host stages with the CPU backend");
      IRVisitor::visit_allocate(op);
    }
  } check(func.name);
  check.visit(func.body);
  return AccelModule(func, config);
}

size_t emit_accel(const LoweredFunc& func, accel::ImageLinker& linker, const std::vector<uint64_t>& arg_offsets,
                  const std::string& stream_name) {
  if (arg_offsets.size() != func.args.size())
    LOOM_THROW(InternalError, "emit_accel '", func.name, "': ", arg_offsets.size(), " argument offsets for ",
               func.args.size(), " arguments");
  std::map<const BufferNode*, accel::DeviceBuffer> dram;
  for (size_t i = 0; i < func.args.size(); ++i) {
    uint64_t bytes = uint64_t(func.args[i]->dtype.bytes());
    for (auto& e : func.args[i]->shape) bytes *= uint64_t(*as_const_int(e));
    dram[func.args[i].get()] = {linker.address(arg_offsets[i]), bytes};
  }
  accel_backend::Emitter(linker.driver(), dram, func.name).run(func.body);
  return linker.seal_stream(stream_name);
}

const CompiledAccelFunc& AccelModule::compiled() const {
  if (!compiled_) {
    accel::ImageLinker linker(config_);
    auto c = std::make_shared<CompiledAccelFunc>();
    for (auto& a : sig_.args) c->arg_offsets.push_back(linker.reserve(arg_bytes(a)));
    emit_accel(func_, linker, c->arg_offsets, func_.name);
    c->image = linker.finish();
    compiled_ = std::move(c);
  }
  return *compiled_;
}

AccelRunStats AccelModule::run(AccelDevice& device, const std::vector<NDArray>& args) const {
  check_args(sig_, args);
  const CompiledAccelFunc& c = compiled();
  runtime::LoadedAccelImage loaded(device, c.image);
  for (size_t i = 0; i < args.size(); ++i)
    device.write(loaded.address(c.arg_offsets[i], args[i].nbytes()), args[i].raw_data(), args[i].nbytes());
  loaded.run(0);
  AccelRunStats stats;
  stats.instructions = c.image.streams[0].count;
  stats.counters = device.counters();
  stats.cycles = device.cycles();
  for (size_t i = 0; i < args.size(); ++i)
    device.read(loaded.address(c.arg_offsets[i], args[i].nbytes()), args[i].raw_data(), args[i].nbytes());
  return stats;
}

std::vector<accel::Instruction> AccelModule::instructions() const {
  const CompiledAccelFunc& c = compiled();
  const runtime::AccelStream& s = c.image.streams[0];
  accel::IsaLayout layout(config_);
  std::vector<accel::Instruction> insns;
  for (uint32_t k = 0; k < s.count; ++k) {
    accel::InsnWord w;
    std::memcpy(w.data(), c.image.bytes.data() + s.insn_offset + 16 * k, 16);
    insns.push_back(accel::decode(w, layout, k));
  }
  return insns;
}

std::string AccelModule::disassemble() const { return accel::disassemble(instructions()); }

}  // namespace loom::codegen
