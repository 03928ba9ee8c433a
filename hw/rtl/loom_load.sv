// Load module: executes LOAD of inputs and weights in program order, synchronized with the
// compute module by dependency tokens (it only has a next neighbour).
module loom_load #(
    parameter int QueueDepth = 32,
    localparam int InpAW = loom_accel_pkg::INP_IDX_BITS,
    localparam int WgtAW = loom_accel_pkg::WGT_IDX_BITS,
    localparam int InpEW = loom_accel_pkg::INP_ENTRY_BYTES * 8,
    localparam int WgtEW = loom_accel_pkg::WGT_ENTRY_BYTES * 8
) (
    input  logic clk_i,
    input  logic rst_ni,
    input  logic halt_i,
    input  logic                         q_push_i,
    input  loom_accel_pkg::queue_entry_t q_data_i,
    output logic                         q_full_o,
    input  loom_accel_pkg::tokens_t      tokens_i,     // the prev_* fields are not used
    output loom_accel_pkg::token_ops_t   token_ops_o,  // nor driven high
    output logic        busy_o,
    output logic        stalled_o,
    output logic        idle_o,
    output logic [31:0] wait_index_o,
    output logic        fault_o,
    output logic [7:0]  fault_code_o,
    // counter pulses
    output logic insn_started_o,
    output logic inp_entry_o,
    output logic wgt_entry_o,
    // scratchpad write ports
    output logic             inp_we_o,
    output logic [InpAW-1:0] inp_waddr_o,
    output logic [InpEW-1:0] inp_wdata_o,
    output logic             wgt_we_o,
    output logic [WgtAW-1:0] wgt_waddr_o,
    output logic [WgtEW-1:0] wgt_wdata_o,
    // two AXI4 read requesters: inputs, weights
    output loom_accel_pkg::axi_rd_req_t axi_inp_req_o,
    input  loom_accel_pkg::axi_rd_rsp_t axi_inp_rsp_i,
    output loom_accel_pkg::axi_rd_req_t axi_wgt_req_o,
    input  loom_accel_pkg::axi_rd_rsp_t axi_wgt_rsp_i
);
  logic exec_start, exec_done;
  logic [loom_accel_pkg::INSN_BITS-1:0] insn;
  logic [31:0] index;
  loom_accel_pkg::tokens_t tokens;
  assign tokens.prev_avail = 1'b0;
  assign tokens.next_avail = tokens_i.next_avail;
  assign tokens.prev_room = 1'b1;
  assign tokens.next_room = tokens_i.next_room;
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
  wire to_wgt = mem_type == loom_accel_pkg::MEM_WGT;
  assign insn_started_o = exec_start;

  logic inp_done, wgt_done, inp_fault, wgt_fault, inp_writing, wgt_writing;
  logic [7:0] inp_code, wgt_code;
  loom_dma_rd #(
      .EntryBytes(loom_accel_pkg::INP_ENTRY_BYTES),
      .Depth     (loom_accel_pkg::INP_DEPTH)
  ) inp_dma (
      .clk_i,
      .rst_ni,
      .start_i     (exec_start && !to_wgt),
      .sram_base_i (sram_base),
      .dram_base_i (dram_base),
      .y_size_i    (y_size),
      .x_size_i    (x_size),
      .x_stride_i  (x_stride),
      .y_pad0_i    (y_pad0),
      .y_pad1_i    (y_pad1),
      .x_pad0_i    (x_pad0),
      .x_pad1_i    (x_pad1),
      .done_o      (inp_done),
      .fault_o     (inp_fault),
      .fault_code_o(inp_code),
      .data_entry_o(inp_entry_o),
      .writing_o   (inp_writing),
      .we_o        (inp_we_o),
      .waddr_o     (inp_waddr_o),
      .wdata_o     (inp_wdata_o),
      .axi_req_o   (axi_inp_req_o),
      .axi_rsp_i   (axi_inp_rsp_i)
  );
  loom_dma_rd #(
      .EntryBytes(loom_accel_pkg::WGT_ENTRY_BYTES),
      .Depth     (loom_accel_pkg::WGT_DEPTH)
  ) wgt_dma (
      .clk_i,
      .rst_ni,
      .start_i     (exec_start && to_wgt),
      .sram_base_i (sram_base),
      .dram_base_i (dram_base),
      .y_size_i    (y_size),
      .x_size_i    (x_size),
      .x_stride_i  (x_stride),
      .y_pad0_i    (y_pad0),
      .y_pad1_i    (y_pad1),
      .x_pad0_i    (x_pad0),
      .x_pad1_i    (x_pad1),
      .done_o      (wgt_done),
      .fault_o     (wgt_fault),
      .fault_code_o(wgt_code),
      .data_entry_o(wgt_entry_o),
      .writing_o   (wgt_writing),
      .we_o        (wgt_we_o),
      .waddr_o     (wgt_waddr_o),
      .wdata_o     (wgt_wdata_o),
      .axi_req_o   (axi_wgt_req_o),
      .axi_rsp_i   (axi_wgt_rsp_i)
  );

  assign exec_done = inp_done || wgt_done;
  assign fault_o = inp_fault || wgt_fault;
  assign fault_code_o = inp_fault ? inp_code : wgt_code;
  wire unused_ok = &{1'b0, index, tokens_i.prev_avail, tokens_i.prev_room, inp_writing, wgt_writing};
endmodule
