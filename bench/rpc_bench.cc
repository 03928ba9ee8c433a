// The RPC device on loopback, over plain TCP and over TLS (two servers), against the same device in
// process (baseline in the same run):
//   - register round trip (µs per read_reg) remote vs local;
//   - copy throughput host -> device -> host (GB/s) for 4 KiB ... 64 MiB;
//   - one int8 ResNet-18 inference (built-in, 224x224 unless --image) with its int8 layers on the
//     accelerator's functional simulator, remote vs local: the ratio is the remote overhead
//     (target <= 1.10); the outputs must be equal (else exit 1).
//
//   rpc_bench [--image 224] [--reps 5] [--max-overhead 1.10]
// Exits 3 when a whole-model overhead exceeds --max-overhead.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/accel/config.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/rpc.h"
#include "loom/sim/backends.h"

using namespace loom;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <typename F>
double best_of(int reps, F f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int image = 224, reps = 5;
  double max_overhead = 1.10;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--image" && i + 1 < argc)
      image = std::atoi(argv[++i]);
    else if (a == "--reps" && i + 1 < argc)
      reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--max-overhead" && i + 1 < argc)
      max_overhead = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: rpc_bench [--image N] [--reps N] [--max-overhead R]\n");
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  sim::register_backends();
  std::string config = accel::default_config().to_json();
  rpc::ServerOptions so;
  so.port = 0;
  so.config_json = config;
  rpc::Server server(so);
  // The TLS server: a key pair made for this run, the client pinned to its fingerprint.
  const std::filesystem::path keys = std::filesystem::temp_directory_path() / ("rpc_bench_" + std::to_string(getpid()));
  std::filesystem::create_directories(keys);
  so.tls_cert = (keys / "server.crt").string();
  so.tls_key = (keys / "server.key").string();
  const std::string fp = rpc::write_key_pair(so.tls_key, so.tls_cert, {});
  rpc::Server tls_server(so);
  std::filesystem::remove_all(keys);
  for (rpc::Server* s : {&server, &tls_server}) {
    s->set_log([](const std::string& line) {
      if (line.find("said goodbye") == std::string::npos && line.find("connected") == std::string::npos)
        std::fprintf(stderr, "rpc server: %s\n", line.c_str());
    });
    s->start();
  }
  std::string url = "rpc://127.0.0.1:" + std::to_string(server.port()) + "/fsim";
  std::string tls_url = "rpc+tls://127.0.0.1:" + std::to_string(tls_server.port()) + "/fsim?fp=" + fp;
  std::printf("rpc_bench on %s: %s and over TLS (loopback) vs fsim in process\n\n", bench::cpu_name().c_str(),
              url.c_str());

  double rtt = 0;
  {
    auto local = make_accel_device("fsim", config);
    auto remote = make_accel_device(url, config);
    auto secure = make_accel_device(tls_url, config);
    const int n = 2000;
    auto round_trip = [&](AccelDevice& d) {
      return best_of(3,
                     [&] {
                       for (int k = 0; k < n; ++k) d.read_reg(0x04);
                     }) /
             n;
    };
    double tl = round_trip(*local), tr = round_trip(*remote), ts = round_trip(*secure);
    rtt = tr;
    std::printf("register round trip: remote %.1f us, TLS %.1f us, local %.3f us\n\n", tr * 1e6, ts * 1e6, tl * 1e6);
    std::printf("%-10s %14s %14s %14s\n", "copy", "remote GB/s", "TLS GB/s", "local GB/s");
    for (uint64_t bytes = 4096; bytes <= (uint64_t(64) << 20); bytes *= 4) {
      std::vector<uint8_t> h(bytes, 1), back(bytes);
      uint64_t al = local->alloc(bytes, 4096), ar = remote->alloc(bytes, 4096), as = secure->alloc(bytes, 4096);
      int r = bytes < (1 << 20) ? 200 : 5;
      auto gbps = [&](AccelDevice& d, uint64_t a) {
        double t = best_of(3, [&] {
          for (int k = 0; k < r; ++k) {
            d.write(a, h.data(), bytes);
            d.read(a, back.data(), bytes);
          }
        });
        return 2.0 * bytes * r / t / 1e9;
      };
      std::printf(
          "%-10s %14.3f %14.3f %14.3f\n",
          (bytes >= (1 << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB").c_str(),
          gbps(*remote, ar), gbps(*secure, as), gbps(*local, al));
      local->free(al);
      remote->free(ar);
      secure->free(as);
    }
  }

  graph::Graph g = graph::builtin_model("resnet18", 1, image);
  graph::infer_types(g);
  std::vector<std::vector<NDArray>> cal;
  for (int i = 0; i < 2; ++i) {
    NDArray x = NDArray::empty(g.node(g.inputs[0]).type.shape, DataType::Float(32));
    x.fill_random(100 + i);
    cal.push_back({x});
  }
  graph::Graph q = graph::quantize(g, cal).graph;
  graph::BuildOptions bo;
  bo.accel = accel::default_config();
  runtime::ModelFile file = graph::build(q, bo).file;
  NDArray x = NDArray::empty(g.node(g.inputs[0]).type.shape, DataType::Float(32));
  x.fill_random(7);
  auto executor = [&](const std::string& backend) {
    runtime::ExecutorOptions eo;
    eo.accel_backend = backend;
    auto ex = runtime::GraphExecutor::from_model_file(file, "resnet18", eo);
    ex.set_input(0, x);
    return ex;
  };
  auto local = executor("fsim"), remote = executor(url), secure = executor(tls_url);
  double tl = 1e30, tr = 1e30, ts = 1e30;
  for (int r = 0; r < reps; ++r) {  // alternating, so all see the same machine
    tl = std::min(tl, best_of(1, [&] { local.run(); }));
    tr = std::min(tr, best_of(1, [&] { remote.run(); }));
    ts = std::min(ts, best_of(1, [&] { secure.run(); }));
  }
  NDArray yl = local.get_output(0), yr = remote.get_output(0), ys = secure.get_output(0);
  uint64_t before = server.stats().requests;
  remote.run();
  uint64_t requests = server.stats().requests - before;
  remote = executor("fsim");  // the remote clients say goodbye before the servers stop
  secure = executor("fsim");
  auto same = [](const NDArray& a, const NDArray& b) {
    return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
  };
  bool equal = same(yl, yr) && same(yl, ys);
  double overhead = std::max(tr, ts) / tl;
  std::printf(
      "\nresnet18 int8 %dx%d on fsim, best of %d alternating: remote %.1f ms, TLS %.1f ms, local %.1f ms, "
      "remote/local %.3f, TLS/local %.3f (target <= %.2f)%s\n",
      image, image, reps, tr * 1e3, ts * 1e3, tl * 1e3, tr / tl, ts / tl, max_overhead,
      equal ? "" : "; OUTPUTS DIFFER");
  std::printf(
      "one remote inference: %llu requests, at the measured round trip %.1f ms of transport (%.2f%% of the "
      "local run)\n",
      (unsigned long long)requests, requests * rtt * 1e3, 100.0 * requests * rtt / tl);
  server.stop();
  tls_server.stop();
  if (!equal) return 1;
  return overhead > max_overhead ? 3 : 0;
}
