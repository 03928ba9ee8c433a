// Compute module: executes LOAD of micro-ops and accumulators, GEMM, ALU and FINISH in program
// order, synchronized with the load module (previous) and the store module (next) by dependency
// tokens. Owns the micro-op and accumulator scratchpads; reads inputs/weights, writes outputs.
module loom_compute #(
    parameter int QueueDepth = 32,
    localparam int InpAW = loom_accel_pkg::INP_IDX_BITS,
    localparam int WgtAW = loom_accel_pkg::WGT_IDX_BITS,
    localparam int AccAW = loom_accel_pkg::ACC_IDX_BITS,
    localparam int OutAW = loom_accel_pkg::OUT_IDX_BITS,
    localparam int UopAW = loom_accel_pkg::UOP_IDX_BITS,
    localparam int InpEW = loom_accel_pkg::INP_ENTRY_BYTES * 8,
    localparam int WgtEW = loom_accel_pkg::WGT_ENTRY_BYTES * 8,
    localparam int AccEW = loom_accel_pkg::ACC_ENTRY_BYTES * 8,
    localparam int OutEW = loom_accel_pkg::OUT_ENTRY_BYTES * 8
) (
    input  logic clk_i,
    input  logic rst_ni,
    input  logic halt_i,
    input  logic                         q_push_i,
    input  loom_accel_pkg::queue_entry_t q_data_i,
    output logic                         q_full_o,
    input  loom_accel_pkg::tokens_t      tokens_i,
    output loom_accel_pkg::token_ops_t   token_ops_o,
    output logic        busy_o,
    output logic        stalled_o,
    output logic        idle_o,
    output logic [31:0] wait_index_o,
    output logic        fault_o,
    output logic [7:0]  fault_code_o,
    output logic        finish_done_o,
    // counter pulses
    output logic uop_load_started_o,
    output logic acc_load_started_o,
    output logic gemm_started_o,
    output logic alu_started_o,
    output logic uop_entry_o,
    output logic acc_entry_o,
    output logic mac_step_o,
    output logic alu_step_o,
    output logic reset_step_o,
    output logic alu_vec_step_o,
    output logic acc_pad_entry_o,  // an accumulator entry a LOAD filled with zeros
    // scratchpads owned by other modules
    output logic [InpAW-1:0] inp_raddr_o,
    input  logic [InpEW-1:0] inp_rdata_i,
    output logic [WgtAW-1:0] wgt_raddr_o,
    input  logic [WgtEW-1:0] wgt_rdata_i,
    output logic             out_we_o,
    output logic [OutAW-1:0] out_waddr_o,
    output logic [OutEW-1:0] out_wdata_o,
    // two AXI4 read requesters: micro-ops, accumulators
    output loom_accel_pkg::axi_rd_req_t axi_uop_req_o,
    input  loom_accel_pkg::axi_rd_rsp_t axi_uop_rsp_i,
    output loom_accel_pkg::axi_rd_req_t axi_acc_req_o,
    input  loom_accel_pkg::axi_rd_rsp_t axi_acc_rsp_i
);
  logic exec_start, exec_done;
  logic [loom_accel_pkg::INSN_BITS-1:0] insn;
  logic [31:0] index;
  loom_seq #(
      .QueueDepth(QueueDepth)
  ) seq (
      .clk_i,
      .rst_ni,
      .halt_i,
      .q_push_i,
      .q_data_i,
      .q_full_o,
      .tokens_i,
      .token_ops_o,
      .exec_start_o(exec_start),
      .insn_o      (insn),
      .index_o     (index),
      .exec_done_i (exec_done),
      .busy_o,
      .stalled_o,
      .idle_o,
      .wait_index_o
  );

  // ---- decode ----
  wire [2:0] opcode = insn[2:0];
  logic [2:0] mem_type;
  logic [loom_accel_pkg::MEM_SRAM_BASE_W-1:0] sram_base;
  logic [31:0] dram_base;
  logic [15:0] y_size, x_size, x_stride;
  logic [3:0] y_pad0, y_pad1, x_pad0, x_pad1;
  loom_mem_fields fields (
      .insn_i     (insn),
      .mem_type_o (mem_type),
      .sram_base_o(sram_base),
      .dram_base_o(dram_base),
      .y_size_o   (y_size),
      .x_size_o   (x_size),
      .x_stride_o (x_stride),
      .y_pad0_o   (y_pad0),
      .y_pad1_o   (y_pad1),
      .x_pad0_o   (x_pad0),
      .x_pad1_o   (x_pad1)
  );
  wire is_load = opcode == loom_accel_pkg::OP_LOAD, is_gemm = opcode == loom_accel_pkg::OP_GEMM;
  wire is_alu = opcode == loom_accel_pkg::OP_ALU, is_finish = opcode == loom_accel_pkg::OP_FINISH;
  wire load_uop = is_load && mem_type == loom_accel_pkg::MEM_UOP, load_acc = is_load && mem_type == loom_accel_pkg::MEM_ACC;
  assign uop_load_started_o = exec_start && load_uop;
  assign acc_load_started_o = exec_start && load_acc;
  assign gemm_started_o = exec_start && is_gemm;
  assign alu_started_o = exec_start && is_alu;

  // ---- scratchpads ----
  logic uop_we, acc_dma_we, acc_core_we, uop_dma_writing, acc_dma_writing;
  logic [UopAW-1:0] uop_waddr, uop_raddr;
  logic [31:0] uop_wdata, uop_rdata;
  logic [AccAW-1:0] acc_dma_waddr, acc_core_waddr, acc_raddr;
  logic [AccEW-1:0] acc_dma_wdata, acc_core_wdata, acc_rdata;
  loom_sram #(
      .Width(32),
      .Depth(loom_accel_pkg::UOP_DEPTH)
  ) uop_sram (
      .clk_i,
      .we_i   (uop_we),
      .waddr_i(uop_waddr),
      .wdata_i(uop_wdata),
      .raddr_i(uop_raddr),
      .rdata_o(uop_rdata)
  );
  loom_sram #(
      .Width(AccEW),
      .Depth(loom_accel_pkg::ACC_DEPTH)
  ) acc_sram (
      .clk_i,
      .we_i   (acc_dma_we || acc_core_we),
      // the DMA and the core never write in the same instruction: select by the DMA's state,
      // not by its write strobe (which follows the R channel)
      .waddr_i(acc_dma_writing ? acc_dma_waddr : acc_core_waddr),
      .wdata_i(acc_dma_writing ? acc_dma_wdata : acc_core_wdata),
      .raddr_i(acc_raddr),
      .rdata_o(acc_rdata)
  );

  // ---- datapaths ----
  logic uop_done, acc_done, core_done, uop_fault, acc_fault, core_fault;
  logic [7:0] uop_code, acc_code, core_code;
  loom_dma_rd #(
      .EntryBytes(4),
      .Depth     (loom_accel_pkg::UOP_DEPTH)
  ) uop_dma (
      .clk_i,
      .rst_ni,
      .start_i     (exec_start && load_uop),
      .sram_base_i (sram_base),
      .dram_base_i (dram_base),
      .y_size_i    (y_size),
      .x_size_i    (x_size),
      .x_stride_i  (x_stride),
      .y_pad0_i    (y_pad0),
      .y_pad1_i    (y_pad1),
      .x_pad0_i    (x_pad0),
      .x_pad1_i    (x_pad1),
      .done_o      (uop_done),
      .fault_o     (uop_fault),
      .fault_code_o(uop_code),
      .data_entry_o(uop_entry_o),
      .writing_o   (uop_dma_writing),
      .we_o        (uop_we),
      .waddr_o     (uop_waddr),
      .wdata_o     (uop_wdata),
      .axi_req_o   (axi_uop_req_o),
      .axi_rsp_i   (axi_uop_rsp_i)
  );
  loom_dma_rd #(
      .EntryBytes(loom_accel_pkg::ACC_ENTRY_BYTES),
      .Depth     (loom_accel_pkg::ACC_DEPTH)
  ) acc_dma (
      .clk_i,
      .rst_ni,
      .start_i     (exec_start && load_acc),
      .sram_base_i (sram_base),
      .dram_base_i (dram_base),
      .y_size_i    (y_size),
      .x_size_i    (x_size),
      .x_stride_i  (x_stride),
      .y_pad0_i    (y_pad0),
      .y_pad1_i    (y_pad1),
      .x_pad0_i    (x_pad0),
      .x_pad1_i    (x_pad1),
      .done_o      (acc_done),
      .fault_o     (acc_fault),
      .fault_code_o(acc_code),
      .data_entry_o(acc_entry_o),
      .writing_o   (acc_dma_writing),
      .we_o        (acc_dma_we),
      .waddr_o     (acc_dma_waddr),
      .wdata_o     (acc_dma_wdata),
      .axi_req_o   (axi_acc_req_o),
      .axi_rsp_i   (axi_acc_rsp_i)
  );
  loom_gemm_alu core (
      .clk_i,
      .rst_ni,
      .start_i         (exec_start && (is_gemm || is_alu)),
      .is_alu_i        (is_alu),
      .reset_acc_i     (insn[loom_accel_pkg::GEMM_RESET_LSB]),
      .uop_begin_i     (insn[loom_accel_pkg::GEMM_UOP_BEGIN_LSB+:loom_accel_pkg::GEMM_UOP_BEGIN_W]),
      .uop_end_i       (insn[loom_accel_pkg::GEMM_UOP_END_LSB+:loom_accel_pkg::GEMM_UOP_END_W]),
      .iter_out_i      (insn[loom_accel_pkg::GEMM_ITER_OUT_LSB+:loom_accel_pkg::GEMM_ITER_OUT_W]),
      .iter_in_i       (insn[loom_accel_pkg::GEMM_ITER_IN_LSB+:loom_accel_pkg::GEMM_ITER_IN_W]),
      .dst_factor_out_i(insn[loom_accel_pkg::GEMM_DST_FACTOR_OUT_LSB+:loom_accel_pkg::GEMM_DST_FACTOR_OUT_W]),
      .dst_factor_in_i (insn[loom_accel_pkg::GEMM_DST_FACTOR_IN_LSB+:loom_accel_pkg::GEMM_DST_FACTOR_IN_W]),
      .src_factor_out_i(insn[loom_accel_pkg::GEMM_SRC_FACTOR_OUT_LSB+:loom_accel_pkg::GEMM_SRC_FACTOR_OUT_W]),
      .src_factor_in_i (insn[loom_accel_pkg::GEMM_SRC_FACTOR_IN_LSB+:loom_accel_pkg::GEMM_SRC_FACTOR_IN_W]),
      .wgt_factor_out_i(is_gemm ? insn[loom_accel_pkg::GEMM_WGT_FACTOR_OUT_LSB+:loom_accel_pkg::GEMM_WGT_FACTOR_OUT_W] : '0),
      .wgt_factor_in_i (is_gemm ? insn[loom_accel_pkg::GEMM_WGT_FACTOR_IN_LSB+:loom_accel_pkg::GEMM_WGT_FACTOR_IN_W] : '0),
      .alu_op_i        (insn[loom_accel_pkg::ALU_ALU_OPCODE_LSB+:loom_accel_pkg::ALU_ALU_OPCODE_W]),
      .use_imm_i       (insn[loom_accel_pkg::ALU_USE_IMM_LSB]),
      .imm_i           (insn[loom_accel_pkg::ALU_IMM_LSB+:loom_accel_pkg::ALU_IMM_W]),
      .done_o          (core_done),
      .fault_o         (core_fault),
      .fault_code_o    (core_code),
      .mac_step_o,
      .alu_step_o,
      .reset_step_o,
      .alu_vec_step_o,
      .uop_raddr_o     (uop_raddr),
      .uop_rdata_i     (uop_rdata),
      .inp_raddr_o,
      .inp_rdata_i,
      .wgt_raddr_o,
      .wgt_rdata_i,
      .acc_raddr_o     (acc_raddr),
      .acc_rdata_i     (acc_rdata),
      .acc_we_o        (acc_core_we),
      .acc_waddr_o     (acc_core_waddr),
      .acc_wdata_o     (acc_core_wdata),
      .out_we_o,
      .out_waddr_o,
      .out_wdata_o
  );

  assign acc_pad_entry_o = acc_dma_we && !acc_entry_o;

  // FINISH (and any no-op) completes the cycle after it starts.
  logic finish_q;
  always_ff @(posedge clk_i) finish_q <= rst_ni && exec_start && is_finish;
  assign finish_done_o = finish_q;
  assign exec_done = uop_done || acc_done || core_done || finish_q;
  assign fault_o = uop_fault || acc_fault || core_fault;
  assign fault_code_o = uop_fault ? uop_code : acc_fault ? acc_code : core_code;
  wire unused_ok = &{1'b0, index, uop_dma_writing};
endmodule
