// Fetch: reads INSN_COUNT instructions from INSN_ADDR over AXI4 (bursts into a small fetch
// buffer), checks each one (the hardware decoder's view of the ISA: opcodes, memory types, ALU
// opcodes, reserved bits, dependency flags, DMA shapes, micro-op ranges) and dispatches it, in
// order, to the queue of the module that executes it. A malformed instruction stops fetch with
// a fault naming its index.
module loom_fetch #(
    parameter int BUFFER_INSNS = 16,
    localparam int BusBytes = loom_accel_pkg::BUS_BYTES
) (
    input  logic clk,
    input  logic rst_n,
    input  logic        start,
    input  logic [63:0] insn_addr,
    input  logic [31:0] insn_count,
    input  logic        halt,
    output logic        all_dispatched,
    output logic        finish_dispatched,
    output logic        fault,
    output logic [7:0]  fault_code,
    output logic [31:0] fault_index,
    output logic        blocked,  // the next instruction waits for room in its module's queue
    // AXI4 read
    output logic                  arvalid,
    input  logic                  arready,
    output logic [63:0]           araddr,
    output logic [7:0]            arlen,
    input  logic                  rvalid,
    output logic                  rready,
    input  logic [BusBytes*8-1:0] rdata,
    input  logic [1:0]            rresp,
    // module queues: {index, instruction}
    output logic [159:0] q_data,
    output logic         load_push,
    input  logic         load_full,
    output logic         compute_push,
    input  logic         compute_full,
    output logic         store_push,
    input  logic         store_full
);
  localparam int BeatsPerInsn = 16 / BusBytes;
  localparam int CntW = $clog2(BUFFER_INSNS + 1);

  // ---- requests: bursts of up to 8 instructions, never across 4 KiB, never overfilling the buffer ----
  logic [31:0] req_left;  // instructions not yet requested
  logic [63:0] req_addr;
  logic [CntW-1:0] in_flight;  // requested, not yet in the buffer
  logic [CntW-1:0] buf_count;
  wire [31:0] to_4k = 32'd256 - 32'(req_addr[11:4]);  // instructions are 16-byte aligned
  logic [31:0] burst_insns;
  always_comb begin
    burst_insns = 32'd8;
    if (req_left < burst_insns) burst_insns = req_left;
    if (to_4k < burst_insns) burst_insns = to_4k;
  end
  logic active;
  logic ar_wait;  // the AR shown last cycle was not taken: AXI4 keeps it until it is, halt or fault
  assign arvalid = ar_wait || (active && req_left != 0 && !halt && (32'(in_flight) + 32'(buf_count) + burst_insns <= 32'(BUFFER_INSNS)));
  assign araddr = req_addr;
  assign arlen = 8'(burst_insns * BeatsPerInsn - 32'd1);

  // ---- responses: gather beats into instructions ----
  logic [$clog2(BeatsPerInsn+1)-1:0] beat;
  logic [31:0] recv_index;
  wire [127:0] insn_in;
  if (BeatsPerInsn == 1) begin : g_one
    assign insn_in = rdata;
  end else begin : g_multi
    logic [127-BusBytes*8:0] gathered;  // earlier beats, lowest bytes first
    assign insn_in = {rdata, gathered};
    always_ff @(posedge clk) begin
      if (rvalid) gathered <= insn_in[127:BusBytes*8];
    end
  end
  wire insn_complete = rvalid && beat == ($clog2(BeatsPerInsn+1))'(BeatsPerInsn - 1);
  wire r_error = rresp == 2'b10 || rresp == 2'b11;
  assign rready = 1'b1;  // the buffer always has room for what was requested

  logic buf_empty, buf_full, buf_pop;
  logic [159:0] head;
  loom_fifo #(
      .WIDTH(160),
      .DEPTH(BUFFER_INSNS)
  ) fetch_buffer (
      .clk, .rst_n(rst_n && !start),
      .push(insn_complete && !r_error), .din({recv_index, insn_in}), .full(buf_full),
      .pop(buf_pop), .dout(head), .empty(buf_empty), .count(buf_count)
  );

  // ---- decode check and dispatch ----
  wire [127:0] insn = head[127:0];
  wire [2:0] opcode = insn[2:0];
  wire pop_prev = insn[loom_accel_pkg::MEM_POP_PREV_LSB], pop_next = insn[loom_accel_pkg::MEM_POP_NEXT_LSB];
  wire push_prev = insn[loom_accel_pkg::MEM_PUSH_PREV_LSB], push_next = insn[loom_accel_pkg::MEM_PUSH_NEXT_LSB];
  logic [2:0] mem_type;
  logic [31:0] sram_base, dram_base;
  logic [15:0] y_size, x_size, x_stride;
  logic [3:0] y_pad0, y_pad1, x_pad0, x_pad1;
  loom_mem_fields mem_fields (.insn, .mem_type, .sram_base, .dram_base, .y_size, .x_size, .x_stride, .y_pad0, .y_pad1, .x_pad0, .x_pad1);
  wire is_load = opcode == loom_accel_pkg::OP_LOAD, is_store = opcode == loom_accel_pkg::OP_STORE;
  wire is_gemm = opcode == loom_accel_pkg::OP_GEMM, is_alu = opcode == loom_accel_pkg::OP_ALU;
  wire to_load = is_load && (mem_type == loom_accel_pkg::MEM_INP || mem_type == loom_accel_pkg::MEM_WGT);
  wire to_store = is_store;
  wire to_compute = !to_load && !to_store;
  wire [31:0] uop_begin = 32'(insn[loom_accel_pkg::GEMM_UOP_BEGIN_LSB+:loom_accel_pkg::GEMM_UOP_BEGIN_W]);
  wire [31:0] uop_end = 32'(insn[loom_accel_pkg::GEMM_UOP_END_LSB+:loom_accel_pkg::GEMM_UOP_END_W]);
  wire [15:0] iter_out = 16'(insn[loom_accel_pkg::GEMM_ITER_OUT_LSB+:loom_accel_pkg::GEMM_ITER_OUT_W]);
  wire [15:0] iter_in = 16'(insn[loom_accel_pkg::GEMM_ITER_IN_LSB+:loom_accel_pkg::GEMM_ITER_IN_W]);
  wire [2:0] alu_op = insn[loom_accel_pkg::ALU_ALU_OPCODE_LSB+:loom_accel_pkg::ALU_ALU_OPCODE_W];
  wire use_imm = insn[loom_accel_pkg::ALU_USE_IMM_LSB];
  wire signed [15:0] imm = insn[loom_accel_pkg::ALU_IMM_LSB+:loom_accel_pkg::ALU_IMM_W];
  wire pads = (y_pad0 | y_pad1 | x_pad0 | x_pad1) != 0;

  function automatic logic reserved_set(input logic [127:0] w, input int used_bits);
    reserved_set = (w >> used_bits) != 0;
  endfunction

  logic [7:0] check;  // fault code of the head instruction, 0 if it is well formed
  always_comb begin
    check = 8'd0;
    if (opcode > 3'd4) check = loom_accel_pkg::FAULT_ILLEGAL_OPCODE;
    else if ((is_load || is_store) && mem_type > 3'd4) check = loom_accel_pkg::FAULT_ILLEGAL_MEM_TYPE;
    else if (is_alu && alu_op > 3'd4) check = loom_accel_pkg::FAULT_ILLEGAL_ALU_OP;
    else if (((is_load || is_store) && reserved_set(insn, loom_accel_pkg::MEM_USED_BITS)) ||
             (is_gemm && reserved_set(insn, loom_accel_pkg::GEMM_USED_BITS)) ||
             (is_alu && reserved_set(insn, loom_accel_pkg::ALU_USED_BITS)) ||
             (opcode == loom_accel_pkg::OP_FINISH && reserved_set(insn, loom_accel_pkg::FINISH_USED_BITS)))
      check = loom_accel_pkg::FAULT_RESERVED_BITS;
    else if ((to_load && (pop_prev || push_prev)) || (to_store && (pop_next || push_next)))
      check = loom_accel_pkg::FAULT_ILLEGAL_DEPS;
    else if ((is_store && mem_type != loom_accel_pkg::MEM_OUT) || (is_load && mem_type == loom_accel_pkg::MEM_OUT))
      check = loom_accel_pkg::FAULT_ILLEGAL_MEM_TYPE;
    else if ((is_load || is_store) &&
             ((pads && (is_store || mem_type == loom_accel_pkg::MEM_UOP || x_size == 0 || y_size == 0)) ||
              (x_size != 0 && y_size > 16'd1 && x_stride < x_size)))
      check = loom_accel_pkg::FAULT_BAD_DMA_SHAPE;
    else if ((is_gemm || is_alu) &&
             (uop_end <= uop_begin || uop_end > 32'(loom_accel_pkg::UOP_DEPTH) || iter_out == 0 || iter_in == 0 ||
              (is_alu && alu_op == loom_accel_pkg::ALU_SHR && use_imm && (imm > 16'sd31 || imm < -16'sd31))))
      check = loom_accel_pkg::FAULT_BAD_UOP_RANGE;
  end

  wire queue_full = to_load ? load_full : to_store ? store_full : compute_full;
  wire dispatch = active && !buf_empty && check == 0 && !queue_full && !halt;
  assign buf_pop = dispatch;
  assign q_data = head;
  assign load_push = dispatch && to_load;
  assign compute_push = dispatch && to_compute;
  assign store_push = dispatch && to_store;
  assign blocked = active && !buf_empty && check == 0 && queue_full;

  logic [31:0] dispatched;
  assign all_dispatched = dispatched == insn_count;

  always_ff @(posedge clk) begin
    fault <= 1'b0;
    if (!rst_n) begin
      active <= 1'b0;
      dispatched <= '0;
      finish_dispatched <= 1'b0;
      fault_code <= '0;
      fault_index <= '0;
      in_flight <= '0;
    end else if (start && insn_addr[3:0] != 4'd0) begin
      fault <= 1'b1;  // instructions are 16-byte aligned
      fault_code <= loom_accel_pkg::FAULT_FETCH_FAULT;
      fault_index <= '0;
    end else if (start) begin
      active <= 1'b1;
      req_left <= insn_count;
      req_addr <= insn_addr;
      in_flight <= '0;
      beat <= '0;
      recv_index <= '0;
      dispatched <= '0;
      finish_dispatched <= 1'b0;
    end else if (active) begin
      if (arvalid && arready) begin
        req_left <= req_left - burst_insns;
        req_addr <= req_addr + (64'(burst_insns) << 4);
      end
      in_flight <= in_flight + (arvalid && arready ? CntW'(burst_insns) : '0) - CntW'(insn_complete);
      if (rvalid) begin
        beat <= insn_complete ? '0 : beat + 1'b1;
      end
      if (insn_complete) recv_index <= recv_index + 32'd1;
      if (rvalid && r_error) begin
        fault <= 1'b1;
        fault_code <= loom_accel_pkg::FAULT_FETCH_FAULT;
        fault_index <= recv_index;
        active <= 1'b0;
      end else if (!buf_empty && check != 0) begin
        fault <= 1'b1;
        fault_code <= check;
        fault_index <= head[159:128];
        active <= 1'b0;
      end
      if (dispatch) begin
        dispatched <= dispatched + 32'd1;
        if (opcode == loom_accel_pkg::OP_FINISH) finish_dispatched <= 1'b1;
      end
    end
  end
  always_ff @(posedge clk) ar_wait <= rst_n && !start && arvalid && !arready;
  wire unused_ok = &{1'b0, buf_full, sram_base, dram_base};
endmodule
