#include <cstring>

#include "accel_emitter.h"
#include "loom/accel/packing.h"
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

}  // namespace

AccelModule::AccelModule(LoweredFunc func, accel::AccelConfig config)
    : func_(std::move(func)),
      config_(std::move(config)),
      sig_(signature_for(func_)),
      arg_bits_(accel_arg_bits(func_, config_)) {}

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
  const std::vector<int> bits = accel_arg_bits(func, linker.config());
  std::map<const BufferNode*, accel::DeviceBuffer> dram;
  std::map<const BufferNode*, int> dram_bits;
  for (size_t i = 0; i < func.args.size(); ++i) {
    dram[func.args[i].get()] = {linker.address(arg_offsets[i]), accel_arg_bytes(*func.args[i], bits[i])};
    dram_bits[func.args[i].get()] = bits[i];
  }
  accel_backend::Emitter(linker.driver(), dram, dram_bits, func.name).run(func.body);
  return linker.seal_stream(stream_name);
}

const CompiledAccelFunc& AccelModule::compiled() const {
  if (!compiled_) {
    accel::ImageLinker linker(config_);
    auto c = std::make_shared<CompiledAccelFunc>();
    for (size_t i = 0; i < func_.args.size(); ++i)
      c->arg_offsets.push_back(linker.reserve(accel_arg_bytes(*func_.args[i], arg_bits_[i])));
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
  for (size_t i = 0; i < args.size(); ++i) {
    const int bits = arg_bits_[i], container = args[i].dtype().bits();
    if (bits == container) {
      device.write(loaded.address(c.arg_offsets[i], args[i].nbytes()), args[i].raw_data(), args[i].nbytes());
      continue;
    }
    // Narrow elements in wider host containers: packed on the way in, checked to fit.
    std::vector<uint8_t> packed(accel_arg_bytes(*func_.args[i], bits));
    int64_t bad =
        accel::pack_from_container(args[i].raw_data(), container, size_t(args[i].numel()), bits, packed.data());
    if (bad >= 0)
      LOOM_THROW(TypeError, sig_.name, ": argument '", sig_.args[i].name, "' holds ", args[i].get_as_double(bad),
                 " at element ", bad, ", outside the ", bits, "-bit range config '", config_.name, "' moves it in (",
                 config_.precision(), ")");
    device.write(loaded.address(c.arg_offsets[i], packed.size()), packed.data(), packed.size());
  }
  loaded.run(0);
  AccelRunStats stats;
  stats.instructions = c.image.streams[0].count;
  stats.counters = device.counters();
  stats.cycles = device.cycles();
  for (size_t i = 0; i < args.size(); ++i) {
    const int bits = arg_bits_[i], container = args[i].dtype().bits();
    if (bits == container) {
      device.read(loaded.address(c.arg_offsets[i], args[i].nbytes()), args[i].raw_data(), args[i].nbytes());
      continue;
    }
    std::vector<uint8_t> packed(accel_arg_bytes(*func_.args[i], bits));
    device.read(loaded.address(c.arg_offsets[i], packed.size()), packed.data(), packed.size());
    accel::unpack_to_container(packed.data(), bits, size_t(args[i].numel()), container, args[i].raw_data());
  }
  return stats;
}

std::vector<accel::Instruction> decode_stream(const runtime::AccelImage& image, size_t stream,
                                              const accel::AccelConfig& config) {
  const runtime::AccelStream& s = image.streams.at(stream);
  accel::IsaLayout layout(config);
  std::vector<accel::Instruction> insns;
  for (uint32_t k = 0; k < s.count; ++k) {
    accel::InsnWord w;
    std::memcpy(w.data(), image.bytes.data() + s.insn_offset + 16 * k, 16);
    insns.push_back(accel::decode(w, layout, k));
  }
  return insns;
}

std::vector<accel::Instruction> AccelModule::instructions() const {
  return decode_stream(compiled().image, 0, config_);
}

std::string AccelModule::disassemble() const { return accel::disassemble(instructions()); }

}  // namespace loom::codegen
