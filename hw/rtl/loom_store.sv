// Store module: executes STORE (out buffer -> DRAM) in program order, synchronized with the
// compute module (its previous neighbour) by dependency tokens.
module loom_store #(
    parameter int QUEUE_DEPTH = 32,
    localparam int BusW = loom_accel_pkg::BUS_BYTES * 8,
    localparam int OutAW = loom_accel_pkg::OUT_IDX_BITS,
    localparam int OutEW = loom_accel_pkg::OUT_ENTRY_BYTES * 8
) (
    input  logic clk,
    input  logic rst_n,
    input  logic halt,
    input  logic         q_push,
    input  logic [159:0] q_data,
    output logic         q_full,
    input  logic prev_avail,
    input  logic prev_room,
    output logic pop_prev,
    output logic push_prev,
    output logic        busy,
    output logic        stalled,
    output logic        idle,
    output logic [31:0] wait_index,
    output logic        fault,
    output logic [7:0]  fault_code,
    output logic        insn_started,
    output logic        out_entry,
    output logic [OutAW-1:0] out_raddr,
    input  logic [OutEW-1:0] out_rdata,
    // AXI4 write
    output logic            awvalid,
    input  logic            awready,
    output logic [63:0]     awaddr,
    output logic [7:0]      awlen,
    output logic            wvalid,
    input  logic            wready,
    output logic [BusW-1:0] wdata,
    output logic            wlast,
    input  logic            bvalid,
    output logic            bready,
    input  logic [1:0]      bresp
);
  logic exec_start, exec_done;
  logic [127:0] insn;
  logic [31:0] cur_index;
  logic no_pop_next, no_push_next;  // the store module has no next neighbour
  loom_seq #(.QUEUE_DEPTH(QUEUE_DEPTH)) seq (
      .clk, .rst_n, .halt, .q_push, .q_data, .q_full,
      .prev_avail, .next_avail(1'b0), .prev_room, .next_room(1'b1),
      .pop_prev, .pop_next(no_pop_next), .push_prev, .push_next(no_push_next),
      .exec_start, .cur_insn(insn), .cur_index, .exec_done,
      .busy, .stalled, .idle, .wait_index);

  logic [2:0] mem_type;
  logic [31:0] sram_base, dram_base;
  logic [15:0] y_size, x_size, x_stride;
  logic [3:0] y_pad0, y_pad1, x_pad0, x_pad1;
  loom_mem_fields fields (.insn, .mem_type, .sram_base, .dram_base, .y_size, .x_size, .x_stride, .y_pad0, .y_pad1, .x_pad0, .x_pad1);
  assign insn_started = exec_start;

  loom_dma_wr dma (
      .clk, .rst_n, .start(exec_start), .sram_base, .dram_base, .y_size, .x_size, .x_stride,
      .done(exec_done), .fault, .fault_code, .data_entry(out_entry), .raddr(out_raddr), .rdata(out_rdata),
      .awvalid, .awready, .awaddr, .awlen, .wvalid, .wready, .wdata, .wlast, .bvalid, .bready, .bresp);
  wire unused_ok = &{1'b0, cur_index, no_pop_next, no_push_next, mem_type, y_pad0, y_pad1, x_pad0, x_pad1};
endmodule
