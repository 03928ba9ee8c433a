// Store module: executes STORE (out buffer -> DRAM) in program order, synchronized with the
// compute module (its previous neighbour) by dependency tokens.
module loom_store #(
    parameter int QueueDepth = 32,
    localparam int OutAW = loom_accel_pkg::OUT_IDX_BITS,
    localparam int OutEW = loom_accel_pkg::OUT_ENTRY_BYTES * 8
) (
    input  logic clk_i,
    input  logic rst_ni,
    input  logic halt_i,
    input  logic                         q_push_i,
    input  loom_accel_pkg::queue_entry_t q_data_i,
    output logic                         q_full_o,
    input  loom_accel_pkg::tokens_t      tokens_i,     // the next_* fields are not used
    output loom_accel_pkg::token_ops_t   token_ops_o,  // nor driven high
    output logic        busy_o,
    output logic        stalled_o,
    output logic        idle_o,
    output logic [31:0] wait_index_o,
    output logic        fault_o,
    output logic [7:0]  fault_code_o,
    // counter pulses
    output logic insn_started_o,
    output logic out_entry_o,
    // out buffer read port
    output logic [OutAW-1:0] out_raddr_o,
    input  logic [OutEW-1:0] out_rdata_i,
    // AXI4 write
    output loom_accel_pkg::axi_wr_req_t axi_req_o,
    input  loom_accel_pkg::axi_wr_rsp_t axi_rsp_i
);
  logic exec_start, exec_done;
  logic [loom_accel_pkg::INSN_BITS-1:0] insn;
  logic [31:0] index;
  loom_accel_pkg::tokens_t tokens;
  assign tokens.prev_avail = tokens_i.prev_avail;
  assign tokens.next_avail = 1'b0;
  assign tokens.prev_room = tokens_i.prev_room;
  assign tokens.next_room = 1'b1;
  loom_seq #(
      .QueueDepth(QueueDepth)
  ) seq (
      .clk_i,
      .rst_ni,
      .halt_i,
      .q_push_i,
      .q_data_i,
      .q_full_o,
      .tokens_i    (tokens),
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
  assign insn_started_o = exec_start;

  loom_dma_wr dma (
      .clk_i,
      .rst_ni,
      .start_i     (exec_start),
      .sram_base_i (sram_base),
      .dram_base_i (dram_base),
      .y_size_i    (y_size),
      .x_size_i    (x_size),
      .x_stride_i  (x_stride),
      .done_o      (exec_done),
      .fault_o,
      .fault_code_o,
      .data_entry_o(out_entry_o),
      .raddr_o     (out_raddr_o),
      .rdata_i     (out_rdata_i),
      .axi_req_o,
      .axi_rsp_i
  );
  wire unused_ok = &{1'b0, index, mem_type, y_pad0, y_pad1, x_pad0, x_pad1, tokens_i.next_avail, tokens_i.next_room};
endmodule
