// Compute module: executes LOAD of micro-ops and accumulators, GEMM, ALU and FINISH in program
// order, synchronized with the load module (previous) and the store module (next) by dependency
// tokens. Owns the micro-op and accumulator scratchpads; reads inputs/weights, writes outputs.
module loom_compute #(
    parameter int QUEUE_DEPTH = 32,
    localparam int BusW = loom_accel_pkg::BUS_BYTES * 8,
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
    input  logic clk,
    input  logic rst_n,
    input  logic halt,
    input  logic         q_push,
    input  logic [159:0] q_data,
    output logic         q_full,
    input  logic prev_avail,
    input  logic next_avail,
    input  logic prev_room,
    input  logic next_room,
    output logic pop_prev,
    output logic pop_next,
    output logic push_prev,
    output logic push_next,
    output logic        busy,
    output logic        stalled,
    output logic        idle,
    output logic [31:0] wait_index,
    output logic        fault,
    output logic [7:0]  fault_code,
    output logic        finish_done,
    // counter pulses
    output logic uop_load_started,
    output logic acc_load_started,
    output logic gemm_started,
    output logic alu_started,
    output logic uop_entry,
    output logic acc_entry,
    output logic mac_step,
    output logic alu_step,
    // scratchpads owned by other modules
    output logic [InpAW-1:0] inp_raddr,
    input  logic [InpEW-1:0] inp_rdata,
    output logic [WgtAW-1:0] wgt_raddr,
    input  logic [WgtEW-1:0] wgt_rdata,
    output logic             out_we,
    output logic [OutAW-1:0] out_waddr,
    output logic [OutEW-1:0] out_wdata,
    // two AXI4 read requesters: micro-ops, accumulators
    output logic [1:0]      arvalid,
    input  logic [1:0]      arready,
    output logic [127:0]    araddr,
    output logic [15:0]     arlen,
    input  logic [1:0]      rvalid,
    output logic [1:0]      rready,
    input  logic [BusW-1:0] rdata,
    input  logic [1:0]      rresp,
    input  logic            rlast
);
  logic exec_start, exec_done;
  logic [127:0] insn;
  logic [31:0] cur_index;
  loom_seq #(.QUEUE_DEPTH(QUEUE_DEPTH)) seq (
      .clk, .rst_n, .halt, .q_push, .q_data, .q_full,
      .prev_avail, .next_avail, .prev_room, .next_room, .pop_prev, .pop_next, .push_prev, .push_next,
      .exec_start, .cur_insn(insn), .cur_index, .exec_done,
      .busy, .stalled, .idle, .wait_index);

  // ---- decode ----
  wire [2:0] opcode = insn[2:0];
  logic [2:0] mem_type;
  logic [31:0] sram_base, dram_base;
  logic [15:0] y_size, x_size, x_stride;
  logic [3:0] y_pad0, y_pad1, x_pad0, x_pad1;
  loom_mem_fields fields (.insn, .mem_type, .sram_base, .dram_base, .y_size, .x_size, .x_stride, .y_pad0, .y_pad1, .x_pad0, .x_pad1);
  wire is_load = opcode == loom_accel_pkg::OP_LOAD, is_gemm = opcode == loom_accel_pkg::OP_GEMM;
  wire is_alu = opcode == loom_accel_pkg::OP_ALU, is_finish = opcode == loom_accel_pkg::OP_FINISH;
  wire load_uop = is_load && mem_type == loom_accel_pkg::MEM_UOP, load_acc = is_load && mem_type == loom_accel_pkg::MEM_ACC;
  assign uop_load_started = exec_start && load_uop;
  assign acc_load_started = exec_start && load_acc;
  assign gemm_started = exec_start && is_gemm;
  assign alu_started = exec_start && is_alu;

  // ---- scratchpads ----
  logic uop_we, acc_dma_we, acc_core_we;
  logic [UopAW-1:0] uop_waddr, uop_raddr;
  logic [31:0] uop_wdata, uop_rdata;
  logic [AccAW-1:0] acc_dma_waddr, acc_core_waddr, acc_raddr;
  logic [AccEW-1:0] acc_dma_wdata, acc_core_wdata, acc_rdata;
  loom_sram #(.WIDTH(32), .DEPTH(loom_accel_pkg::UOP_DEPTH), .NUM_RD(1)) uop_sram (
      .clk, .we(uop_we), .waddr(uop_waddr), .wdata(uop_wdata), .raddr(uop_raddr), .rdata(uop_rdata));
  loom_sram #(.WIDTH(AccEW), .DEPTH(loom_accel_pkg::ACC_DEPTH), .NUM_RD(1)) acc_sram (
      .clk, .we(acc_dma_we || acc_core_we), .waddr(acc_dma_we ? acc_dma_waddr : acc_core_waddr),
      .wdata(acc_dma_we ? acc_dma_wdata : acc_core_wdata), .raddr(acc_raddr), .rdata(acc_rdata));

  // ---- datapaths ----
  logic uop_done, acc_done, core_done, uop_fault, acc_fault, core_fault;
  logic [7:0] uop_code, acc_code, core_code;
  loom_dma_rd #(.ENTRY_BYTES(4), .DEPTH(loom_accel_pkg::UOP_DEPTH)) uop_dma (
      .clk, .rst_n, .start(exec_start && load_uop), .sram_base, .dram_base, .y_size, .x_size, .x_stride,
      .y_pad0, .y_pad1, .x_pad0, .x_pad1, .done(uop_done), .fault(uop_fault), .fault_code(uop_code), .data_entry(uop_entry),
      .we(uop_we), .waddr(uop_waddr), .wdata(uop_wdata),
      .arvalid(arvalid[0]), .arready(arready[0]), .araddr(araddr[63:0]), .arlen(arlen[7:0]),
      .rvalid(rvalid[0]), .rready(rready[0]), .rdata, .rresp, .rlast);
  loom_dma_rd #(.ENTRY_BYTES(loom_accel_pkg::ACC_ENTRY_BYTES), .DEPTH(loom_accel_pkg::ACC_DEPTH)) acc_dma (
      .clk, .rst_n, .start(exec_start && load_acc), .sram_base, .dram_base, .y_size, .x_size, .x_stride,
      .y_pad0, .y_pad1, .x_pad0, .x_pad1, .done(acc_done), .fault(acc_fault), .fault_code(acc_code), .data_entry(acc_entry),
      .we(acc_dma_we), .waddr(acc_dma_waddr), .wdata(acc_dma_wdata),
      .arvalid(arvalid[1]), .arready(arready[1]), .araddr(araddr[127:64]), .arlen(arlen[15:8]),
      .rvalid(rvalid[1]), .rready(rready[1]), .rdata, .rresp, .rlast);
  loom_gemm_alu core (
      .clk_i           (clk),
      .rst_ni          (rst_n),
      .start_i         (exec_start && (is_gemm || is_alu)),
      .is_alu_i        (is_alu),
      .reset_acc_i     (insn[loom_accel_pkg::GEMM_RESET_LSB]),
      .uop_begin_i     (32'(insn[loom_accel_pkg::GEMM_UOP_BEGIN_LSB+:loom_accel_pkg::GEMM_UOP_BEGIN_W])),
      .uop_end_i       (32'(insn[loom_accel_pkg::GEMM_UOP_END_LSB+:loom_accel_pkg::GEMM_UOP_END_W])),
      .iter_out_i      (16'(insn[loom_accel_pkg::GEMM_ITER_OUT_LSB+:loom_accel_pkg::GEMM_ITER_OUT_W])),
      .iter_in_i       (16'(insn[loom_accel_pkg::GEMM_ITER_IN_LSB+:loom_accel_pkg::GEMM_ITER_IN_W])),
      .dst_factor_out_i(32'(insn[loom_accel_pkg::GEMM_DST_FACTOR_OUT_LSB+:loom_accel_pkg::GEMM_DST_FACTOR_OUT_W])),
      .dst_factor_in_i (32'(insn[loom_accel_pkg::GEMM_DST_FACTOR_IN_LSB+:loom_accel_pkg::GEMM_DST_FACTOR_IN_W])),
      .src_factor_out_i(32'(insn[loom_accel_pkg::GEMM_SRC_FACTOR_OUT_LSB+:loom_accel_pkg::GEMM_SRC_FACTOR_OUT_W])),
      .src_factor_in_i (32'(insn[loom_accel_pkg::GEMM_SRC_FACTOR_IN_LSB+:loom_accel_pkg::GEMM_SRC_FACTOR_IN_W])),
      .wgt_factor_out_i(is_gemm ? 32'(insn[loom_accel_pkg::GEMM_WGT_FACTOR_OUT_LSB+:loom_accel_pkg::GEMM_WGT_FACTOR_OUT_W]) : 32'd0),
      .wgt_factor_in_i (is_gemm ? 32'(insn[loom_accel_pkg::GEMM_WGT_FACTOR_IN_LSB+:loom_accel_pkg::GEMM_WGT_FACTOR_IN_W]) : 32'd0),
      .alu_op_i        (insn[loom_accel_pkg::ALU_ALU_OPCODE_LSB+:loom_accel_pkg::ALU_ALU_OPCODE_W]),
      .use_imm_i       (insn[loom_accel_pkg::ALU_USE_IMM_LSB]),
      .imm_i           (insn[loom_accel_pkg::ALU_IMM_LSB+:loom_accel_pkg::ALU_IMM_W]),
      .done_o          (core_done),
      .fault_o         (core_fault),
      .fault_code_o    (core_code),
      .mac_step_o      (mac_step),
      .alu_step_o      (alu_step),
      .uop_raddr_o     (uop_raddr),
      .uop_rdata_i     (uop_rdata),
      .inp_raddr_o     (inp_raddr),
      .inp_rdata_i     (inp_rdata),
      .wgt_raddr_o     (wgt_raddr),
      .wgt_rdata_i     (wgt_rdata),
      .acc_raddr_o     (acc_raddr),
      .acc_rdata_i     (acc_rdata),
      .acc_we_o        (acc_core_we),
      .acc_waddr_o     (acc_core_waddr),
      .acc_wdata_o     (acc_core_wdata),
      .out_we_o        (out_we),
      .out_waddr_o     (out_waddr),
      .out_wdata_o     (out_wdata)
  );

  // FINISH (and any no-op) completes the cycle after it starts.
  logic finish_q;
  always_ff @(posedge clk) finish_q <= rst_n && exec_start && is_finish;
  assign finish_done = finish_q;
  assign exec_done = uop_done || acc_done || core_done || finish_q;
  assign fault = uop_fault || acc_fault || core_fault;
  assign fault_code = uop_fault ? uop_code : acc_fault ? acc_code : core_code;
  wire unused_ok = &{1'b0, cur_index};
endmodule
