// Translation of lowered loop IR into an LLVM module (internal to the LLVM backend).
//
// For every LoweredFunc `f` the module gets
//   i32 @f(ptr %args)                      the exported ABI entry: unpacks args[i], calls f.compute
//   internal i32 @f.compute(ptr noalias align 64 %A, ...)   the loop nest
//   internal i32 @f.parallel.N(i64, i64, ptr closure)      one per parallel loop (loom_parallel_for[_work] body)
// Failures (asserts, parallel chunks) return a non-zero code after calling loom_set_last_error.
#pragma once
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/intrinsics.h"

#include <map>
#include <string>
#include <vector>

#include "loom/ir/stmt.h"

namespace loom::codegen::llvm_backend {

class CodeGenLLVM {
 public:
  CodeGenLLVM(llvm::Module& module, llvm::TargetMachine& tm, int vector_width);

  // Adds f's entry point, compute function and parallel bodies to the module, named after
  // `symbol` (f.name when empty); messages name f.name.
  void add_function(const ir::LoweredFunc& f, const std::string& symbol = "");
  // Adds the exported entry `name` that tail-calls the entry `target` of another module.
  void add_forwarder(const std::string& name, const std::string& target);
  // Adds the NUL-terminated metadata string `kMetadataSymbol` (for exported libraries).
  void add_metadata(const std::string& json);

 private:
  // Per-LLVM-function emission state; saved and restored around outlined parallel bodies.
  struct FunctionState {
    llvm::Function* fn = nullptr;
    std::map<const ir::VarNode*, llvm::Value*> vars;  // scalars, and buffer data vars -> pointers
    std::vector<llvm::Value*> heap_allocs;            // live loom_alloc'ed temporaries, innermost last
  };

  // ---- functions ----
  llvm::Function* new_function(const std::string& name, llvm::Type* ret, const std::vector<llvm::Type*>& params,
                               bool internal);
  void set_function_attributes(llvm::Function* fn);
  // Emits `ret code` after freeing the live heap temporaries.
  void emit_return(llvm::Value* code);
  // Calls loom_set_last_error(message) and returns `code` from the current function.
  void emit_failure(const std::string& message, int code);
  void emit_check_code(llvm::Value* code);  // returns `code` if it is non-zero

  // ---- statements ----
  void emit(const ir::Stmt& s);
  void emit_for(const ir::ForNode* op);
  void emit_serial_for(const ir::ForNode* op, llvm::Value* begin, llvm::Value* end);
  void emit_parallel_for(const ir::ForNode* op);
  void emit_store(const ir::StoreNode* op);
  void emit_allocate(const ir::AllocateNode* op);
  void emit_assert(const ir::AssertNode* op);
  void emit_if(const ir::IfThenElseNode* op);
  // A tensorized CPU operation (cpu_intrinsics.cc); false if `c` is not one the CPU has.
  bool emit_cpu_tensor_intrin(const ir::TensorIntrinCall& c);
  void emit_prefetch(const ir::LoadNode* element);  // ir::kPrefetch
  llvm::Value* intrinsic_operand(const ir::Expr& address, const std::string& where, DataType want);
  bool has_feature(const char* feature) const;  // of the target subtarget, e.g. "avx512vnni"
  bool has_vnni(int lanes) const;               // vpdpbusd / vpdpwssd on vectors of `lanes` int32
  llvm::Value* emit_pmaddwd(llvm::Value* a, llvm::Value* b, int lanes);
  llvm::Value* emit_grouped_dot(llvm::Value* a, bool a_unsigned, llvm::Value* b, int lanes, int group);

  // ---- expressions ----
  llvm::Value* emit(const ir::Expr& e);
  llvm::Value* emit_binary(const ir::Expr& e);
  llvm::Value* emit_div_mod(const ir::Expr& e, llvm::Value* a, llvm::Value* b);
  llvm::Value* emit_cast(DataType to, DataType from, llvm::Value* v);
  llvm::Value* emit_load(const ir::LoadNode* op);
  llvm::Value* emit_load_of_runs(const ir::LoadNode* op, llvm::Type* elem, llvm::Align align);
  llvm::Value* emit_call(const ir::CallNode* op);
  llvm::Value* emit_math(const ir::CallNode* op);
  llvm::Value* emit_vector_exp_f32(llvm::Value* x);
  llvm::Value* emit_vector_exp_f32_core(llvm::Value* xc);
  llvm::Value* emit_vector_sigmoid_f32(llvm::Value* x);
  llvm::Value* emit_vector_tanh_f32(llvm::Value* x);
  llvm::Value* emit_recip_finite(llvm::Value* x);
  llvm::Value* emit_lazy_select(const ir::CallNode* op);
  llvm::Value* emit_ramp(const ir::RampNode* op);
  // Element pointer(s) for a flat index: a scalar pointer, or a vector of pointers.
  llvm::Value* element_ptr(const ir::Buffer& b, llvm::Type* elem, llvm::Value* index);
  llvm::Value* buffer_ptr(const ir::Buffer& b);
  llvm::Value* lookup(const ir::VarNode* v);
  llvm::Value* to_memory(DataType t, llvm::Value* v);    // bool i1 -> i8 for stores
  llvm::Value* from_memory(DataType t, llvm::Value* v);  // i8 -> bool i1 after loads

  // ---- types and constants ----
  llvm::Type* type_of(DataType t);
  llvm::Type* memory_type_of(DataType t);  // bool is stored as a byte
  llvm::Value* const_int(DataType t, int64_t v);
  llvm::Value* splat_if_vector(llvm::Value* v, int lanes);
  llvm::Function* runtime_function(const char* name, llvm::Type* ret, const std::vector<llvm::Type*>& params);
  llvm::Function* intrinsic(llvm::Intrinsic::ID id, const std::vector<llvm::Type*>& types);
  // `unroll`: a `pragma llvm_unroll` on the loop (-1: none; 0: LLVM must not unroll it; n: by n).
  llvm::MDNode* loop_metadata(ir::ForKind kind, int64_t unroll);
  void emit_attr(const ir::AttrNode* op);

  [[noreturn]] void fail(const std::string& what);

  llvm::LLVMContext& ctx_;
  llvm::Module& module_;
  llvm::TargetMachine& tm_;
  llvm::IRBuilder<> builder_;
  int vector_width_;
  std::string func_name_;  // LoweredFunc being translated (for messages)
  std::string symbol_;     // and the name its LLVM functions take
  int parallel_count_ = 0;
  FunctionState state_;
  // Loops under `pragma llvm_unroll` and their factor, set by emit_attr for emit_serial_for.
  std::unordered_map<const ir::ForNode*, int64_t> unroll_pragmas_;
  // Parallel loops' work hints (attr "parallel_work"): called through loom_parallel_for_work.
  std::unordered_map<const ir::ForNode*, int64_t> parallel_work_;
  // Parallel loops under `pragma alternate_order`: called through loom_parallel_for_alternating.
  std::unordered_set<const ir::ForNode*> alternating_;
  llvm::Type* i1_;
  llvm::Type* i8_;
  llvm::Type* i32_;
  llvm::Type* i64_;
  llvm::PointerType* ptr_;
};

}  // namespace loom::codegen::llvm_backend
