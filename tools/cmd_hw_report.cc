// `loom hw-report`: maps the accelerator RTL of a config onto Xilinx primitives with yosys
// (synth_xilinx), then prints the resources it uses against the named FPGA parts and a timing
// estimate from the mapped netlist (docs/fpga_fit.md).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "accel_backend.h"
#include "cli.h"
#include "command.h"
#include "data_dir.h"
#include "loom/accel/area_model.h"
#include "loom/accel/fpga_fit.h"
#include "loom/accel/hw_params.h"
#include "loom/accel/netlist_timing.h"
#include "loom/runtime/error.h"
#include "loom/runtime/spawn.h"
#include "synth_record.h"

namespace loom::tools {

using namespace loom::accel;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) LOOM_THROW(Error, "cannot read '", p.string(), "'");
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p);
  if (!f || !(f << text)) LOOM_THROW(Error, "cannot write '", p.string(), "'");
}

// Runs `argv` with stdout and stderr into `log`: its exit status, or an Error when it cannot
// start, dies of a signal or runs past `timeout_s` (then it is killed).
int run_logged(const std::vector<std::string>& argv, const fs::path& log, int timeout_s) {
  const runtime::LoggedRun run = runtime::run_logged(argv, log, timeout_s);
  switch (run.end) {
    case runtime::LoggedRun::End::Exited:
      return run.status;
    case runtime::LoggedRun::End::Signaled:
      return 128 + run.status;
    case runtime::LoggedRun::End::TimedOut:
      LOOM_THROW(Error, "yosys ran past --timeout ", timeout_s, " s (log: ", log.string(), ")");
    case runtime::LoggedRun::End::NotStarted:
      break;
  }
  LOOM_THROW(Error, "cannot run yosys ('", argv[0], "': ", run.error,
             "); install it (Debian: apt-get install yosys) or give --yosys PATH");
}

// The first line of a script that keeps the hierarchy: `--from` reads the mode back from it.
constexpr const char* kKeptHierarchyMark = "# hierarchy kept";

// The yosys script: the package, every module, Xilinx technology mapping, the statistics and the
// mapped netlist. With the hierarchy kept each module is mapped once per parameter set and
// nothing is optimized across modules; the mapped netlist is flattened afterwards, so the counts
// and the timing paths are of the whole design either way.
std::string yosys_script(const fs::path& pkg, const fs::path& rtl_dir, FpgaFamily family, const fs::path& out,
                         bool keep_hierarchy) {
  std::ostringstream ys;
  if (keep_hierarchy) ys << kKeptHierarchyMark << "\n";
  ys << yosys_read_rtl(pkg.string(), rtl_dir.string()) << "synth_xilinx -family " << fpga_family_name(family)
     << (keep_hierarchy ? "" : " -flatten") << " -noiopad -noclkbuf -top loom_accel\n"
     << (keep_hierarchy ? "flatten\n" : "") << "tee -q -o " << (out / "stat.json").string() << " stat -json\n"
     << "write_json " << (out / "netlist.json").string() << "\n";
  return ys.str();
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

int hw_report(const std::vector<std::string>& args) {
  CLI::App app{
      "Map the accelerator RTL onto Xilinx 7-series or UltraScale+ primitives with yosys and report the "
      "resources it uses against named FPGA parts, with a timing estimate",
      "loom hw-report"};
  std::string config, family_name, part_name, json_out, out_dir, from_dir, reuse, record_out, yosys = "yosys",
                                                                                              hw = hw_data_dir();
  double max_util = 100.0, max_model_error = 0;
  int timeout_s = 3600, paths = 5;
  bool keep_hierarchy = false;
  RtlOptions rtl;
  add_config_option(app, config);
  app.add_option("--family", family_name, "xc7 (7-series) or xcup (UltraScale+); default: the part's, else xc7");
  app.add_option("--part", part_name, "report against this part only (xc7z020, xczu3eg, xczu7ev, xcu250)");
  app.add_option("--json", json_out, "also write the report as JSON to this file")->check(output_file());
  app.add_option("--out", out_dir, "keep yosys' files (script, log, stat.json, netlist.json) in this folder");
  app.add_option("--from", from_dir, "report from the stat.json and netlist.json of an earlier --out (no yosys run)");
  app.add_flag("--keep-hierarchy", keep_hierarchy,
               "map each module on its own (no optimization across modules): about a third faster; resources a "
               "little above the flattened run's, the timing estimate pessimistic (docs/fpga_fit.md)")
      ->excludes("--from");
  app.add_option("--reuse", reuse,
                 "a record of an earlier run (--record): report from it instead of running yosys when its key (yosys' "
                 "version, the script, the package and every RTL file) is this run's; no timing estimate then")
      ->excludes("--from");
  app.add_option("--record", record_out, "write the record of this run (yosys' statistics and their key) to this file")
      ->excludes("--from")
      ->check(output_file());
  number_option(app, "--max-utilization", max_util,
                "fail (exit 1) when any resource of a reported part is above this percent", 0.0, 100.0)
      ->capture_default_str();
  number_option(app, "--max-model-error", max_model_error,
                "xc7: fail (exit 1) when the analytical area model (loom dse's) is further than this percent from "
                "yosys on a resource (0: report only)",
                0.0, 1000.0);
  number_option(app, "--paths", paths, "longest paths to list", 0, 100)->capture_default_str();
  number_option(app, "--timeout", timeout_s, "seconds yosys may run", 1, 86400)->capture_default_str();
  app.add_option("--yosys", yosys, "the yosys program")->capture_default_str();
  app.add_option("--hw", hw, "Loom's hw/ folder, or an install's share/loom (rtl/ inside)")->capture_default_str();
  add_gemm_multipliers_option(app, rtl);
  if (int rc = parse(app, args); rc >= 0) return rc;

  AccelConfig cfg = load_config(config);
  const FpgaPart* only = part_name.empty() ? nullptr : &fpga_part(part_name);
  FpgaFamily family = only ? only->family : FpgaFamily::Xc7;
  if (!family_name.empty()) {
    family = parse_fpga_family(family_name);
    if (only && only->family != family)
      LOOM_THROW(ConfigError, "part ", only->name, " is ", fpga_family_name(only->family), ", not ", family_name);
  }

  // ---- yosys, a record of an earlier run, or the files of one ----
  fs::path dir;
  double seconds = 0;
  std::string yosys_version, stat_json, stale_record;
  SynthInputs inputs;  // what decides yosys' result (not with --from)
  bool from_record = false;
  if (!from_dir.empty()) {
    dir = from_dir;
    // An earlier run's mode, from its script (a folder without one was flattened: no mark).
    std::error_code ec;
    if (fs::exists(dir / "synth.ys", ec))
      keep_hierarchy = read_file(dir / "synth.ys").rfind(kKeptHierarchyMark, 0) == 0;
  } else {
    dir = out_dir.empty() ? fs::temp_directory_path() / ("loom-hw-report-" + std::to_string(getpid()))
                          : fs::path(out_dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) LOOM_THROW(Error, "cannot create '", dir.string(), "': ", ec.message());
    write_file(dir / "loom_accel_pkg.sv", sv_package(cfg, rtl));
    const fs::path rtl_dir = fs::path(hw) / "rtl";
    const std::string script = yosys_script(dir / "loom_accel_pkg.sv", rtl_dir, family, dir, keep_hierarchy);
    write_file(dir / "synth.ys", script);
    if (run_logged({yosys, "-V"}, dir / "version.txt", 60) != 0)
      LOOM_THROW(Error, "'", yosys, " -V' failed: ", read_file(dir / "version.txt"));
    yosys_version = read_file(dir / "version.txt");
    while (!yosys_version.empty() && std::isspace((unsigned char)yosys_version.back())) yosys_version.pop_back();
    inputs =
        synth_inputs(yosys_version, script, dir, rtl_dir, dir / "loom_accel_pkg.sv", rtl_sources(rtl_dir.string()));
    if (!reuse.empty()) {
      SynthRecord recorded = read_synth_record(reuse);
      if (recorded.key == synth_key(inputs)) {
        stat_json = recorded.stat_json;
        from_record = true;
      } else {
        std::string changes;
        for (const std::string& c : changed_synth_inputs(recorded.inputs, inputs))
          changes += (changes.empty() ? "" : ", ") + c;
        stale_record = "the record '" + reuse + "' is out of date (" + changes + ")";
        std::cerr << "hw-report: " << stale_record << ": running yosys\n";
      }
    }
  }
  if (from_dir.empty() && !from_record) {
    std::cerr << "hw-report: " << yosys_version << ": synth_xilinx -family " << fpga_family_name(family)
              << (keep_hierarchy ? " (hierarchy kept)" : "") << " of config '" << cfg.name << "' (minutes; log "
              << (dir / "yosys.log").string() << ")\n";
    auto t0 = std::chrono::steady_clock::now();
    int rc = run_logged({yosys, "-q", "-l", (dir / "yosys.log").string(), (dir / "synth.ys").string()},
                        dir / "yosys.out", timeout_s);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) {
      std::string log = read_file(dir / "yosys.out");
      if (log.size() > 2000) log = "..." + log.substr(log.size() - 2000);
      LOOM_THROW(Error, "yosys failed (exit ", rc, ", log ", (dir / "yosys.log").string(), "):\n", log);
    }
  }
  // A record holds the statistics only: the timing estimate needs the mapped netlist.
  const std::string stat_where = from_record ? reuse : (dir / "stat.json").string();
  if (!from_record) stat_json = read_file(dir / "stat.json");
  FpgaResources used = fpga_resources_from_stat_json(stat_json, "loom_accel", family, stat_where);
  std::optional<TimingEstimate> timing;
  if (!from_record)
    timing =
        estimate_timing(read_file(dir / "netlist.json"), "loom_accel", family, paths, (dir / "netlist.json").string());
  if (!record_out.empty())
    write_synth_record(record_out, SynthRecord{synth_key(inputs), inputs, yosys_version, stat_json});
  if (out_dir.empty() && from_dir.empty()) fs::remove_all(dir);

  // ---- report ----
  std::vector<FpgaFit> fits;
  for (const FpgaPart& p : fpga_parts())
    if (only ? &p == only : p.family == family) fits.push_back(fpga_fit(used, p));
  const char* dsp = family == FpgaFamily::Xc7 ? "DSP48E1" : "DSP48E2";
  const GemmMultiplierPlan plan = gemm_multiplier_plan(cfg, rtl);
  const std::string what =
      from_dir.empty() ? "config '" + cfg.name + "' (" + cfg.precision() + ")" : "the netlist in " + from_dir;
  std::cout << "loom_accel, " << what << ", mapped to " << fpga_family_name(family) << " by yosys synth_xilinx";
  if (keep_hierarchy) std::cout << " (hierarchy kept)";
  if (seconds > 0) std::cout << " in " << fixed(seconds, 0) << " s";
  if (from_record) std::cout << ", from the record " << reuse << " (" << yosys_version << ")";
  std::cout << "\n  LUT " << used.luts << " (of which LUTRAM " << used.lutram_luts << ")  FF " << used.ffs << "  "
            << dsp << " " << used.dsps << "  BRAM36 " << fixed(used.bram36(), 1) << " (" << used.ramb36 << " RAMB36 + "
            << used.ramb18 << " RAMB18)";
  if (used.uram) std::cout << "  URAM " << used.uram;
  if (from_dir.empty()) std::cout << "\n  GEMM multipliers: " << plan.reason;
  std::cout << "\n  part       board        LUT     LUTRAM  FF      DSP     BRAM36  URAM    fits\n";
  for (const FpgaFit& f : fits) {
    std::printf("  %-10s %-12s", f.part->name.c_str(), f.part->board.c_str());
    for (const FpgaFit::Use& u : f.uses) std::printf(" %6.1f%%", u.percent());
    std::printf("  %s\n", f.fits() ? (f.fits(max_util) ? "yes" : "over the limit") : "no");
  }
  // The analytical area model of `loom dse` (xc7) against yosys: its error per resource.
  nlohmann::json model_json;
  double worst_model_error = 0;
  if (family == FpgaFamily::Xc7) {
    AreaEstimate m = estimate_area(cfg, rtl);
    std::cout << "  area model (docs/perf_model.md):";
    auto one = [&](const char* name, double model, double yosys_value) {
      double err = yosys_value > 0 ? 100.0 * (model - yosys_value) / yosys_value : 0;
      worst_model_error = std::max(worst_model_error, std::fabs(err));
      std::cout << " " << name << " " << fixed(model, 0) << " (" << (err >= 0 ? "+" : "") << fixed(err, 1) << "%)";
      model_json[name] = {{"model", model}, {"yosys", yosys_value}, {"error_percent", err}};
    };
    one("LUT", m.lut, double(used.luts));
    one("FF", m.ff, double(used.ffs));
    one("DSP", m.dsp, double(used.dsps));
    one("BRAM36", m.bram36, used.bram36());
    std::cout << "\n";
  }
  if (!timing) {
    std::cout << "  timing estimate: none from a record (it needs the mapped netlist: run without --reuse)\n";
  } else {
    std::cout << "  timing estimate (delay table, no placement"
              << (keep_hierarchy ? ", no optimization across modules: pessimistic" : "")
              << "; docs/fpga_fit.md): critical path " << fixed(timing->critical_ns(), 2) << " ns, Fmax ~"
              << fixed(timing->fmax_mhz(), 0) << " MHz; deepest path " << timing->max_lut_levels << " LUT levels\n";
    for (size_t i = 0; i < timing->worst.size(); ++i) {
      const TimingPath& p = timing->worst[i];
      std::cout << "    " << i + 1 << ". " << fixed(p.ns, 2) << " ns, " << p.lut_levels << " LUTs: " << p.from << " -> "
                << p.to;
      if (!p.through.empty()) {
        std::cout << " (via";
        for (const std::string& t : p.through) std::cout << " " << t;
        std::cout << ")";
      }
      std::cout << "\n";
    }
  }

  if (!json_out.empty()) {
    nlohmann::json j;
    j["config"] = cfg.name;
    j["precision"] = cfg.precision();
    j["gemm_multipliers"] = {{"kind", to_string(plan.kind)},
                             {"products_per_multiplier", plan.products_per_multiplier},
                             {"reason", plan.reason}};
    j["family"] = fpga_family_name(family);
    j["keep_hierarchy"] = keep_hierarchy;
    if (!yosys_version.empty()) j["yosys"] = yosys_version;
    if (seconds > 0) j["seconds"] = seconds;
    j["used"] = {{"lut", used.luts},        {"lutram", used.lutram_luts}, {"ff", used.ffs},        {"dsp", used.dsps},
                 {"bram36", used.bram36()}, {"ramb36", used.ramb36},      {"ramb18", used.ramb18}, {"uram", used.uram}};
    j["cells"] = used.cells;
    if (!model_json.empty()) j["area_model"] = model_json;
    for (const FpgaFit& f : fits) {
      nlohmann::json pj{{"part", f.part->name}, {"board", f.part->board}, {"fits", f.fits()}};
      for (const FpgaFit::Use& u : f.uses)
        pj["utilization"][u.resource] = {{"used", u.used}, {"available", u.available}, {"percent", u.percent()}};
      j["parts"].push_back(pj);
    }
    if (from_record) j["record"] = reuse;
    if (timing) {
      j["timing"] = {{"critical_ns", timing->critical_ns()},
                     {"fmax_mhz", timing->fmax_mhz()},
                     {"max_lut_levels", timing->max_lut_levels}};
      for (const TimingPath& p : timing->worst)
        j["timing"]["paths"].push_back(
            {{"ns", p.ns}, {"lut_levels", p.lut_levels}, {"from", p.from}, {"to", p.to}, {"through", p.through}});
    }
    write_file(json_out, j.dump(2) + "\n");
  }

  // ---- verdict ----
  if (!stale_record.empty())
    std::cerr << "hw-report: " << stale_record << "; "
              << (record_out.empty() ? "write a fresh one with --record FILE"
                                     : "refresh it: cp " + record_out + " " + reuse)
              << "\n";
  bool any_fits = false;
  for (const FpgaFit& f : fits) any_fits = any_fits || f.fits();
  if (!any_fits) {
    std::string parts;
    for (const FpgaFit& f : fits) {
      parts += "\n  " + f.part->name + " (" + f.part->board + "): over on";
      for (const std::string& o : f.over()) parts += " " + o + ";";
    }
    std::cerr << "hw-report: " << what << " fits none of the " << (only ? "asked" : "named ")
              << (only ? "part" : fpga_family_name(family) + " parts") << ":" << parts << "\n";
    return 1;
  }
  int rc = 0;
  if (max_model_error > 0 && worst_model_error > max_model_error) {
    std::cerr << "hw-report: the area model is " << fixed(worst_model_error, 1) << "% off yosys on a resource (above "
              << "--max-model-error " << max_model_error << "%)\n";
    rc = 1;
  }
  for (const FpgaFit& f : fits) {
    if (!f.fits() || f.fits(max_util)) continue;
    std::cerr << "hw-report: on " << f.part->name << " above --max-utilization " << max_util << "%:";
    for (const std::string& o : f.over(max_util)) std::cerr << " " << o << ";";
    std::cerr << "\n";
    rc = 1;
  }
  return rc;
}

}  // namespace

LOOM_REGISTER_COMMAND("hw-report",
                      "map the accelerator RTL onto Xilinx FPGAs with yosys: resources per part, timing estimate",
                      hw_report);

}  // namespace loom::tools
