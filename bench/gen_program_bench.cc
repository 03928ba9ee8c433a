// Constrained-random programs at scale: `--seeds` programs per config from accel::random_program,
// each run on every backend of `--backends` with per-instruction commit records. Counts programs
// that do not run to FINISH (an illegal instruction, a deadlock, a DMA outside memory: a
// generator bug) and programs whose records part from the first backend's, and prints the ISA
// coverage of all of them (accel/isa_coverage.h) with its holes. Exits 1 if any program failed.
//
//   gen_program_bench [--seeds 10000] [--length 64] [--backends fsim,rtl] [--configs default]
//                     [--constraints FILE]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "bench_util.h"
#include "loom/accel/isa_coverage.h"
#include "loom/accel/program_gen.h"
#include "loom/runtime/error.h"
#include "loom/sim/backends.h"
#include "loom/sim/commit_log.h"

using namespace loom;

int main(int argc, char** argv) {
  int seeds = 10000, length = 64;
  std::string backends = "fsim,rtl", configs = "default", constraints_path;
  try {
    for (int i = 1; i + 1 < argc; i += 2) {
      std::string a = argv[i], v = argv[i + 1];
      if (a == "--seeds")
        seeds = bench::count_option(v, "--seeds", 10000000);
      else if (a == "--length")
        length = bench::count_option(v, "--length", 100000);
      else if (a == "--backends")
        backends = v;
      else if (a == "--configs")
        configs = v;
      else if (a == "--constraints")
        constraints_path = v;
      else
        LOOM_THROW(Error, "unknown option '", a, "'");
    }
    if (argc % 2 == 0) LOOM_THROW(Error, "option '", argv[argc - 1], "' has no value");
    sim::register_backends();
    accel::ProgramConstraints c =
        constraints_path.empty() ? accel::ProgramConstraints{} : accel::ProgramConstraints::load(constraints_path);
    c.length = length;
    std::printf("gen_program_bench on %s: %d programs of %d drawn instructions per config, backends %s\n",
                bench::cpu_name().c_str(), seeds, length, backends.c_str());
    std::printf("%-10s %-8s %10s %14s %9s %11s %12s %12s\n", "config", "backend", "programs", "instructions", "failed",
                "diverged", "seconds", "programs/s");
    int bad = 0;
    for (const std::string& name : bench::split_list(configs)) {
      const accel::AccelConfig cfg =
          accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIGS_DIR) + "/" + name + ".json");
      std::map<std::string, double> seconds;
      std::map<std::string, int> failed, diverged;
      uint64_t instructions = 0;
      accel::IsaCoverage coverage;
      const std::vector<std::string> list = bench::split_list(backends);
      for (const std::string& b : list) check_accel_backend(b, cfg.to_json());
      for (int seed = 0; seed < seeds; ++seed) {
        auto scratch = make_accel_device("fsim", cfg.to_json());
        accel::Program p = accel::random_program(*scratch, cfg, c, uint64_t(seed));
        instructions += p.insn_count;
        coverage.sample(p);
        std::vector<sim::CommitRecord> first;
        for (size_t k = 0; k < list.size(); ++k) {
          auto t0 = std::chrono::steady_clock::now();
          auto dev = make_accel_device(list[k], cfg.to_json());
          std::string error;
          auto records = sim::run_recorded(
              dev.get(), list[k], [&] { accel::run_program(p, *dev); }, error);
          seconds[list[k]] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (!error.empty()) {
            if (failed[list[k]]++ < 3)
              std::fprintf(stderr, "seed %d on %s (%s): %s\n", seed, list[k].c_str(), name.c_str(), error.c_str());
            continue;
          }
          if (k == 0)
            first = std::move(records);
          else if (auto d = sim::first_divergence(first, records)) {
            if (diverged[list[k]]++ < 3)
              std::fprintf(stderr, "seed %d: %s parts from %s at instruction %u\n", seed, list[k].c_str(),
                           list[0].c_str(), d->index);
          }
        }
      }
      for (const std::string& b : list) {
        std::printf("%-10s %-8s %10d %14llu %9d %11d %12.2f %12.1f\n", name.c_str(), b.c_str(), seeds,
                    (unsigned long long)instructions, failed[b], diverged[b], seconds[b], seeds / seconds[b]);
        bad += failed[b] + diverged[b];
      }
      std::printf("%s", coverage.report().c_str());
    }
    std::printf(
        bad ? "FAILED: %d programs failed or diverged\n" : "every program ran to FINISH, the same on every backend\n",
        bad);
    return bad ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gen_program_bench: %s\n", e.what());
    return 2;
  }
}
