// ONNX's backend node tests (scripts/onnx_node_data.py generates them from python3-onnx): each
// case is imported, compiled and run, and its outputs compared with ONNX's reference outputs
// (rtol 1e-3, atol 1e-7, as ONNX's own runner). Every case has one outcome:
//   pass        every output matches
//   rejected    import, compile or reading the test data stops with a Loom error (the message
//               names what is unsupported)
//   run-error   a Loom error while running
//   wrong       an output differs: never expected
//   internal    a Loom InternalError or a non-Loom exception: never expected
// By default an input an operator needs as a constant (axes, a shape, pads) is bound to the test
// data's value at compile time; with --run-time-inputs every input stays a run-time input, as
// ONNX defines the tests (its own expectations file, node_expectations_run_time.txt): the model
// runs in a frontend::OnnxSession, which compiles it per value of the inputs an operator reads at
// compile time, when a data set gives them.
// The expectations file lists the cases expected not to pass, one per line, "name outcome
// reason...", and is checked both ways: a case that does not pass and is not listed with that
// outcome fails the run, and so does a listed case that now passes (the list only shrinks).
//
//   onnx_node_tests --data DIR/node --expectations FILE [--filter TEXT] [--update FILE] [--table FILE]
//   onnx_node_tests --list-ops
// --update writes the expectations the run observed; --table writes one line per case (name,
// outcome, ONNX operator, message) for the per-operator table of docs/models.md; --list-ops prints
// the ONNX operator types the importer accepts, one per line (scripts/onnx_attr_coverage.py).
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "loom/frontend/onnx.h"
#include "loom/frontend/session.h"
#include "loom/graph/build.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"

namespace fs = std::filesystem;
using namespace loom;

namespace {

struct Outcome {
  std::string kind;  // pass, rejected, run-error, wrong, internal
  std::string message;
};

std::string first_line(std::string s, size_t max = 160) {
  s = s.substr(0, s.find('\n'));
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

// The op types of the model's nodes, joined by '+', from the model itself (for the table).
std::string model_ops(const fs::path& model) {
  onnx::ModelProto m;
  std::ifstream f(model, std::ios::binary);
  if (!m.ParseFromIstream(&f)) return "?";
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node())
    if (std::find(ops.begin(), ops.end(), n.op_type()) == ops.end()) ops.push_back(n.op_type());
  std::string s;
  for (auto& o : ops) s += (s.empty() ? "" : "+") + o;
  return s;
}

// Why `got` differs from `want`, or "" (NaN matches NaN; integers and bools compare exactly).
std::string compare(const NDArray& got, const NDArray& want) {
  if (got.shape() != want.shape()) return "shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape());
  bool exact = !want.dtype().is_float();
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.get_as_double(i), w = want.get_as_double(i);
    bool ok =
        exact ? g == w : (std::isnan(w) ? std::isnan(g) : std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w) || g == w);
    if (!ok && bad++ == 0) first = i;
  }
  if (!bad) return "";
  std::ostringstream os;
  os << bad << " of " << want.numel() << " elements differ (first at " << first << ": " << got.get_as_double(first)
     << ", expected " << want.get_as_double(first) << ")";
  return os.str();
}

std::vector<fs::path> data_sets(const fs::path& dir) {
  std::vector<fs::path> sets;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  return sets;
}

std::vector<NDArray> read_tensors(const fs::path& set, const std::string& prefix) {
  std::vector<NDArray> out;
  for (int j = 0; fs::exists(set / (prefix + std::to_string(j) + ".pb")); ++j)
    out.push_back(frontend::read_onnx_tensor((set / (prefix + std::to_string(j) + ".pb")).string()));
  return out;
}

// The message without the case's directory (the expectations file is read on any machine).
std::string relative(std::string message, const fs::path& dir) {
  for (std::string prefix : {"'" + (dir / "model.onnx").string() + "': ", dir.string() + "/"})
    for (size_t at; (at = message.find(prefix)) != std::string::npos;) message.erase(at, prefix.size());
  return message;
}

// The names of the model's graph inputs that are not initializers, in order (input_<j>.pb is
// the j-th of them).
std::vector<std::string> model_input_names(const fs::path& model) {
  onnx::ModelProto m;
  std::ifstream f(model, std::ios::binary);
  if (!m.ParseFromIstream(&f)) return {};
  std::vector<std::string> names;
  for (const auto& in : m.graph().input()) {
    bool init = false;
    for (const auto& t : m.graph().initializer()) init |= t.name() == in.name();
    if (!init) names.push_back(in.name());
  }
  return names;
}

// One case's outcome; its messages still name the case's directory. Each data set is compiled
// with its input values offered to the importer: the inputs that an operator needs at compile
// time (axes, shapes, pads: Loom compiles static shapes) are bound to them, the rest stay
// run-time inputs that the data set feeds.
// --run-time-inputs: as ONNX defines the tests, every input given at run time (none bound): the
// model is made an OnnxSession once, before any data is read, and each data set runs in it.
bool run_time_inputs = false;

Outcome run_case_in(const fs::path& dir) {
  std::string stage = "test data";
  try {
    std::vector<std::string> names = model_input_names(dir / "model.onnx");
    std::optional<frontend::OnnxSession> session;
    for (const fs::path& set : data_sets(dir)) {
      stage = "test data";
      std::vector<NDArray> inputs, want;
      try {
        inputs = read_tensors(set, "input_");
        want = read_tensors(set, "output_");
      } catch (const Error&) {
        // Data Loom cannot read (sequences, strings): the importer's message about the model says why.
        stage = "import";
        frontend::import_onnx((dir / "model.onnx").string());
        throw;
      }
      if (inputs.size() != names.size())
        return {"rejected", "the test data has " + std::to_string(inputs.size()) + " inputs, the model " +
                                std::to_string(names.size())};
      if (run_time_inputs) {
        stage = "import";
        if (!session) session.emplace((dir / "model.onnx").string());
        stage = "test data";
        if (want.size() != session->num_outputs())
          return {"rejected", "the model has " + std::to_string(session->num_outputs()) + " outputs, the test data " +
                                  std::to_string(want.size())};
        for (size_t j = 0; j < names.size(); ++j) session->set_input(names[j], inputs[j]);
        stage = "compile";
        session->prepare();
        stage = "run";
        session->run();
        for (size_t k = 0; k < want.size(); ++k)
          if (std::string why = compare(session->get_output(k), want[k]); !why.empty())
            return {"wrong", set.filename().string() + " output " + std::to_string(k) + ": " + why};
        continue;
      }
      frontend::OnnxImportOptions options;
      options.bind_only_where_needed = true;
      for (size_t j = 0; j < names.size(); ++j) options.input_values[names[j]] = inputs[j];
      stage = "import";
      graph::Graph g = frontend::import_onnx((dir / "model.onnx").string(), options);
      stage = "compile";
      graph::BuildResult built = graph::build(g);
      auto ex = runtime::GraphExecutor::from_model_file(built.file, g.name);
      stage = "test data";
      if (want.size() != ex.num_outputs())
        return {"rejected", "the compiled model has " + std::to_string(ex.num_outputs()) + " outputs, the test data " +
                                std::to_string(want.size())};
      stage = "run";
      for (size_t i = 0; i < ex.num_inputs(); ++i) {
        const std::string& name = ex.input_spec(i).name;
        auto at = std::find(names.begin(), names.end(), name);
        if (at == names.end()) return {"internal", "the compiled model's input '" + name + "' is not the model's"};
        ex.set_input(name, inputs[at - names.begin()]);
      }
      ex.run();
      for (size_t k = 0; k < want.size(); ++k)
        if (std::string why = compare(ex.get_output(k), want[k]); !why.empty())
          return {"wrong", set.filename().string() + " output " + std::to_string(k) + ": " + why};
    }
    return {"pass", ""};
  } catch (const InternalError& e) {
    return {"internal", stage + ": " + first_line(e.what())};
  } catch (const Error& e) {
    return {stage == "run" ? "run-error" : "rejected", first_line(e.what())};
  } catch (const std::exception& e) {
    return {"internal", stage + ": non-Loom exception: " + first_line(e.what())};
  }
}

Outcome run_case(const fs::path& dir) {
  Outcome o = run_case_in(dir);
  o.message = relative(o.message, dir);
  return o;
}

std::map<std::string, std::pair<std::string, std::string>> read_expectations(const std::string& path) {
  std::map<std::string, std::pair<std::string, std::string>> ex;
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open the expectations file '" + path + "'");
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string name, kind, reason;
    is >> name >> kind;
    std::getline(is, reason);
    if (kind != "rejected" && kind != "run-error")
      throw std::runtime_error(path + ":" + std::to_string(n) + ": outcome '" + kind +
                               "' (only rejected and run-error can be expected; wrong and internal are bugs)");
    ex[name] = {kind, reason};
  }
  return ex;
}

std::string arg(int argc, char** argv, const std::string& key) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == key) return argv[i + 1];
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--list-ops") {
    for (const std::string& op : loom::frontend::onnx_supported_ops()) std::cout << op << "\n";
    return 0;
  }
  for (int i = 1; i < argc; ++i) run_time_inputs |= std::string(argv[i]) == "--run-time-inputs";
  std::string data = arg(argc, argv, "--data"), expect_path = arg(argc, argv, "--expectations"),
              filter = arg(argc, argv, "--filter"), update = arg(argc, argv, "--update"),
              table_path = arg(argc, argv, "--table");
  if (data.empty() || (expect_path.empty() && update.empty())) {
    std::cerr << "usage: onnx_node_tests --data DIR/node --expectations FILE [--filter TEXT] [--update FILE] "
                 "[--table FILE] [--run-time-inputs]\n";
    return 2;
  }
  try {
    auto expected = expect_path.empty() ? decltype(read_expectations("")){} : read_expectations(expect_path);
    std::vector<fs::path> cases;
    for (auto& e : fs::directory_iterator(data)) {
      std::string name = e.path().filename().string();
      bool expanded = name.size() >= 9 && name.compare(name.size() - 9, 9, "_expanded") == 0;
      if (e.is_directory() && !expanded && name.find(filter) != std::string::npos) cases.push_back(e.path());
    }
    std::sort(cases.begin(), cases.end());
    if (cases.empty()) throw std::runtime_error("no node tests under '" + data + "'");
    std::map<std::string, int> count;
    std::vector<std::string> problems;
    std::ofstream upd, table;
    if (!update.empty()) {
      upd.open(update);
      upd << "# ONNX node tests expected not to pass: name outcome reason (tests/onnx/onnx_node_tests.cc)\n";
    }
    if (!table_path.empty()) table.open(table_path);
    for (const fs::path& dir : cases) {
      std::string name = dir.filename().string();
      std::cout << name << " ... " << std::flush;  // a crash leaves the case's name in the log
      Outcome o = run_case(dir);
      std::cout << o.kind << (o.message.empty() ? "" : ": " + o.message) << "\n";
      ++count[o.kind];
      if (table) table << name << "\t" << o.kind << "\t" << model_ops(dir / "model.onnx") << "\t" << o.message << "\n";
      if (upd && o.kind != "pass") upd << name << " " << o.kind << " " << o.message << "\n";
      auto it = expected.find(name);
      if (o.kind == "pass" && it != expected.end())
        problems.push_back(name + " passes now: remove it from the expectations");
      else if (o.kind != "pass" && (it == expected.end() || it->second.first != o.kind))
        problems.push_back(name + ": " + o.kind + " (" + o.message + "), expected " +
                           (it == expected.end() ? "pass" : it->second.first));
    }
    std::printf(
        "onnx node tests%s: %zu cases: %d pass, %d rejected, %d run-error, %d wrong, %d internal (%.1f%% pass)\n",
        run_time_inputs ? " (run-time inputs only)" : " (inputs bound where needed)", cases.size(), count["pass"],
        count["rejected"], count["run-error"], count["wrong"], count["internal"],
        100.0 * count["pass"] / double(cases.size()));
    if (!update.empty()) return 0;
    for (const std::string& p : problems) std::printf("UNEXPECTED %s\n", p.c_str());
    if (problems.empty()) std::printf("every outcome as expected\n");
    return problems.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "onnx_node_tests: " << e.what() << "\n";
    return 2;
  }
}
