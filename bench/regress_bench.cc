// regress_bench: `loom regress` on the local cores against the same suite as a Slurm job array on a
// single-node cluster on 127.0.0.1 (started here with scripts/slurm_cluster.sh unless SLURM_CONF
// names one): ResNet-18's conv layers x the three RTL configs x {fsim, rtl}, plus the int8 ResNet-18
// on both backends, every job checked against the CPU. Prints wall times, jobs per minute, the
// scheduling overhead per job (40 empty jobs on each executor), whether the two reports are the
// same, and estimates for the suite and a 1,000-point DSE sweep on 100 nodes from the measured
// per-job costs (docs/regress.md).
//   regress_bench [--no-slurm] [--image N] [--work DIR]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs a shell command; its wall time in seconds and its exit code.
double timed(const std::string& cmd, int& rc) {
  auto t0 = std::chrono::steady_clock::now();
  int s = std::system(cmd.c_str());
  rc = WIFEXITED(s) ? WEXITSTATUS(s) : 128;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct JobCosts {
  double total = 0, longest = 0;
  size_t jobs = 0;
};
JobCosts costs(const fs::path& results) {
  JobCosts c;
  std::ifstream f(results);
  for (std::string line; std::getline(f, line);) {
    json r = json::parse(line);
    double s = r.value("seconds", 0.0);
    c.total += s;
    c.longest = std::max(c.longest, s);
    ++c.jobs;
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  bool slurm = true;
  int image = 224;
  fs::path work = fs::temp_directory_path() / ("loom_regress_bench_" + std::to_string(getpid()));
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-slurm")
      slurm = false;
    else if (a == "--image" && i + 1 < argc)
      image = std::atoi(argv[++i]);
    else if (a == "--work" && i + 1 < argc)
      work = argv[++i];
    else {
      std::cerr << "usage: regress_bench [--no-slurm] [--image N] [--work DIR]\n";
      return 2;
    }
  }
  const std::string loom = LOOM_TOOL, configs = LOOM_ACCEL_CONFIGS_DIR, cluster_sh = LOOM_SLURM_CLUSTER_SH;
  fs::remove_all(work);
  fs::create_directories(work);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::cout << "regress_bench on " << loom::bench::cpu_name() << ", " << cores << " cores; work folder " << work
            << "\n";

  json layers = json::array();
  for (int l = 2; l <= 11; ++l) layers.push_back("resnet18:c" + std::to_string(l));
  json suite = {
      {"name", "regress-bench"},
      {"configs",
       {{"default", "default"}, {"1x32x32", configs + "/1x32x32.json"}, {"batch2", configs + "/batch2.json"}}},
      {"jobs",
       {{{"name", "convs"},
         {"workloads", layers},
         {"configs", {"default", "1x32x32", "batch2"}},
         {"backends", {"fsim", "rtl"}}},
        {{"name", "model"},
         {"workloads", {"model:resnet18@" + std::to_string(image)}},
         {"backends", {"fsim", "rtl"}}}}}};
  json empty = {{"name", "overhead"}, {"jobs", json::array()}};
  json nothing = json::array();
  for (int k = 0; k < 40; ++k) nothing.push_back({{"name", "e" + std::to_string(k)}, {"workload", "command:true"}});
  empty["jobs"].push_back({{"name", "empty"}, {"workloads", nothing}, {"backends", {"fsim"}}});
  std::ofstream(work / "suite.json") << suite.dump(1);
  std::ofstream(work / "empty.json") << empty.dump(1);

  int rc = 0;
  const std::string q = " --force -q > /dev/null 2>&1";
  double local_s =
      timed(loom + " regress " + (work / "suite.json").string() + " --out " + (work / "local").string() + q, rc);
  if (rc > 1) {
    std::cerr << "the local run failed (exit code " << rc << "); see " << work / "local"
              << "\n";
    return 1;
  }
  JobCosts c = costs(work / "local" / "results.jsonl");
  double local_empty =
      timed(loom + " regress " + (work / "empty.json").string() + " --out " + (work / "local_empty").string() + q, rc);
  double dse_s = timed(loom + " dse --sweep block=16,32 --sweep dram_bytes_per_cycle=8,16 -q --out " +
                           (work / "dse").string() + " --executor local > /dev/null 2>&1",
                       rc);
  JobCosts dse = costs(work / "dse" / "regress" / "results.jsonl");
  std::cout << std::fixed << std::setprecision(2) << "suite: " << c.jobs << " jobs (" << layers.size()
            << " conv layers x 3 configs x {fsim, rtl}, int8 ResNet-18 " << image << "x" << image
            << " x {fsim, rtl}), job time " << c.total << " s in all, longest " << c.longest << " s\n"
            << "  --local: " << local_s << " s wall, " << 60 * c.jobs / local_s << " jobs/min; ";
  std::string verdict = read(work / "local" / "report.md");
  size_t p = verdict.find("**");
  std::cout << verdict.substr(p, verdict.find('\n', p) - p) << "\n";
  std::cout << "  scheduling overhead, 40 empty jobs: --local " << 1000 * local_empty / 40 << " ms/job\n";

  double slurm_s = 0, slurm_empty = 0, slurm_packed = 0;
  fs::path cluster;  // the cluster started here (stopped at the end)
  if (slurm && !std::getenv("SLURM_CONF")) {
    fs::path dir = fs::path("/tmp") / ("lrb" + std::to_string(getpid()));  // short: munge's socket path
    int src = 0;
    timed("timeout 180 bash " + cluster_sh + " start " + dir.string() + " --cpus " + std::to_string(cores) + " > " +
              (work / "cluster.log").string() + " 2>&1",
          src);
    if (src != 0) {
      std::cout << "  --slurm: no cluster (" << read(work / "cluster.log") << ")\n";
      slurm = false;
    } else {
      setenv("SLURM_CONF", (dir / "slurm.conf").c_str(), 1);
      cluster = dir;
    }
  }
  if (slurm) {
    slurm_s = timed(loom + " regress " + (work / "suite.json").string() + " --slurm --poll 0.2 --out " +
                        (work / "slurm").string() + q,
                    rc);
    slurm_empty = timed(loom + " regress " + (work / "empty.json").string() + " --slurm --poll 0.2 --out " +
                            (work / "slurm_empty").string() + q,
                        rc);
    slurm_packed = timed(loom + " regress " + (work / "empty.json").string() + " --slurm --pack 8 --poll 0.2 --out " +
                             (work / "slurm_packed").string() + q,
                         rc);
    bool same = read(work / "local" / "report.csv") == read(work / "slurm" / "report.csv") &&
                read(work / "local" / "report.md") == read(work / "slurm" / "report.md");
    std::cout << "  --slurm: " << slurm_s << " s wall, " << 60 * c.jobs / slurm_s << " jobs/min, " << slurm_s / local_s
              << "x the local wall time; reports " << (same ? "identical" : "DIFFER") << "\n"
              << "  scheduling overhead, 40 empty jobs: --slurm " << 1000 * slurm_empty / 40
              << " ms/job (target < 500), with --pack 8 " << 1000 * slurm_packed / 40
              << " ms/job; suite: " << 1000 * (slurm_s - local_s) / double(c.jobs) << " ms/job more than --local\n";
    if (!same) rc = 1;
  }
  if (!cluster.empty()) {
    int src = 0;
    timed("timeout 60 bash " + cluster_sh + " stop " + cluster.string() + " > /dev/null 2>&1", src);
  }
  // Estimates for 100 nodes of this machine's cores, from the measured costs (no queue wait counted).
  const double slots = 100.0 * cores, overhead = slurm ? slurm_empty / 40 * cores : local_empty / 40 * cores;
  double suite_100 = std::max(c.longest, c.total / slots) + overhead * std::ceil(double(c.jobs) / slots);
  double point_s = dse.jobs ? dse.total / double(dse.jobs) : 0;
  double dse_100 = std::max(point_s, 1000 * point_s / slots) + overhead * std::ceil(1000 / slots);
  std::cout << "DSE: " << dse.jobs << " points of ResNet-18's ten conv layers on the performance model, " << point_s
            << " s per point (" << dse_s << " s wall)\n"
            << "estimates on 100 nodes x " << cores << " cores: this suite " << suite_100
            << " s (bound by its longest job), a 1,000-point DSE sweep " << dse_100 << " s\n";
  fs::remove_all(work);
  return rc;
}
