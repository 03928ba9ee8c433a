// loom.accel: the accelerator's config (read, modify, validate, save) and its analytical area
// model, from Python. loom.compile takes a Config (or a config file) for target='accel'.
#include <pybind11/stl.h>

#include <fstream>

#include "bindings.h"
#include "loom/accel/area_model.h"
#include "loom/accel/config.h"
#include "loom/runtime/error.h"

namespace loom::python {

accel::AccelConfig config_arg(const py::object& config, const std::string& what) {
  accel::AccelConfig c;
  if (config.is_none())
    c = accel::default_config();
  else if (py::isinstance<accel::AccelConfig>(config))
    c = config.cast<accel::AccelConfig>();
  else if (py::isinstance<py::str>(config) || py::hasattr(config, "__fspath__"))
    c = accel::AccelConfig::load(fspath(config));
  else
    LOOM_THROW(TypeError, what, " is a ", type_name(config), "; it takes a loom.accel.Config or a config file's path");
  c.validate();
  return c;
}

void register_accel(py::module_& m) {
  py::module_ a = m.def_submodule("accel", "The accelerator: its config and area model (docs/python.md).");
  using accel::AccelConfig;
  py::class_<AccelConfig> c(a, "Config",
                            "An accelerator config: the one source of truth for every size and width.\n"
                            "Config() is VTA's 1x16x16 int8 default; fields are read and set by name.");
  c.def(py::init([]() { return accel::default_config(); }))
      .def_static("load", &AccelConfig::load, py::arg("path"),
                  "load(path) -> Config: a config file, which must give every field.")
      .def_static(
          "from_json", [](const std::string& text) { return AccelConfig::from_json(text, "<python>"); },
          py::arg("text"), "from_json(text) -> Config: the default's fields overridden by the JSON object's.")
      .def("to_json", &AccelConfig::to_json)
      .def(
          "to_dict", [](const AccelConfig& x) { return py::module_::import("json").attr("loads")(x.to_json()); },
          "The fields as a dict (what a record of a sweep holds).")
      .def("validate", &AccelConfig::validate,
           "Checks the config is realizable (loom.ConfigError naming the field otherwise).")
      .def(
          "save",
          [](const AccelConfig& x, const std::string& path) {
            x.validate();
            std::ofstream f(path);
            if (!f) LOOM_THROW(RuntimeError, "Config.save: cannot write '", path, "'");
            f << x.to_json() << "\n";
          },
          py::arg("path"), "Writes the (validated) config as JSON; Config.load reads it.")
      .def(
          "area",
          [](const AccelConfig& x, const std::string& gemm_multipliers) {
            x.validate();
            accel::RtlOptions rtl;
            rtl.gemm = accel::parse_gemm_multipliers(gemm_multipliers);
            accel::AreaEstimate e = accel::estimate_area(x, rtl);
            py::dict d;
            d["lut"] = e.lut;
            d["ff"] = e.ff;
            d["dsp"] = e.dsp;
            d["bram36"] = e.bram36;
            return d;
          },
          py::arg("gemm_multipliers") = "auto",
          "area(gemm_multipliers='auto') -> {'lut', 'ff', 'dsp', 'bram36'}: the analytical area model's\n"
          "estimate on Xilinx 7-series parts (docs/perf_model.md gives its error against yosys); the GEMM\n"
          "core's multipliers as loom hw-params --gemm-multipliers builds them (auto, plain, dsp, lut).")
      .def("__eq__", &AccelConfig::operator==)
      .def("__repr__", [](const AccelConfig& x) {
        return "Config(" + x.name + ": " + std::to_string(x.batch) + "x" + std::to_string(x.block_in) + "x" +
               std::to_string(x.block_out) + ")";
      });
  c.def_readwrite("name", &AccelConfig::name);
#define LOOM_FIELD(f) c.def_readwrite(#f, &AccelConfig::f)
  LOOM_FIELD(batch);
  LOOM_FIELD(block_in);
  LOOM_FIELD(block_out);
  LOOM_FIELD(inp_bits);
  LOOM_FIELD(wgt_bits);
  LOOM_FIELD(acc_bits);
  LOOM_FIELD(out_bits);
  LOOM_FIELD(inp_buffer_bytes);
  LOOM_FIELD(wgt_buffer_bytes);
  LOOM_FIELD(acc_buffer_bytes);
  LOOM_FIELD(out_buffer_bytes);
  LOOM_FIELD(uop_buffer_bytes);
#undef LOOM_FIELD
}

}  // namespace loom::python
