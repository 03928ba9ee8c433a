// Walks a lowered accelerator function with concrete loop values and emits driver calls
// (internal to the accelerator backend).
#pragma once
#include <array>
#include <map>
#include <string>
#include <vector>
#include <optional>

#include "loom/accel/driver.h"
#include "loom/ir/stmt.h"

namespace loom::codegen::accel_backend {

class Emitter {
 public:
  Emitter(accel::Driver& drv, std::map<const ir::BufferNode*, accel::DeviceBuffer> dram, std::string func_name);
  void run(const ir::Stmt& body);

 private:
  struct Sram {
    accel::MemType mem;
    uint32_t base = 0, entries = 0;
    bool dead = false;  // reused in place by a later stage
  };
  struct Operand {  // an element address: on chip (entry index) or in device memory (bytes)
    const ir::BufferNode* buffer = nullptr;
    const Sram* sram = nullptr;
    int64_t element = 0;
    uint64_t dram_addr = 0;
  };
  struct Dim {
    int64_t extent, dst_stride, src_stride, before, after;
  };
  struct TwoD {
    std::array<int64_t, 5> x, y;  // extent, dst stride, src stride, pad before, pad after
    bool has_y;
  };
  TwoD two_d(const std::vector<Dim>& dims, int64_t entry, const std::string& what) const;

  void exec(const ir::Stmt& s);
  void exec_for(const ir::ForNode* op);
  void exec_allocate(const ir::AllocateNode* op);
  void exec_call(const ir::CallNode* call);
  void dma_copy(const ir::CallNode* call);
  void load(const Operand& dst, const Operand& src, std::vector<Dim> dims);
  void store(const Operand& dst, const Operand& src, std::vector<Dim> dims);
  void gemm(const ir::CallNode* call, const std::vector<const ir::ForNode*>& loops);
  bool try_fold_gemm(const ir::ForNode* op);
  void alu_nest(const ir::Stmt& nest);

  int64_t eval(const ir::Expr& e) const;
  Operand operand(const ir::Expr& address_of) const;
  uint32_t entry_of(const Operand& o, const char* what) const;
  int elements_per_entry(accel::MemType m) const;
  void go(accel::Module next);  // serializes modules with dependency tokens
  [[noreturn]] void fail(const std::string& what) const;

  accel::Driver& drv_;
  const accel::AccelConfig& c_;
  std::map<const ir::BufferNode*, accel::DeviceBuffer> dram_;
  std::map<const ir::BufferNode*, Sram> sram_;
  std::map<const ir::VarNode*, int64_t> env_;
  uint32_t top_[3] = {0, 0, 0};  // bump allocators: inp, wgt, acc
  std::optional<accel::Module> last_;
  std::string func_;
};

}  // namespace loom::codegen::accel_backend
