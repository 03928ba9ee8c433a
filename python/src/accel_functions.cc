// Functions built for the accelerator from Python, as VTA's tutorials build them: a schedule that
// copies operands into the scratchpads (cache_read to loom.accel.SCOPE_INPUT/WEIGHT, pragma
// dma_copy), tensorizes the block product onto loom.accel.gemm_intrin(config), runs element-wise
// stages on the ALU in the accumulator scope (pragma alu) and splits contexts over virtual
// threads; loom.build(s, args, target='accel', config=c) compiles it (codegen/accel.h) into a
// loom.accel.Function that runs on any loom.accel.Device of that config.
#include "accel_functions.h"

#include <pybind11/stl.h>

#include "loom/ir/buffer.h"
#include "loom/ops/accel_target.h"
#include "te.h"

namespace loom::python {

AccelFunction::AccelFunction(codegen::AccelModule module, accel::AccelConfig config, std::vector<bool> is_output)
    : module_(std::move(module)), config_(std::move(config)), is_output_(std::move(is_output)) {}

py::object AccelFunction::call(const py::args& args, const py::object& device) {
  const runtime::FunctionSignature& sig = module_.signature();
  Device* dev = nullptr;
  if (device.is_none()) {
    if (!own_device_) own_device_ = std::make_unique<Device>("fsim", config_, py::dict());
    dev = own_device_.get();
  } else if (py::isinstance<Device>(device)) {
    dev = &device.cast<Device&>();
    if (!(dev->config() == config_))
      LOOM_THROW(ConfigError, sig.name, ": the device's config '", dev->config().name,
                 "' is not the one the function was built for ('", config_.name, "')");
  } else {
    LOOM_THROW(TypeError, sig.name, ": device is a ", type_name(device), ", not a loom.accel.Device");
  }
  CopiedCall call(sig.name, sig.args, is_output_, args);
  codegen::AccelRunStats stats = dev->run(sig.name, [&](AccelDevice& d) { return module_.run(d, call.arrays()); });
  py::dict s;
  s["instructions"] = stats.instructions;
  s["cycles"] = stats.cycles;
  s["counters"] = stats.counters;
  s["device"] = dev->backend();
  stats_ = s;
  return call.finish();
}

py::object build_accel_function(const Lowered& lowered, const py::object& config) {
  if (lowered.target == "cuda")
    LOOM_THROW(ConfigError, "build: '", lowered.func.name, "' was lowered for cuda, not the accelerator");
  accel::AccelConfig c = config_arg(config, "build: config");
  std::optional<codegen::AccelModule> m;
  {
    py::gil_scoped_release released;
    m.emplace(codegen::build_accel(lowered.func, c));
    m->compiled();  // the stream is emitted now: an error is build's, not the first call's
  }
  return py::cast(AccelFunction(std::move(*m), c, lowered.is_output));
}

void register_accel_functions(py::module_& m) {
  py::module_ a = m.attr("accel").cast<py::module_>();
  a.attr("SCOPE_INPUT") = ir::scope::kAccInput;
  a.attr("SCOPE_WEIGHT") = ir::scope::kAccWeight;
  a.attr("SCOPE_ACCUM") = ir::scope::kAccAccum;
  a.def(
      "gemm_intrin",
      [](const py::object& config) {
        return IntrinRef{ops::accel_gemm_intrin(ops::accel_target(config_arg(config, "gemm_intrin: config")).blocking)};
      },
      py::arg("config") = py::none(),
      "gemm_intrin(config=None) -> te.TensorIntrin: the accelerator's GEMM block, out[b, o] +=\n"
      "int32(inp[b, k]) * int32(wgt[o, k]) over batch x block_in x block_out, for tensorize.");
  py::class_<AccelFunction>(a, "Function", "A function compiled for the accelerator: call it on arrays.")
      .def("__call__", &AccelFunction::call, py::arg("device") = py::none(),
           "f(*arrays, device=None): inputs then outputs (written), or the inputs alone (the outputs are\n"
           "returned); runs on `device` (a loom.accel.Device of the function's config) or on an fsim\n"
           "device the function keeps.")
      .def_property_readonly("name", [](const AccelFunction& f) { return f.module().name(); })
      .def_property_readonly("config", &AccelFunction::config)
      .def_property_readonly(
          "args",
          [](const AccelFunction& f) {
            py::list out;
            for (const auto& s : f.module().signature().args) out.append(arg_spec_record(s));
            return out;
          },
          "The arguments: a list of {'name', 'shape', 'dtype'}.")
      .def_property_readonly("instruction_count",
                             [](const AccelFunction& f) { return f.module().compiled().image.streams[0].count; })
      .def("disassemble", [](const AccelFunction& f) { return f.module().disassemble(); })
      .def_property_readonly("stats", &AccelFunction::stats,
                             "The last call's {'instructions', 'cycles', 'counters', 'device'} (None before one).");
}

}  // namespace loom::python
