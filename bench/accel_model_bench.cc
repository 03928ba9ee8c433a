// Whole-model accelerator bench: the built-in ResNet-18 (batch 1, 224x224, deterministic random
// weights) quantized to int8 and compiled with its int8 layers on the accelerator, for each
// config given; then one inference on the functional simulator and one on the cycle-accurate RTL
// simulation. Printed: accelerator cycles (convolutions, residual adds, total), average GEMM
// utilization of the convolutions, host time of the CPU kernels, and wall time of each simulator
// for one inference. Baselines in the same run: the CPU int8 model (the accelerator's output must
// equal it bit for bit, else exit 1) and, as fixed reference figures, VTA's ~7.7 M cycles for the
// conv layers and ~228 s of tsim for one inference. With --systemc, the same inference on the
// SystemC platform too (same memory timing: its cycles must equal the RTL's; its wall time against
// the RTL's, target overhead <= 30%), and on its banked DRAM model (the cycles it costs); then the
// RTL with a timeline (--trace, target <= 2x) and fsim against the RTL with commit records
// (--compare), each against the plain RTL run. Each config's model is quantized at its precision
// (graph::follow_targets: a W4A8 config's layers get 4-bit weights) against a CPU model at the
// same widths; the weights' DMA bytes are printed beside the cycles, and with --agreement N the
// quantized model's agreement with the float model (cosine of the logits, top-1) on N held-out
// uniform(-1, 1) inputs at that precision. --weight-exponents tensor|channel|auto chooses the
// weights' power-of-two steps (QuantizeOptions::weight_exponents; auto: per channel below 8 bits).
// A config named NAME+mixed (with --mixed-precision COSINE) is NAME with mixed precision: the
// layers widened to 8 bits (run in passes) chosen by graph::choose_weight_bits for that agreement
// on the calibration inputs, beside NAME all narrow in the same run.
//
//   accel_model_bench [--configs default,1x32x32] [--image 224] [--no-rtl] [--systemc]
//                     [--max-rtl-seconds 30] [--max-fsim-seconds 2] [--max-conv-cycles 7.7e6]
//                     [--max-perf-error 2] [--agreement 100] [--weight-exponents auto]
//                     [--configs default,w4a8,w4a8+mixed --mixed-precision 0.99]
// The performance model's backend ("perf") runs the same inference after the RTL: its cycles
// against the RTL's (percent), its wall time (fsim's execution and the model) against the RTL's.
// Exits 1 on a mismatch or when the default config misses a given maximum.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "bench_util.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/quantize.h"
#include "loom/regress/compare.h"
#include "loom/runtime/graph_executor.h"
#include "loom/sim/commit_log.h"

using namespace loom;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Figures {
  uint64_t conv_cycles = 0, add_cycles = 0, dense_cycles = 0, conv_macs = 0, dma_bytes = 0, dma_wgt_bytes = 0;
  double cpu_ms = 0, wall = 0;
  NDArray out;
};

Figures run(const runtime::ModelFile& file, const std::string& backend, const std::vector<NDArray>& in,
            const graph::Graph& built, const std::string& config_json = "",
            std::vector<sim::CommitRecord>* commits = nullptr) {
  std::map<std::string, std::string> op_of;
  for (auto& n : built.nodes) op_of[n.name] = n.op;
  runtime::ExecutorOptions eo;
  eo.accel_backend = backend;
  eo.accel_config_json = config_json;
  auto ex = runtime::GraphExecutor::from_model_file(file, "resnet18", eo);
  auto* log = commits ? dynamic_cast<sim::CommitLogSource*>(ex.accel_device()) : nullptr;
  if (log) log->record_commits(true);
  Figures f;
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < in.size(); ++i) ex.set_input(i, in[i]);
  std::vector<double> times = ex.run_profiled();
  if (log) *commits = log->take_commits();
  f.wall = seconds_since(t0);
  f.out = ex.get_output(0);
  for (size_t k = 0; k < ex.kernels().size(); ++k) {
    const auto& call = ex.kernels()[k];
    const auto& s = ex.accel_stats()[k];
    f.dma_bytes += s.dma_bytes;
    f.dma_wgt_bytes += s.dma_wgt_bytes;
    if (call.device != runtime::KernelDevice::Accel) {
      f.cpu_ms += times[k] * 1e3;
    } else if (op_of[call.node] == "accel_add") {
      f.add_cycles += s.cycles;
    } else if (op_of[call.node] == "accel_dense") {
      f.dense_cycles += s.cycles;
    } else {
      f.conv_cycles += s.cycles;
      f.conv_macs += s.gemm_macs;
    }
  }
  return f;
}

bool same(const NDArray& a, const NDArray& b) { return regress::compare_arrays(a, b).equal(); }

}  // namespace

int main(int argc, char** argv) {
  std::string configs = "default,1x32x32";
  int64_t image = 224;
  bool rtl = true, systemc = false;
  double max_rtl = 0, max_fsim = 0, max_conv = 0, max_perf_error = 0;
  int agreement = 0;
  auto weight_exponents = graph::QuantizeOptions::WeightExponents::Auto;
  double mixed_budget = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--configs")
      configs = next();
    else if (a == "--image")
      image = std::stoll(next());
    else if (a == "--no-rtl")
      rtl = false;
    else if (a == "--systemc")
      systemc = true;
    else if (a == "--max-rtl-seconds")
      max_rtl = std::stod(next());
    else if (a == "--max-fsim-seconds")
      max_fsim = std::stod(next());
    else if (a == "--max-conv-cycles")
      max_conv = std::stod(next());
    else if (a == "--max-perf-error")
      max_perf_error = std::stod(next());
    else if (a == "--agreement")
      agreement = std::stoi(next());
    else if (a == "--weight-exponents")
      weight_exponents = graph::parse_weight_exponents(next());
    else if (a == "--mixed-precision")
      mixed_budget = std::stod(next());
    else {
      std::cerr << "accel_model_bench: unknown option '" << a << "'\n";
      return 2;
    }
  }
  std::printf("accel_model_bench: ResNet-18 int8, batch 1, %lldx%lld, on %s (simulators single-threaded)\n",
              (long long)image, (long long)image, bench::cpu_name().c_str());
  graph::Graph g = graph::builtin_model("resnet18", 1, image);
  std::vector<std::vector<NDArray>> calib;
  for (int i = 0; i < 4; ++i) {
    NDArray x = NDArray::empty({1, 3, image, image}, DataType::Float(32));
    x.fill_random(100 + i);
    calib.push_back({x});
  }
  NDArray x = NDArray::empty({1, 3, image, image}, DataType::Float(32));
  x.fill_random(7);
  std::vector<std::vector<NDArray>> held_out;
  for (int i = 0; i < agreement; ++i) {
    NDArray h = NDArray::empty({1, 3, image, image}, DataType::Float(32));
    h.fill_random(1000 + uint64_t(i), -1, 1);
    held_out.push_back({h});
  }
  // Per precision: the quantized graph and its CPU model's output (the accelerator's reference).
  struct AtPrecision {
    graph::Graph q;
    NDArray want;
  };
  std::map<std::string, AtPrecision> models;
  auto model_at = [&](const graph::BuildOptions& bo, bool mixed) -> AtPrecision& {
    graph::QuantizeOptions qo;
    qo.weight_exponents = weight_exponents;
    graph::follow_targets(qo, bo);
    const std::string key = qo.precision() + (mixed ? "+mixed" : "");
    auto it = models.find(key);
    if (it != models.end()) return it->second;
    if (mixed) {
      auto t0 = std::chrono::steady_clock::now();
      graph::WeightBitsChoice choice =
          graph::choose_weight_bits(g, calib, qo, bo.accel->weight_widths().back(), mixed_budget);
      std::printf("\n%s, mixed for a calibration cosine of %g (%.1f s):\n%s", qo.precision().c_str(), mixed_budget,
                  seconds_since(t0), choice.str().c_str());
      qo.layer_weight_bits = choice.layer_weight_bits;
    }
    graph::QuantizeResult r =
        agreement > 0 ? graph::quantize_checked(g, calib, held_out, qo) : graph::quantize(g, calib, qo);
    if (r.report) {
      const graph::OutputAgreement& o = r.report->judged().outputs.at(0);
      std::printf(
          "\n%s, weight steps per %s: agreement with the float model on %d held-out inputs: cosine %.4f, "
          "top-1 %.0f%%\n",
          qo.precision().c_str(), qo.channel_exponents() ? "channel" : "tensor", agreement, o.cosine, 100.0 * o.top1);
    }
    auto cpu_file = graph::build(r.graph).file;
    auto cpu = runtime::GraphExecutor::from_model_file(cpu_file, "resnet18 cpu " + qo.precision());
    NDArray want = cpu.run({x})[0];
    return models[key] = {std::move(r.graph), want};
  };
  int rc = 0;
  for (const std::string& name : bench::split_list(configs)) {
    const size_t plus = name.find("+mixed");
    const bool mixed = plus != std::string::npos && plus + 6 == name.size();
    const std::string file = mixed ? name.substr(0, plus) : name;
    accel::AccelConfig cfg = file == "default"
                                 ? accel::default_config()
                                 : accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + file + ".json");
    if (mixed && (!(mixed_budget > 0) || cfg.weight_widths().size() < 2)) {
      std::cerr << "accel_model_bench: '" << name << "' needs --mixed-precision COSINE and a config whose weights are "
                << "narrower than 8 bits\n";
      return 2;
    }
    graph::BuildOptions bo;
    bo.accel = cfg;
    const AtPrecision& m = model_at(bo, mixed);
    const graph::Graph& q = m.q;
    const NDArray& want = m.want;
    auto t0 = std::chrono::steady_clock::now();
    graph::BuildResult r = graph::build(q, bo);
    double compile_s = seconds_since(t0);
    Figures fs = run(r.file, "fsim", {x}, r.graph);
    bool ok = same(fs.out, want);
    std::printf("\n[%s] %s: %d layers on the accelerator, image %.1f MiB, compiled in %.2f s\n", name.c_str(),
                cfg.precision().c_str(), r.accel_report.offloaded, r.file.accel_image.size() / 1048576.0, compile_s);
    std::printf("  fsim: %.3f s per inference (target < 2 s), output %s the CPU int8 model\n", fs.wall,
                ok ? "equals" : "DIFFERS FROM");
    if (!ok) rc = 1;
    if (name == "default" && max_fsim > 0 && fs.wall > max_fsim) rc = 1;
    if (!rtl) continue;
    Figures fr = run(r.file, "rtl", {x}, r.graph);
    bool rok = same(fr.out, want);
    if (!rok) rc = 1;
    double peak = double(cfg.batch) * cfg.block_in * cfg.block_out;
    uint64_t total = fr.conv_cycles + fr.add_cycles + fr.dense_cycles;
    std::printf(
        "  rtl:  %.2f s per inference (target < 30 s; VTA tsim ~228 s: %.1fx faster), output %s the CPU int8 model\n",
        fr.wall, 228.0 / fr.wall, rok ? "equals" : "DIFFERS FROM");
    std::printf(
        "  cycles: conv layers %.3f M (VTA ~7.7 M: %.2fx), residual adds %.3f M, classifier %.3f M, whole network on "
        "the accelerator %.3f M\n",
        fr.conv_cycles / 1e6, fr.conv_cycles ? 7.7e6 / double(fr.conv_cycles) : 0.0, fr.add_cycles / 1e6,
        fr.dense_cycles / 1e6, total / 1e6);
    std::printf(
        "  conv GEMM utilization (MAC-weighted): %.1f%%; CPU kernels (first conv, pools, packs): %.2f ms host time\n",
        fr.conv_cycles ? 100.0 * double(fr.conv_macs) / (peak * double(fr.conv_cycles)) : 0.0, fr.cpu_ms);
    std::printf("  DMA: %.2f MiB, of which weights %.2f MiB\n", fr.dma_bytes / 1048576.0, fr.dma_wgt_bytes / 1048576.0);
    if (name == "default" &&
        ((max_rtl > 0 && fr.wall > max_rtl) || (max_conv > 0 && double(fr.conv_cycles) > max_conv)))
      rc = 1;
    // The performance model (backend "perf": fsim's results, the model's cycles) on the same inference.
    Figures fp = run(r.file, "perf", {x}, r.graph);
    uint64_t perf_total = fp.conv_cycles + fp.add_cycles + fp.dense_cycles;
    double perf_err = 100.0 * (double(perf_total) - double(total)) / double(total);
    auto err = [](uint64_t model, uint64_t rtl) {
      return rtl ? 100.0 * (double(model) - double(rtl)) / double(rtl) : 0.0;
    };
    double conv_err = err(fp.conv_cycles, fr.conv_cycles);
    std::printf(
        "  perf: %.3f s per inference (%.0fx faster than the rtl run), whole network %.3f M cycles: %+.2f%% against "
        "the RTL (conv layers %+.2f%%, residual adds %+.2f%%, classifier %+.2f%%), output %s the CPU int8 model\n",
        fp.wall, fr.wall / fp.wall, perf_total / 1e6, perf_err, conv_err, err(fp.add_cycles, fr.add_cycles),
        err(fp.dense_cycles, fr.dense_cycles), same(fp.out, want) ? "equals" : "DIFFERS FROM");
    if (!same(fp.out, want) || (max_perf_error > 0 && std::abs(perf_err) > max_perf_error)) rc = 1;
    if (!systemc) continue;
    const std::string json = cfg.to_json();
    auto with = [&](const std::string& o) { return json.substr(0, json.rfind('}')) + ", \"systemc\": " + o + "}"; };
    Figures fc = run(r.file, "systemc", {x}, r.graph, with("{}"));
    const bool same_cycles =
        fc.conv_cycles == fr.conv_cycles && fc.add_cycles == fr.add_cycles && fc.dense_cycles == fr.dense_cycles;
    const bool cok = same(fc.out, want);
    if (!cok || !same_cycles) rc = 1;
    std::printf(
        "  systemc: %.2f s per inference, %.2fx the rtl backend's (target <= 1.30), cycles %s the rtl's, output "
        "%s the CPU int8 model\n",
        fc.wall, fc.wall / fr.wall, same_cycles ? "equal" : "DIFFER FROM", cok ? "equals" : "DIFFERS FROM");
    Figures fb = run(r.file, "systemc", {x}, r.graph, with(R"({"memory": "banked"})"));
    if (!same(fb.out, want)) rc = 1;
    const uint64_t banked = fb.conv_cycles + fb.add_cycles + fb.dense_cycles;
    std::printf(
        "  systemc, banked DRAM (8 banks, 2 KiB rows, hit 20 / miss 44 cycles) instead of a fixed 32-cycle "
        "latency: %.3f M cycles (%+.1f%%), conv layers %.3f M\n",
        banked / 1e6, 100.0 * (double(banked) / double(total) - 1), fb.conv_cycles / 1e6);
    // Timeline and commit-record overheads, against the plain rtl run above.
    const std::string trace = "/tmp/accel_model_bench_trace.json";
    const std::string rtl_json = json.substr(0, json.rfind('}')) + ", \"rtl\": {\"trace\": \"" + trace + "\"}}";
    Figures ft = run(r.file, "rtl", {x}, r.graph, rtl_json);
    std::remove(trace.c_str());
    std::printf("  rtl with --trace: %.2f s per inference, %.2fx the plain rtl run (target <= 2)\n", ft.wall,
                ft.wall / fr.wall);
    std::vector<sim::CommitRecord> ca, cb;
    Figures fa = run(r.file, "fsim", {x}, r.graph, "", &ca);
    Figures fb2 = run(r.file, "rtl", {x}, r.graph, "", &cb);
    const bool agree = !sim::first_divergence(ca, cb).has_value();
    if (!agree) rc = 1;
    std::printf(
        "  --compare fsim,rtl: %.2f s (fsim %.2f + rtl %.2f s with commit records), %.2fx the plain rtl run; %zu "
        "instruction records, %s\n",
        fa.wall + fb2.wall, fa.wall, fb2.wall, (fa.wall + fb2.wall) / fr.wall, cb.size(),
        agree ? "no divergence" : "DIVERGENT");
  }
  return rc;
}
