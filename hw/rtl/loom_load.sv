// Load module: executes LOAD of inputs and weights in program order, synchronized with the
// compute module by dependency tokens (it only has a next neighbour).
module loom_load #(
    parameter int QUEUE_DEPTH = 32,
    localparam int BusW = loom_accel_pkg::BUS_BYTES * 8,
    localparam int InpAW = loom_accel_pkg::INP_IDX_BITS,
    localparam int WgtAW = loom_accel_pkg::WGT_IDX_BITS,
    localparam int InpEW = loom_accel_pkg::INP_ENTRY_BYTES * 8,
    localparam int WgtEW = loom_accel_pkg::WGT_ENTRY_BYTES * 8
) (
    input  logic clk,
    input  logic rst_n,
    input  logic halt,
    input  logic         q_push,
    input  logic [159:0] q_data,
    output logic         q_full,
    input  logic next_avail,
    input  logic next_room,
    output logic pop_next,
    output logic push_next,
    output logic        busy,
    output logic        stalled,
    output logic        idle,
    output logic [31:0] wait_index,
    output logic        fault,
    output logic [7:0]  fault_code,
    output logic        insn_started,
    output logic        inp_entry,
    output logic        wgt_entry,
    output logic             inp_we,
    output logic [InpAW-1:0] inp_waddr,
    output logic [InpEW-1:0] inp_wdata,
    output logic             wgt_we,
    output logic [WgtAW-1:0] wgt_waddr,
    output logic [WgtEW-1:0] wgt_wdata,
    // two AXI4 read requesters: inputs, weights
    output logic [1:0]    arvalid,
    input  logic [1:0]    arready,
    output logic [127:0]  araddr,
    output logic [15:0]   arlen,
    input  logic [1:0]    rvalid,
    output logic [1:0]    rready,
    input  logic [BusW-1:0] rdata,
    input  logic [1:0]    rresp,
    input  logic          rlast
);
  logic exec_start, exec_done;
  logic [127:0] insn;
  logic [31:0] cur_index;
  logic no_pop_prev, no_push_prev;  // the load module has no previous neighbour
  loom_seq #(.QUEUE_DEPTH(QUEUE_DEPTH)) seq (
      .clk, .rst_n, .halt, .q_push, .q_data, .q_full,
      .prev_avail(1'b0), .next_avail, .prev_room(1'b1), .next_room,
      .pop_prev(no_pop_prev), .pop_next, .push_prev(no_push_prev), .push_next,
      .exec_start, .cur_insn(insn), .cur_index, .exec_done,
      .busy, .stalled, .idle, .wait_index);

  logic [2:0] mem_type;
  logic [31:0] sram_base, dram_base;
  logic [15:0] y_size, x_size, x_stride;
  logic [3:0] y_pad0, y_pad1, x_pad0, x_pad1;
  loom_mem_fields fields (.insn, .mem_type, .sram_base, .dram_base, .y_size, .x_size, .x_stride, .y_pad0, .y_pad1, .x_pad0, .x_pad1);
  wire to_wgt = mem_type == loom_accel_pkg::MEM_WGT;
  assign insn_started = exec_start;

  logic inp_done, wgt_done, inp_fault, wgt_fault;
  logic [7:0] inp_code, wgt_code;
  loom_dma_rd #(.ENTRY_BYTES(loom_accel_pkg::INP_ENTRY_BYTES), .DEPTH(loom_accel_pkg::INP_DEPTH)) inp_dma (
      .clk, .rst_n, .start(exec_start && !to_wgt), .sram_base, .dram_base, .y_size, .x_size, .x_stride,
      .y_pad0, .y_pad1, .x_pad0, .x_pad1, .done(inp_done), .fault(inp_fault), .fault_code(inp_code), .data_entry(inp_entry),
      .we(inp_we), .waddr(inp_waddr), .wdata(inp_wdata),
      .arvalid(arvalid[0]), .arready(arready[0]), .araddr(araddr[63:0]), .arlen(arlen[7:0]),
      .rvalid(rvalid[0]), .rready(rready[0]), .rdata, .rresp, .rlast);
  loom_dma_rd #(.ENTRY_BYTES(loom_accel_pkg::WGT_ENTRY_BYTES), .DEPTH(loom_accel_pkg::WGT_DEPTH)) wgt_dma (
      .clk, .rst_n, .start(exec_start && to_wgt), .sram_base, .dram_base, .y_size, .x_size, .x_stride,
      .y_pad0, .y_pad1, .x_pad0, .x_pad1, .done(wgt_done), .fault(wgt_fault), .fault_code(wgt_code), .data_entry(wgt_entry),
      .we(wgt_we), .waddr(wgt_waddr), .wdata(wgt_wdata),
      .arvalid(arvalid[1]), .arready(arready[1]), .araddr(araddr[127:64]), .arlen(arlen[15:8]),
      .rvalid(rvalid[1]), .rready(rready[1]), .rdata, .rresp, .rlast);

  assign exec_done = inp_done || wgt_done;
  assign fault = inp_fault || wgt_fault;
  assign fault_code = inp_fault ? inp_code : wgt_code;
  wire unused_ok = &{1'b0, cur_index, no_pop_prev, no_push_prev};
endmodule
