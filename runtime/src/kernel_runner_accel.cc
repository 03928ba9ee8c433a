// The accelerator's kernel runner: streams of the model's accelerator image on the AccelDevice of
// ExecutorOptions::accel_backend, values copied into the image before a stream and back after it.
#include <chrono>

#include "kernel_runner.h"
#include "loom/runtime/accel_image.h"
#include "loom/runtime/error.h"
#include "loom/runtime/packed_elements.h"

namespace loom::runtime {

class AccelRunner final : public KernelRunner {
 public:
  explicit AccelRunner(const RunnerInputs& in) : kernels_(in.plan.kernels), host_(in.host) {
    for (const ExecutorValue& v : in.plan.values)
      values_.push_back({v.name, v.accel_offset, v.accel_nbytes(), v.accel_bits, v.dtype.bits(),
                         v.accel_bits ? v.nbytes() / uint64_t(v.dtype.bytes()) : 0});
    if (in.file.accel_image.empty())
      LOOM_THROW(ModelError, in.origin, ": accelerator kernels but no accelerator image");
    image_ = AccelImage::parse(in.file.accel_image, in.origin);
    std::string cfg = in.options.accel_config_json.empty() ? image_.config_json : in.options.accel_config_json;
    device_ = make_accel_device(in.options.accel_backend, cfg);
    loaded_ = std::make_unique<LoadedAccelImage>(*device_, image_);
    stats_.resize(kernels_.size());
    for (const KernelCall& call : kernels_) {
      if (call.device != KernelDevice::Accel) continue;
      if (size_t(call.accel_stream) >= image_.streams.size())
        LOOM_THROW(ModelError, in.origin, ": node '", call.node, "' runs accelerator stream ", call.accel_stream,
                   " of ", image_.streams.size());
      for (int id : call.args) {
        const Value& v = values_[size_t(id)];
        if (v.offset < 0)
          LOOM_THROW(ModelError, in.origin, ": accelerator node '", call.node, "' reads '", v.name,
                     "', which is not in the image");
        loaded_->address(uint64_t(v.offset), v.nbytes);  // bounds
      }
      for (const auto* list : {&call.upload, &call.download})
        for (int id : *list) {
          const char* copies = list == &call.upload ? "uploads" : "downloads";
          if (!host_[size_t(id)])
            LOOM_THROW(ModelError, in.origin, ": node '", call.node, "' ", copies, " '", values_[size_t(id)].name,
                       "', which has no host copy");
          if (values_[size_t(id)].offset < 0)
            LOOM_THROW(ModelError, in.origin, ": node '", call.node, "' ", copies, " '", values_[size_t(id)].name,
                       "', which is not in the image");
          loaded_->address(uint64_t(values_[size_t(id)].offset), values_[size_t(id)].nbytes);  // bounds
        }
    }
  }
  void run(size_t first, size_t last) override {
    for (size_t k = first; k < last; ++k) call(k);
  }

  void run_profiled(size_t first, size_t last, std::vector<double>& seconds) override {
    for (size_t k = first; k < last; ++k) {
      call(k);
      seconds.push_back(stats_[k].seconds);
    }
  }

  // The host copy a value is uploaded from and downloaded to moves with it.
  bool repoint(int id, void* data) override {
    host_.at(size_t(id)) = data;
    return true;
  }

  AccelDevice& device() { return *device_; }
  const std::vector<AccelKernelStats>& stats() const { return stats_; }

 private:
  struct Value {
    std::string name;
    int64_t offset;
    uint64_t nbytes;  // in the image
    int bits = 0;     // packed there at this width (0: as the host holds it)
    int host_bits = 8;
    uint64_t elements = 0;
  };

  // Host -> image; narrow values packed (a value outside their width is a model error, never clamped).
  void upload(const Value& v, const void* host, const std::string& node) {
    if (!v.bits) return device_->write(loaded_->address(uint64_t(v.offset), v.nbytes), host, v.nbytes);
    packed_.resize(v.nbytes);
    int64_t bad = pack_from_container(host, v.host_bits, v.elements, v.bits, packed_.data());
    if (bad >= 0)
      LOOM_THROW(ModelError, "accelerator kernel for node '", node, "': '", v.name, "' holds ",
                 packed_element(static_cast<const uint8_t*>(host), size_t(bad), v.host_bits), " at element ", bad,
                 ", outside the ", v.bits, "-bit range the accelerator holds it in");
    device_->write(loaded_->address(uint64_t(v.offset), v.nbytes), packed_.data(), v.nbytes);
  }
  void download(const Value& v, void* host) {
    if (!v.bits) return device_->read(loaded_->address(uint64_t(v.offset), v.nbytes), host, v.nbytes);
    packed_.resize(v.nbytes);
    device_->read(loaded_->address(uint64_t(v.offset), v.nbytes), packed_.data(), v.nbytes);
    unpack_to_container(packed_.data(), v.bits, v.elements, v.host_bits, host);
  }

  void call(size_t k) {
    auto t0 = std::chrono::steady_clock::now();
    const KernelCall& c = kernels_[k];
    for (int id : c.upload) upload(values_[size_t(id)], host_[size_t(id)], c.node);
    try {
      loaded_->run(size_t(c.accel_stream));
    } catch (const DeviceError& e) {
      LOOM_THROW(DeviceError, "accelerator kernel for node '", c.node, "' on ", device_->name(), ": ", e.what());
    }
    for (int id : c.download) download(values_[size_t(id)], host_[size_t(id)]);
    AccelKernelStats& s = stats_[k];
    std::vector<uint64_t> n = device_->run_counters();  // one batch (one round trip on a remote device)
    auto counter = [&](AccelCounter which) { return n[1 + size_t(which)]; };
    s.cycles = n[0];
    s.gemm_macs = counter(AccelCounter::GemmMacs);
    s.dma_bytes = counter(AccelCounter::DmaLoadBytesInp) + counter(AccelCounter::DmaLoadBytesWgt) +
                  counter(AccelCounter::DmaLoadBytesAcc) + counter(AccelCounter::DmaLoadBytesUop) +
                  counter(AccelCounter::DmaStoreBytes);
    s.dma_wgt_bytes = counter(AccelCounter::DmaLoadBytesWgt);
    s.counters.assign(n.begin() + 1, n.end());
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  std::vector<KernelCall> kernels_;
  std::vector<void*> host_;
  std::vector<Value> values_;
  std::unique_ptr<AccelDevice> device_;  // declared before the image placed on it, so freed after it
  AccelImage image_;
  std::unique_ptr<LoadedAccelImage> loaded_;
  std::vector<AccelKernelStats> stats_;
  std::vector<uint8_t> packed_;  // staging for narrow values
};

std::shared_ptr<AccelRunner> make_accel_runner(const RunnerInputs& in) { return std::make_shared<AccelRunner>(in); }
KernelRunner& as_runner(AccelRunner& r) { return r; }
AccelDevice& accel_device(AccelRunner& r) { return r.device(); }
const std::vector<AccelKernelStats>& accel_stats(const AccelRunner& r) { return r.stats(); }

}  // namespace loom::runtime
