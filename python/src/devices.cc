// loom.accel's devices and programs from Python: a backend opened by name with its options (the
// backend's declaration checks them), its memory, registers, counters and per-instruction commit
// records; programs (accel/program.h) loaded, saved, run and compared between backends; and the
// performance model on an instruction stream on its own, with each instruction's timing.
#include "devices.h"

#include <pybind11/stl.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "accel_functions.h"
#include "loom/accel/examples.h"
#include "loom/accel/program.h"
#include "loom/runtime/rpc.h"
#include "loom/sim/commit_log.h"
#include "loom/sim/perf_model.h"
#include "te.h"

namespace loom::python {

namespace {

// A dict of options as JSON (paths as strings); `what` names it in errors.
nlohmann::json options_json(const py::dict& options, const std::string& what) {
  py::dict plain;
  for (auto [k, v] : options) {
    if (!py::isinstance<py::str>(k)) LOOM_THROW(TypeError, what, ": an option's name is a ", type_name(k));
    plain[k] = py::hasattr(v, "__fspath__") ? py::str(fspath(v)) : v;
  }
  std::string text;
  try {
    text = py::module_::import("json").attr("dumps")(plain).cast<std::string>();
  } catch (const py::error_already_set& e) {
    LOOM_THROW(TypeError, what, ": ", e.what());
  }
  return nlohmann::json::parse(text);
}

}  // namespace

Device::Device(std::string backend, accel::AccelConfig config, const py::dict& options)
    : backend_(std::move(backend)), config_(std::move(config)) {
  nlohmann::json j = nlohmann::json::parse(config_.to_json());
  if (!options.empty()) {
    if (rpc::is_url(backend_))
      LOOM_THROW(ConfigError, "loom.accel.Device('", backend_,
                 "'): a remote device's options belong to its server (`loom rpc-server`), not to the client");
    j[backend_] = options_json(options, "loom.accel.Device('" + backend_ + "')");
  }
  const std::string json = j.dump();
  py::gil_scoped_release released;  // an RTL or SystemC device takes a moment to build
  device_ = make_accel_device(backend_, json);
}

AccelDevice& Device::get(const std::string& what) {
  if (!device_) LOOM_THROW(DeviceError, what, ": the ", backend_, " device is closed");
  return *device_;
}

void Device::close() {
  py::gil_scoped_release released;
  std::lock_guard<std::mutex> turn(*busy_);
  device_.reset();
}

namespace {

py::dict commit_record(const sim::CommitRecord& r) {
  py::dict d;
  d["run"] = r.run;
  d["label"] = r.label;
  d["index"] = r.index;
  d["module"] = accel::to_string(r.module);
  d["opcode"] = accel::to_string(r.opcode);
  d["target"] = r.target;
  d["digest"] = r.digest;
  d["tokens"] = std::vector<uint32_t>(r.tokens.begin(), r.tokens.end());
  return d;
}

// The enumerator of E whose name is `name` (the inverse of to_string); TypeError naming `what`.
template <typename E>
E enum_named(const std::string& name, E count, const std::string& what) {
  for (uint32_t i = 0; i < uint32_t(count); ++i)
    if (name == accel::to_string(E(i))) return E(i);
  LOOM_THROW(TypeError, what, ": '", name, "' is not one");
}

// A record as commit_record wrote it, back (for first_divergence on records Python kept).
sim::CommitRecord commit_record(const py::handle& h, const std::string& what) {
  if (!py::isinstance<py::dict>(h)) LOOM_THROW(TypeError, what, " is a ", type_name(h), ", not a commit record");
  py::dict d = h.cast<py::dict>();
  for (const char* k : {"run", "index", "module", "opcode", "target", "digest"})
    if (!d.contains(k)) LOOM_THROW(TypeError, what, " has no '", k, "' (take_commits' records do)");
  sim::CommitRecord r;
  r.run = d["run"].cast<uint32_t>();
  r.label = d.contains("label") ? d["label"].cast<std::string>() : "";
  r.index = d["index"].cast<uint32_t>();
  r.module = enum_named(d["module"].cast<std::string>(), accel::Module(3), what + ": module");
  r.opcode = enum_named(d["opcode"].cast<std::string>(), accel::Opcode(5), what + ": opcode");
  r.target = d["target"].cast<std::string>();
  r.digest = d["digest"].cast<uint64_t>();
  if (d.contains("tokens")) {
    auto t = d["tokens"].cast<std::vector<uint32_t>>();
    for (size_t i = 0; i < std::min<size_t>(t.size(), 4); ++i) r.tokens[i] = t[i];
  }
  return r;
}

std::vector<sim::CommitRecord> commit_records(const py::iterable& list, const std::string& what) {
  std::vector<sim::CommitRecord> out;
  for (auto h : list) out.push_back(commit_record(h, what + " record " + std::to_string(out.size())));
  return out;
}

// A divergence as a dict: where, and each side's record (None: that side did not commit it).
py::dict divergence_record(const sim::Divergence& d, const std::string& a, const std::string& b) {
  py::dict r;
  r["run"] = d.run;
  r["index"] = d.index;
  r[py::str(a)] = d.a ? py::object(commit_record(*d.a)) : py::object(py::none());
  r[py::str(b)] = d.b ? py::object(commit_record(*d.b)) : py::object(py::none());
  return r;
}

py::list commit_records(const std::vector<sim::CommitRecord>& rs) {
  py::list out;
  for (const auto& r : rs) out.append(commit_record(r));
  return out;
}

py::dict program_result(const accel::ProgramResult& r) {
  py::dict d;
  d["counters"] = r.counters;
  d["cycles"] = r.cycles;
  d["mismatched_checks"] = r.mismatched_checks;
  d["report"] = r.report;
  return d;
}

// `count` bytes of a C-contiguous copy of `a`.
std::string array_bytes(const py::array& a) {
  py::array c = py::array::ensure(a, py::array::c_style);
  return std::string(static_cast<const char*>(c.data()), size_t(c.nbytes()));
}

// One instruction stream and the config it was built for: a Program's, or a function's built for
// the accelerator.
struct Stream {
  std::vector<accel::Instruction> insns;
  accel::AccelConfig config;
};

Stream stream_of(const py::object& what) {
  if (py::isinstance<accel::Program>(what)) {
    const auto& p = what.cast<const accel::Program&>();
    return {p.instructions(), p.config};
  }
  if (py::isinstance<AccelFunction>(what)) {
    const auto& f = what.cast<const AccelFunction&>();
    return {f.module().instructions(), f.config()};
  }
  LOOM_THROW(TypeError, "loom.accel.estimate_cycles: a ", type_name(what),
             " is neither a loom.accel.Program nor a function built for the accelerator");
}

py::dict per_module(const std::array<uint64_t, 3>& v) {
  py::dict d;
  d["load"] = v[0];
  d["compute"] = v[1];
  d["store"] = v[2];
  return d;
}

py::dict estimate(const py::object& what, bool timeline, const py::kwargs& params) {
  Stream s = stream_of(what);
  sim::PerfParams p = sim::PerfParams::from_json(options_json(params, "loom.accel.estimate_cycles").dump());
  if (!p.trace_path.empty())
    LOOM_THROW(ConfigError,
               "loom.accel.estimate_cycles: 'trace' is the perf device's (timeline=True gives the records)");
  std::vector<sim::InsnTiming> timings;
  sim::PerfEstimate e;
  {
    py::gil_scoped_release released;
    e = sim::estimate_cycles(s.insns, s.config, p, timeline ? &timings : nullptr);
  }
  py::dict d;
  d["cycles"] = e.cycles;
  d["instructions"] = s.insns.size();
  d["busy"] = per_module(e.busy);
  d["stall"] = per_module(e.stall);
  d["gemm_cycles"] = e.gemm_cycles;
  d["dram_busy_cycles"] = e.dram_busy_cycles;
  if (timeline) {
    py::list rows;
    for (size_t i = 0; i < s.insns.size(); ++i) {
      py::dict r;
      r["index"] = i;
      r["opcode"] = accel::to_string(s.insns[i].opcode);
      r["module"] = accel::to_string(s.insns[i].module());
      r["start"] = timings[i].start;
      r["end"] = timings[i].end;
      rows.append(r);
    }
    d["timeline"] = rows;
  }
  return d;
}

// Runs `program` on each backend with commit records on; the first divergence from the first
// backend's records, as `loom sim --compare` reports it.
py::dict compare(const accel::Program& program, const std::vector<std::string>& backends, const py::dict& options) {
  if (backends.size() < 2) LOOM_THROW(ConfigError, "loom.accel.compare: give two or more backends");
  for (auto [k, v] : options)
    if (std::find(backends.begin(), backends.end(), k.cast<std::string>()) == backends.end())
      LOOM_THROW(ConfigError, "loom.accel.compare: options for '", k.cast<std::string>(),
                 "', which is not one of the backends compared");
  std::vector<std::vector<sim::CommitRecord>> records(backends.size());
  std::vector<std::string> errors(backends.size());
  for (size_t i = 0; i < backends.size(); ++i) {
    py::dict opts = options.contains(backends[i]) ? options[py::str(backends[i])].cast<py::dict>() : py::dict();
    Device dev(backends[i], program.config, opts);
    records[i] = dev.run("loom.accel.compare", [&](AccelDevice& d) {
      return sim::run_recorded(
          &d, backends[i], [&] { accel::run_program(program, d); }, errors[i]);
    });
  }
  py::dict out, recs, errs;
  out["backends"] = backends;
  for (size_t i = 0; i < backends.size(); ++i) {
    recs[py::str(backends[i])] = commit_records(records[i]);
    errs[py::str(backends[i])] = errors[i].empty() ? py::object(py::none()) : py::object(py::str(errors[i]));
  }
  out["records"] = recs;
  out["errors"] = errs;
  py::list divergences;
  for (size_t i = 1; i < backends.size(); ++i) {
    auto d = sim::first_divergence(records[0], records[i]);
    if (!d) continue;
    py::dict r = divergence_record(*d, backends[0], backends[i]);
    r["backends"] = std::vector<std::string>{backends[0], backends[i]};
    divergences.append(r);
  }
  out["divergences"] = divergences;
  bool same_errors = true;
  for (const std::string& e : errors) same_errors &= e.empty() == errors[0].empty();
  out["same"] = divergences.empty() && same_errors;
  return out;
}

}  // namespace

void register_devices(py::module_& m) {
  py::module_ a = m.attr("accel").cast<py::module_>();
  py::class_<Device>(a, "Device",
                     "An accelerator device of one backend (fsim, perf, rtl, systemc, xrt, rpc://HOST:PORT/BACKEND),\n"
                     "opened for a config with the backend's options. Closed with close(), at the end of a with\n"
                     "block, or when the object goes.")
      .def(py::init([](const std::string& backend, const py::object& config, const py::kwargs& options) {
             return std::make_unique<Device>(backend, config_arg(config, "loom.accel.Device: config"), options);
           }),
           py::arg("backend") = "fsim", py::kw_only(), py::arg("config") = py::none(),
           "Device(backend='fsim', *, config=None, **options): options are the backend's (`loom sim --help`\n"
           "lists them: rtl's cycle_limit, fst, trace; perf's dram_latency, functional, trace; ...);\n"
           "loom.ConfigError names an unknown one or a value out of its range.")
      .def_property_readonly("backend", &Device::backend)
      .def_property_readonly("config", &Device::config)
      .def_property_readonly("closed", &Device::closed)
      .def_property_readonly("name", [](Device& d) { return d.get("Device.name").name(); })
      .def("close", &Device::close, "Frees the device and finishes the files it writes (timeline, waveform).")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](Device& d, const py::args&) { d.close(); })
      .def(
          "alloc",
          [](Device& d, uint64_t bytes, uint64_t alignment) { return d.get("Device.alloc").alloc(bytes, alignment); },
          py::arg("nbytes"), py::arg("alignment") = 64, "alloc(nbytes, alignment=64) -> int: a device address.")
      .def(
          "free", [](Device& d, uint64_t addr) { d.get("Device.free").free(addr); }, py::arg("addr"))
      .def(
          "write",
          [](Device& d, uint64_t addr, const py::array& data) {
            std::string bytes = array_bytes(data);
            d.get("Device.write").write(addr, bytes.data(), bytes.size());
          },
          py::arg("addr"), py::arg("data"), "write(addr, array): the array's bytes (row-major) at addr.")
      .def(
          "read",
          [](Device& d, uint64_t addr, const py::object& shape, const std::string& dtype) {
            DataType t = tensor_dtype(dtype, "Device.read: dtype");
            std::vector<int64_t> dims;
            for (const ir::Expr& e : shape_exprs(shape, "Device.read: shape")) {
              auto* c = ir::as_const_int(e);
              if (!c || *c < 0) LOOM_THROW(ShapeError, "Device.read: the shape must be non-negative integers");
              dims.push_back(*c);
            }
            NDArray out = NDArray::empty(dims, t);
            d.get("Device.read").read(addr, out.raw_data(), out.nbytes());
            return numpy_view(out);
          },
          py::arg("addr"), py::arg("shape"), py::arg("dtype") = "int8",
          "read(addr, shape, dtype='int8') -> ndarray: device memory at addr.")
      .def(
          "read_reg", [](Device& d, uint32_t offset) { return d.get("Device.read_reg").read_reg(offset); },
          py::arg("offset"))
      .def(
          "write_reg",
          [](Device& d, uint32_t offset, uint32_t value) { d.get("Device.write_reg").write_reg(offset, value); },
          py::arg("offset"), py::arg("value"))
      .def(
          "launch", [](Device& d, uint64_t addr, uint32_t count) { d.get("Device.launch").launch(addr, count); },
          py::arg("insn_addr"), py::arg("count"), "launch(insn_addr, count): starts a stream (wait() for its end).")
      .def(
          "wait",
          [](Device& d, double seconds) {
            if (!(seconds > 0)) LOOM_THROW(ConfigError, "Device.wait: timeout must be positive seconds");
            d.run("Device.wait", [&](AccelDevice& dev) {
              dev.wait(std::chrono::milliseconds(int64_t(seconds * 1000)));
              return 0;
            });
          },
          py::arg("timeout") = 60.0,
          "wait(timeout=60.0): until the run ends (loom.DeviceError naming the failing instruction, or the\n"
          "timeout); Ctrl-C stops waiting and closes the device.")
      .def_property_readonly("cycles", [](Device& d) { return d.get("Device.cycles").cycles(); })
      .def(
          "counters", [](Device& d) { return d.get("Device.counters").counters(); },
          "The last run's counters by name (instructions per kind, DMA bytes, MACs; busy and stall cycles\n"
          "on timed backends).")
      .def(
          "record_commits",
          [](Device& d, bool on) {
            sim::commit_log_of(&d.get("Device.record_commits"), d.backend()).record_commits(on);
          },
          py::arg("on") = true, "Per-instruction commit records from the next run on (fsim, rtl, systemc).")
      .def(
          "take_commits",
          [](Device& d) {
            return commit_records(sim::commit_log_of(&d.get("Device.take_commits"), d.backend()).take_commits());
          },
          "The commit records since the last take: one dict per instruction (run, label, index, module,\n"
          "opcode, target, digest, tokens).");

  py::class_<accel::Program>(a, "Program",
                             "A self-contained accelerator program: config, memory image, stream and expected\n"
                             "results (`loom accel-example` writes them, `loom sim` runs them).")
      .def_static(
          "load", [](const py::object& path) { return accel::Program::load(fspath(path)); }, py::arg("path"))
      .def(
          "save", [](const accel::Program& p, const py::object& path) { p.save(fspath(path)); }, py::arg("path"))
      .def_readonly("config", &accel::Program::config)
      .def_readonly("instruction_count", &accel::Program::insn_count)
      .def_property_readonly("checks", [](const accel::Program& p) { return p.checks.size(); })
      .def_readonly("instruction_address", &accel::Program::insn_addr)
      .def_property_readonly(
          "segments",
          [](const accel::Program& p) {
            py::list out;
            for (const auto& seg : p.segments) {
              py::dict d;
              d["addr"] = seg.addr;
              d["nbytes"] = seg.data.size();
              d["alignment"] = seg.alignment;
              out.append(d);
            }
            return out;
          },
          "Its memory image: [{'addr', 'nbytes', 'alignment'}] in allocation order.")
      .def(
          "read_segment",
          [](const accel::Program& p, size_t i) {
            if (i >= p.segments.size())
              LOOM_THROW(ShapeError, "Program.read_segment: ", i, " is not one of its ", p.segments.size(),
                         " segments");
            const auto& d = p.segments[i].data;
            return py::array_t<uint8_t>(py::ssize_t(d.size()), d.data());
          },
          py::arg("index"), "read_segment(index) -> uint8 array: a copy of the segment's bytes.")
      .def(
          "write_segment",
          [](accel::Program& p, size_t i, const py::array& data) {
            if (i >= p.segments.size())
              LOOM_THROW(ShapeError, "Program.write_segment: ", i, " is not one of its ", p.segments.size(),
                         " segments");
            std::string bytes = array_bytes(data);
            if (bytes.size() != p.segments[i].data.size())
              LOOM_THROW(ShapeError, "Program.write_segment: ", bytes.size(), " bytes for segment ", i, " of ",
                         p.segments[i].data.size());
            std::memcpy(p.segments[i].data.data(), bytes.data(), bytes.size());
          },
          py::arg("index"), py::arg("data"),
          "write_segment(index, data): new contents of the same size (inputs, or a planted fault); the\n"
          "stream is decoded again when the program runs.")
      .def(
          "disassemble", [](const accel::Program& p) { return accel::disassemble(p.instructions()); },
          "The instruction stream, one line per instruction.")
      .def(
          "run",
          [](const accel::Program& p, Device& d) {
            return program_result(d.run("Program.run", [&](AccelDevice& dev) { return accel::run_program(p, dev); }));
          },
          py::arg("device"),
          "run(device) -> {'counters', 'cycles', 'mismatched_checks', 'report'}: the program loaded at its\n"
          "addresses on a fresh device and its checks compared.");

  a.def("backends", &accel_backends, "The backends this build registers (fsim, perf, rtl, systemc, ...).");
  a.def(
      "matmul_program",
      [](int M, int N, int K, const py::object& config, uint64_t seed) {
        accel::AccelConfig c = config_arg(config, "matmul_program: config");
        for (auto [name, v, block] : {std::tuple{"M", M, c.batch}, {"N", N, c.block_out}, {"K", K, c.block_in}})
          if (v < 1 || v % block)
            LOOM_THROW(ShapeError, "matmul_program: ", name, " = ", v, " is not a positive multiple of ", block);
        auto dev = make_accel_device("fsim", c.to_json());
        return accel::matmul_program(*dev, c, M, N, K, seed);
      },
      py::arg("M"), py::arg("N"), py::arg("K"), py::kw_only(), py::arg("config") = py::none(), py::arg("seed") = 1,
      "matmul_program(M, N, K, *, config=None, seed=1) -> Program: int8 C = A x W^T of random operands,\n"
      "double-buffered over two contexts, with the expected C as its check (`loom accel-example`).");
  a.def("compare", &compare, py::arg("program"), py::arg("backends") = std::vector<std::string>{"fsim", "rtl"},
        py::kw_only(), py::arg("options") = py::dict(),
        "compare(program, backends=['fsim', 'rtl'], *, options={}) -> dict: the program on each backend with\n"
        "per-instruction commit records (`loom sim --compare`): 'records' and 'errors' per backend,\n"
        "'divergences' (the first instruction whose effect differs from the first backend's, per other\n"
        "backend), 'same'. options: {backend: {option: value}}.");
  a.def(
      "first_divergence",
      [](const py::iterable& a, const py::iterable& b) -> py::object {
        auto d =
            sim::first_divergence(commit_records(a, "first_divergence: a"), commit_records(b, "first_divergence: b"));
        if (!d) return py::none();
        return divergence_record(*d, "a", "b");
      },
      py::arg("a"), py::arg("b"),
      "first_divergence(a, b) -> dict | None: the first (run, instruction) whose commit records differ\n"
      "between two lists of take_commits' records: {'run', 'index', 'a', 'b'} (a side's None: no record).");
  a.def(
      "isa_fields",
      [](const std::string& opcode, const py::object& config) {
        accel::IsaLayout layout(config_arg(config, "isa_fields: config"));
        py::list out;
        for (const auto& f : layout.fields(enum_named(opcode, accel::Opcode(5), "isa_fields: opcode"))) {
          py::dict d;
          d["name"] = f.name;
          d["offset"] = f.offset;
          d["width"] = f.width;
          out.append(d);
        }
        return out;
      },
      py::arg("opcode"), py::kw_only(), py::arg("config") = py::none(),
      "isa_fields(opcode, *, config=None) -> [{'name', 'offset', 'width'}]: the bits of an instruction\n"
      "(LOAD, STORE, GEMM, ALU, FINISH) of the config's ISA, least significant first.");
  a.def("estimate_cycles", &estimate, py::arg("stream"), py::kw_only(), py::arg("timeline") = false,
        "estimate_cycles(program_or_function, *, timeline=False, **params) -> dict: the performance model\n"
        "on the stream alone ('cycles', 'busy' and 'stall' per module, 'gemm_cycles', 'dram_busy_cycles';\n"
        "timeline=True: each instruction's start and end). params: dram_latency, dram_bytes_per_cycle, ...");
}

}  // namespace loom::python
