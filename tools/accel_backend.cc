#include "accel_backend.h"

#include <algorithm>
#include <iostream>

#include <nlohmann/json.hpp>

#include "loom/runtime/backend_options.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"

namespace loom::tools {

namespace {

// The backends that declare `key`, in the order accel_backends() gives: "perf, rtl or systemc".
std::string declaring(const std::string& key) {
  std::vector<std::string> names;
  for (const std::string& b : accel_backends())
    for (const BackendOption& o : accel_backend_options(b))
      if (o.key == key) names.push_back(b);
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

// "(0, 4096]" of "a number in (0, 4096]".
std::string in_range_text(const BackendOption& o) {
  std::string r = o.range_text();
  return r.substr(r.find(" in ") + 4);
}

// The type the help shows for an option's value.
const char* value_name(BackendOption::Kind k) {
  switch (k) {
    case BackendOption::Kind::Count:
      return "UINT";
    case BackendOption::Kind::Number:
      return "FLOAT";
    case BackendOption::Kind::Flag:
      return "BOOL";
    case BackendOption::Kind::Choice:
      return "TEXT";
    case BackendOption::Kind::OutputFile:
      return "PATH";
  }
  return "TEXT";
}

// A number in the declared range, ends open or closed as declared.
CLI::Validator number_in(const BackendOption& o) {
  return CLI::Validator(
      [o](std::string& text) {
        double v = 0;
        if (detail::parse_number(text, v) && v >= o.min && v <= o.max && !(o.min_open && v == o.min) &&
            !(o.max_open && v == o.max)) {
          text = detail::number_text(v);
          return std::string();
        }
        return "Value " + text + " not in range " + in_range_text(o);
      },
      in_range_text(o));
}

CLI::Validator validator_for(const BackendOption& o) {
  switch (o.kind) {
    case BackendOption::Kind::Count:
      return in_range<uint64_t>(uint64_t(o.min), uint64_t(o.max));
    case BackendOption::Kind::Number:
      return number_in(o);
    case BackendOption::Kind::Flag:
      return CLI::IsMember({"true", "false"});
    case BackendOption::Kind::Choice:
      return CLI::IsMember(o.choices);
    case BackendOption::Kind::OutputFile:
      return output_file();
  }
  return CLI::Validator();
}

// Each option given must be declared by the backend chosen, and an rpc:// device takes none (they
// belong to the server, where the device is).
void check(const BackendOptions& opt) {
  for (const auto& [key, flag] : opt.flags) {
    if (!opt.given(key)) continue;
    if (rpc::is_url(opt.backend))
      throw CLI::ValidationError(
          "the simulator options apply where the device is: give them to `loom rpc-server`, not to an rpc:// backend");
    bool declared = false;
    for (const BackendOption& o : accel_backend_options(opt.backend)) declared |= o.key == key;
    if (!declared) throw CLI::ValidationError(flag->get_name() + " needs --backend " + declaring(key));
  }
}

}  // namespace

bool BackendOptions::given(const std::string& key) const {
  auto it = flags.find(key);
  return it != flags.end() && it->second->count() > 0;
}

void add_backend_options(CLI::App& app, BackendOptions& opt) {
  std::string backends;
  for (auto& b : accel_backends()) backends += (backends.empty() ? "" : "|") + b;
  auto known = accel_backends();
  opt.o_backend = app.add_option("--backend", opt.backend,
                                 "accelerator backend (" + backends +
                                     ", or rpc+tls://HOST:PORT/BACKEND?fp=... for a remote device; rpc:// on loopback)")
                      ->check(CLI::Validator(
                          [known](std::string& b) -> std::string {
                            if (std::find(known.begin(), known.end(), b) != known.end()) return "";
                            if (!rpc::is_url(b))
                              return b + " is not a backend (" + CLI::detail::join(known, ", ") +
                                     ", rpc+tls://HOST:PORT/BACKEND?fp=..., rpc://HOST:PORT/BACKEND)";
                            try {
                              rpc::parse_url(b);
                            } catch (const Error& e) {
                              return e.what();
                            }
                            return "";
                          },
                          "BACKEND"))
                      ->capture_default_str()
                      ->group("Backend");
  // One flag per key, described by the first backend that declares it; its help names them all.
  // A command's own option of the same name keeps it (the key stays settable in the config JSON).
  for (const std::string& b : known)
    for (const BackendOption& o : accel_backend_options(b)) {
      if (opt.flags.count(o.key) || app.get_option_no_throw(o.cli_flag())) continue;
      std::string help = declaring(o.key) + ": " + o.help;
      if (!o.fallback.empty()) help += " (default " + o.fallback + ")";
      opt.flags[o.key] = app.add_option(o.cli_flag(), opt.values[o.key], help)
                             ->transform(validator_for(o))
                             ->type_name(value_name(o.kind))
                             ->group("Backend");
    }
  for (const std::string& b : known)
    for (const BackendOption& o : accel_backend_options(b))
      if (!o.needs.empty() && opt.flags.count(o.key) && opt.flags.count(o.needs))
        opt.flags[o.key]->needs(opt.flags[o.needs]);
  app.parse_complete_callback([&opt] { check(opt); });
}

CLI::Option* add_config_option(CLI::App& app, std::string& path) {
  return app.add_option("--config", path, "accelerator config (JSON; default: the built-in default config)")
      ->check(CLI::ExistingFile);
}

accel::AccelConfig load_config(const std::string& path) {
  return path.empty() ? accel::default_config() : accel::AccelConfig::load(path);
}

void add_gemm_multipliers_option(CLI::App& app, accel::RtlOptions& rtl) {
  app.add_option_function<std::string>(
         "--gemm-multipliers", [&rtl](const std::string& v) { rtl.gemm = accel::parse_gemm_multipliers(v); },
         "how the GEMM core builds its products: auto (from the operand widths), plain (one multiplier each), dsp "
         "(several per DSP48), lut (no DSP48)")
      ->check(CLI::IsMember({"auto", "plain", "dsp", "lut"}));
  app.add_flag_callback(
      "--plain-gemm", [&rtl] { rtl.gemm = accel::GemmMultipliers::Plain; }, "the same as --gemm-multipliers plain");
}

bool any_backend_option(const BackendOptions& opt) {
  if (opt.o_backend && opt.o_backend->count() > 0) return true;
  for (const auto& [key, flag] : opt.flags)
    if (opt.given(key)) return true;
  return false;
}

CLI::Option* add_compare_option(CLI::App& app, std::vector<std::string>& backends, const std::string& help) {
  return app.add_option("--compare", backends, help)->delimiter(',')->expected(2);
}

int report_divergence(const std::string& what, const std::vector<std::string>& backends,
                      const std::vector<sim::CommitRecord> (&records)[2], const std::string (&errors)[2]) {
  std::cout << "compared " << what << " on " << backends[0] << " (" << records[0].size() << " instruction records) and "
            << backends[1] << " (" << records[1].size() << ")\n";
  for (int s = 0; s < 2; ++s)
    if (!errors[s].empty()) std::cout << "  " << backends[size_t(s)] << " stopped: " << errors[s] << "\n";
  auto d = sim::first_divergence(records[0], records[1]);
  if (!d) {
    if (errors[0].empty() != errors[1].empty()) {
      std::cout << "the records agree, but only one backend stopped with an error\n";
      return 1;
    }
    std::cout << "no divergence: every instruction's effect is the same\n";
    return 0;
  }
  std::cout << "first divergence at instruction " << d->index << " of run " << d->run << ":\n";
  for (int s = 0; s < 2; ++s) {
    const auto& r = s == 0 ? d->a : d->b;
    std::cout << "  " << backends[size_t(s)] << ": "
              << (r ? r->describe() : "no record (the instruction did not finish: the run stopped before it)") << "\n";
  }
  return 1;
}

std::unique_ptr<AccelDevice> open_accel_backend(const BackendOptions& opt, const accel::AccelConfig& config) {
  return make_accel_device(opt.backend, backend_config_json(opt, config));
}

std::string backend_config_json(const BackendOptions& opt, const accel::AccelConfig& config) {
  check(opt);
  nlohmann::json j = nlohmann::json::parse(config.to_json());
  // The config file's backend sections (a board's device names, an .xclbin), each named by a
  // backend this build knows; the command line's options override their keys.
  for (const auto& [name, text] : config.backend_sections) {
    check_backend_section(name, "'" + config.name + "'");
    j[name] = nlohmann::json::parse(text);
  }
  nlohmann::json section = j.contains(opt.backend) ? j[opt.backend] : nlohmann::json::object();
  for (const BackendOption& o : accel_backend_options(opt.backend)) {
    if (!opt.given(o.key)) continue;
    const std::string& text = opt.values.at(o.key);
    switch (o.kind) {
      case BackendOption::Kind::Count:
        section[o.key] = std::stoull(text);
        break;
      case BackendOption::Kind::Number:
        section[o.key] = std::stod(text);
        break;
      case BackendOption::Kind::Flag:
        section[o.key] = text == "true";
        break;
      case BackendOption::Kind::Choice:
      case BackendOption::Kind::OutputFile:
        section[o.key] = text;
        break;
    }
  }
  if (!section.empty()) j[opt.backend] = section;
  return j.dump();
}

}  // namespace loom::tools
