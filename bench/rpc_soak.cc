// A soak of one RPC server: `loom-rpc-server` in its own process on loopback, and session after
// session against it of mixed work, some clients killed (SIGKILL) at a random point:
//   - legitimate sessions, one at a time: allocations of 4 KiB to 64 MiB, copies there and back
//     (checked byte for byte), a blocked int8 matmul program (its checks must pass), and every
//     50th session an int8 MLP whose accelerator kernels run on the server (its output equal to
//     the same model on fsim in this process);
//   - every --kill-every-th session a client process (this program with --client) that works in a
//     loop until it is killed 0 to 200 ms in: before connecting, mid-handshake or mid-copy.
// It reports the server's resident memory and open descriptors after a warm-up and at the end,
// and exits 1 when a legitimate session failed or either grew past its bound (--max-rss-growth-mib,
// --max-fd-growth). The server's failed-handshake lockout is off (killed clients count as failed
// handshakes); its other limits are its defaults.
//
//   rpc_soak --server PATH/loom-rpc-server [--sessions 1000 | --seconds S] [--kill-every 5]
//            [--max-rss-growth-mib 16] [--max-fd-growth 0] [--seed 1]
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "loom/accel/config.h"
#include "loom/accel/examples.h"
#include "loom/accel/program.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "loom/sim/backends.h"

extern char** environ;

using namespace loom;
using Clock = std::chrono::steady_clock;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: rpc_soak --server PATH [--sessions N | --seconds S] [--kill-every K] "
               "[--max-rss-growth-mib M] [--max-fd-growth F] [--seed S]\n");
  return 2;
}

pid_t spawn(const std::vector<std::string>& args, int stdout_fd = -1) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(rc));
  return pid;
}

uint64_t rss_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

int open_fds(pid_t pid) {
  int n = 0;
  if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// A device of the server; one client at a time, so a killed client's session may still be ending:
// "device busy" is retried for up to 5 s.
std::unique_ptr<AccelDevice> connect(const std::string& url, const std::string& config) {
  for (auto t0 = Clock::now();;) {
    try {
      return make_accel_device(url, config);
    } catch (const DeviceError& e) {
      if (!std::strstr(e.what(), "device busy") || Clock::now() - t0 > std::chrono::seconds(5)) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

// Allocations and copies of random sizes, each checked; what a killed client does until killed.
void copies(AccelDevice& d, std::mt19937_64& rng, int rounds) {
  std::vector<uint64_t> held;
  for (int r = 0; r < rounds; ++r) {
    const uint64_t bytes = uint64_t(4096) << (rng() % 15);  // 4 KiB .. 64 MiB
    uint64_t a = d.alloc(bytes, 4096);
    std::vector<uint8_t> data(bytes), back(bytes);
    for (size_t i = 0; i < data.size(); i += 4096) data[i] = uint8_t(rng());
    d.write(a, data.data(), bytes);
    d.read(a, back.data(), bytes);
    if (data != back) throw std::runtime_error("a " + std::to_string(bytes) + "-byte copy came back different");
    if (rng() % 2) {
      d.free(a);
    } else {
      held.push_back(a);
    }
  }
  for (uint64_t a : held) d.free(a);
}

int client_main(const std::string& url, uint64_t seed) {
  std::mt19937_64 rng(seed);
  try {
    auto d = connect(url, "");
    for (;;) copies(*d, rng, 4);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rpc_soak client: %s\n", e.what());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string server_path, client_url;
  uint64_t sessions = 1000, seed = 1;
  double seconds = 0, max_rss_growth_mib = 16;
  int kill_every = 5, max_fd_growth = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--server")
      server_path = value();
    else if (a == "--client")
      client_url = value();
    else if (a == "--sessions")
      sessions = std::stoull(value());
    else if (a == "--seconds")
      seconds = std::stod(value());
    else if (a == "--kill-every")
      kill_every = std::max(1, std::stoi(value()));
    else if (a == "--max-rss-growth-mib")
      max_rss_growth_mib = std::stod(value());
    else if (a == "--max-fd-growth")
      max_fd_growth = std::stoi(value());
    else if (a == "--seed")
      seed = std::stoull(value());
    else
      return usage();
  }
  if (!client_url.empty()) return client_main(client_url, seed);
  if (server_path.empty()) return usage();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  sim::register_backends();
  const accel::AccelConfig cfg = accel::default_config();

  int out[2];
  if (pipe(out) != 0) return 1;
  const pid_t server =
      spawn({server_path, "--port", "0", "--backend", "fsim", "--max-failed-handshakes", "0", "-q"}, out[1]);
  close(out[1]);
  std::string first;
  for (char c; read(out[0], &c, 1) == 1 && c != '\n';) first += c;
  const size_t colon = first.rfind("127.0.0.1:");
  if (colon == std::string::npos) {
    std::fprintf(stderr, "rpc_soak: the server said '%s', not where it serves\n", first.c_str());
    kill(server, SIGKILL);
    return 1;
  }
  const std::string url = "rpc://127.0.0.1:" + std::to_string(std::stoi(first.substr(colon + 10))) + "/fsim";
  std::printf("rpc_soak on %s: %s (%s)\n", bench::cpu_name().c_str(), url.c_str(), first.c_str());

  // The work a legitimate session does besides copies: a program, and a small int8 model.
  auto local = make_accel_device("fsim", cfg.to_json());
  const accel::Program program = accel::matmul_program(*local, cfg, 64, 64, 64, seed);
  graph::Graph g = graph::builtin_model("mlp");
  graph::infer_types(g);
  NDArray x = NDArray::empty(g.node(g.inputs[0]).type.shape, DataType::Float(32));
  x.fill_random(seed);
  graph::BuildOptions bo;
  bo.accel = cfg;
  const runtime::ModelFile model = graph::build(graph::quantize(g, {{x}}).graph, bo).file;
  auto run_model = [&](const std::string& backend) {
    runtime::ExecutorOptions eo;
    eo.accel_backend = backend;
    auto ex = runtime::GraphExecutor::from_model_file(model, "mlp", eo);
    ex.set_input(0, x);
    ex.run();
    return ex.get_output(0);
  };
  const NDArray want = run_model("fsim");

  std::mt19937_64 rng(seed);
  uint64_t legit = 0, failed = 0, killed = 0, programs = 0, models = 0;
  auto legitimate = [&](uint64_t i) {
    ++legit;
    try {
      if (i % 50 == 7) {
        NDArray got = run_model(url);
        if (std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()) != 0)
          throw std::runtime_error("the model's output differs from the local run's");
        ++models;
      } else if (i % 3 == 1) {
        auto d = connect(url, cfg.to_json());
        accel::ProgramResult r = accel::run_program(program, *d);
        if (r.mismatched_checks) throw std::runtime_error("the program's checks failed:\n" + r.report);
        ++programs;
      } else {
        auto d = connect(url, cfg.to_json());
        copies(*d, rng, 3);
      }
    } catch (const std::exception& e) {
      ++failed;
      std::printf("session %llu failed: %s\n", (unsigned long long)i, e.what());
    }
  };
  // Warm-up: the device's whole memory touched once (so its pages are resident before the first
  // measure, and growth after it is the server's, not the simulated DRAM's), then 20 sessions.
  {
    auto d = connect(url, cfg.to_json());
    std::vector<uint64_t> all;
    std::vector<uint8_t> page(16 << 20, 1);
    try {
      for (;;) {
        all.push_back(d->alloc(page.size(), 4096));
        d->write(all.back(), page.data(), page.size());
      }
    } catch (const DeviceError&) {  // full
    }
    for (uint64_t a : all) d->free(a);
  }
  for (uint64_t i = 0; i < 20; ++i) legitimate(i);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const uint64_t rss0 = rss_kib(server);
  const int fds0 = open_fds(server);
  const auto t0 = Clock::now();
  uint64_t i = 0;
  for (;; ++i) {
    if (seconds > 0 ? Clock::now() - t0 > std::chrono::duration<double>(seconds) : i >= sessions) break;
    if (i % uint64_t(kill_every) == uint64_t(kill_every) - 1) {
      const pid_t c = spawn({argv[0], "--client", url, "--seed", std::to_string(seed + i)});
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200000));
      kill(c, SIGKILL);
      waitpid(c, nullptr, 0);
      ++killed;
    } else {
      legitimate(i + 20);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the last killed client's session ends
  const uint64_t rss1 = rss_kib(server);
  const int fds1 = open_fds(server);
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  kill(server, SIGTERM);
  int status = 0;
  waitpid(server, &status, 0);
  std::string last;
  for (char c; read(out[0], &c, 1) == 1;) last += c;
  close(out[0]);

  const double growth = (double(rss1) - double(rss0)) / 1024;
  std::printf(
      "%llu sessions in %.1f s: %llu legitimate (%llu failed; %llu programs, %llu models), %llu clients killed\n",
      (unsigned long long)i, elapsed, (unsigned long long)(legit - 20), (unsigned long long)failed,
      (unsigned long long)programs, (unsigned long long)models, (unsigned long long)killed);
  std::printf("server resident memory: %.1f MiB after the warm-up, %.1f MiB at the end (%+.1f MiB; bound %.0f)\n",
              rss0 / 1024.0, rss1 / 1024.0, growth, max_rss_growth_mib);
  std::printf("server open descriptors: %d after the warm-up, %d at the end (bound +%d)\n", fds0, fds1, max_fd_growth);
  std::printf("server: %s", last.c_str());
  const bool ok = failed == 0 && growth <= max_rss_growth_mib && fds1 - fds0 <= max_fd_growth && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0;
  std::printf("%s\n", ok ? "soak ok" : "soak FAILED");
  return ok ? 0 : 1;
}
