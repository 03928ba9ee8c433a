// Fetch: reads INSN_COUNT instructions from INSN_ADDR over AXI4 (bursts into a small fetch
// buffer), checks each one (the hardware decoder's view of the ISA: opcodes, memory types, ALU
// opcodes, reserved bits, dependency flags, DMA shapes, micro-op ranges) and dispatches it, in
// order, to the queue of the module that executes it. A malformed instruction stops fetch with
// a fault naming its index. Instructions pass two registers after the buffer (D1: taken from
// the buffer, D2: checked), so the decoder's logic is a stage of its own.
module loom_fetch #(
    parameter int BufferInsns = 16,
    localparam int BusBytes = loom_accel_pkg::BUS_BYTES,
    localparam int InsnW = loom_accel_pkg::INSN_BITS
) (
    input  logic clk_i,
    input  logic rst_ni,
    input  logic        start_i,
    input  logic [63:0] insn_addr_i,
    input  logic [31:0] insn_count_i,
    input  logic        halt_i,
    output logic        all_dispatched_o,
    output logic        finish_dispatched_o,
    output logic        fault_o,
    output logic [7:0]  fault_code_o,
    output logic [31:0] fault_index_o,
    output logic        blocked_o,  // the next instruction waits for room in its module's queue
    // AXI4 read
    output loom_accel_pkg::axi_rd_req_t axi_req_o,
    input  loom_accel_pkg::axi_rd_rsp_t axi_rsp_i,
    // module queues
    output loom_accel_pkg::queue_entry_t q_data_o,
    output logic                         load_push_o,
    input  logic                         load_full_i,
    output logic                         compute_push_o,
    input  logic                         compute_full_i,
    output logic                         store_push_o,
    input  logic                         store_full_i
);
  localparam int InsnBytes = InsnW / 8;
  localparam int BeatsPerInsn = InsnBytes / BusBytes;
  localparam int CntW = $clog2(BufferInsns + 1);
  localparam int InsnShift = $clog2(InsnBytes);

  // ---- requests: bursts of up to 8 instructions, never across 4 KiB, never overfilling the
  // buffer. The next burst's size is a register, recomputed after each request. ----
  logic [31:0]     req_left_q;  // instructions not yet requested
  logic [63:0]     req_addr_q;
  logic [3:0]      burst_q;     // instructions in the next burst (valid when sized_q)
  logic            sized_q;     // burst_q, room_q and more_q are those of the next request
  logic            sizing_q;    // burst_q is, room_q and more_q follow next cycle
  logic [CntW-1:0] in_flight_q;  // requested, not yet in the buffer
  logic [CntW-1:0] buf_count;
  logic            active_q;
  logic            ar_wait_q;  // the AR shown last cycle was not taken: AXI4 keeps it until it is, halt or fault
  wire [8:0] to_4k = 9'd256 - 9'(req_addr_q[11:InsnShift]);  // instructions left in the page
  wire [3:0] left8 = req_left_q < 32'd8 ? 4'(req_left_q) : 4'd8;
  wire [3:0] burst_size = to_4k < 9'(left8) ? 4'(to_4k) : left8;
  // Room in the buffer and requests left, as registers: recomputed in the two cycles after each
  // request (sized_q low), and otherwise stale only on the safe side (beats move from in flight
  // to the buffer, pops make room).
  logic room_q, more_q;
  wire ar_valid = ar_wait_q || (active_q && sized_q && more_q && !halt_i && room_q);
  wire ar_fire = ar_valid && axi_rsp_i.ar_ready;
  assign axi_req_o.ar_valid = ar_valid;
  assign axi_req_o.ar_addr = req_addr_q;
  assign axi_req_o.ar_len = 8'(32'(burst_q) * BeatsPerInsn - 32'd1);

  // ---- responses: gather beats into instructions ----
  logic [$clog2(BeatsPerInsn+1)-1:0] beat_q;
  logic [31:0] recv_index_q;
  wire [InsnW-1:0] insn_in;
  if (BeatsPerInsn == 1) begin : g_one
    assign insn_in = axi_rsp_i.r_data;
  end else begin : g_multi
    logic [InsnW-BusBytes*8-1:0] gathered_q;  // earlier beats, lowest bytes first
    assign insn_in = {axi_rsp_i.r_data, gathered_q};
    always_ff @(posedge clk_i) begin
      if (axi_rsp_i.r_valid) gathered_q <= insn_in[InsnW-1:BusBytes*8];
    end
  end
  wire insn_complete = axi_rsp_i.r_valid && beat_q == ($clog2(BeatsPerInsn+1))'(BeatsPerInsn - 1);
  wire r_error = axi_rsp_i.r_valid && (axi_rsp_i.r_resp == 2'b10 || axi_rsp_i.r_resp == 2'b11);
  assign axi_req_o.r_ready = 1'b1;  // the buffer always has room for what was requested

  logic buf_empty, buf_full, buf_pop;
  loom_accel_pkg::queue_entry_t buf_head, buf_in;
  assign buf_in.index = recv_index_q;
  assign buf_in.insn = insn_in;
  loom_fifo #(
      .Width(loom_accel_pkg::QUEUE_ENTRY_BITS),
      .Depth(BufferInsns)
  ) fetch_buffer (
      .clk_i,
      .rst_ni (rst_ni && !start_i),
      .push_i (insn_complete && !r_error),
      .data_i (buf_in),
      .full_o (buf_full),
      .pop_i  (buf_pop),
      .data_o (buf_head),
      .empty_o(buf_empty),
      .count_o(buf_count)
  );

  // ---- D1: the instruction taken from the buffer; D2: checked, dispatched from here ----
  logic d1_valid_q, d2_valid_q;
  loom_accel_pkg::queue_entry_t d1_q, d2_q;
  logic [7:0] d2_check_q;  // fault code of D2's instruction, 0 if it is well formed
  logic [1:0] d2_module_q;  // 0 load, 1 compute, 2 store

  // The decoder's checks of D1's instruction.
  wire [InsnW-1:0] insn = d1_q.insn;
  wire [2:0] opcode = insn[2:0];
  wire pop_prev = insn[loom_accel_pkg::MEM_POP_PREV_LSB], pop_next = insn[loom_accel_pkg::MEM_POP_NEXT_LSB];
  wire push_prev = insn[loom_accel_pkg::MEM_PUSH_PREV_LSB], push_next = insn[loom_accel_pkg::MEM_PUSH_NEXT_LSB];
  logic [2:0] mem_type;
  logic [31:0] sram_base, dram_base;
  logic [15:0] y_size, x_size, x_stride;
  logic [3:0] y_pad0, y_pad1, x_pad0, x_pad1;
  loom_mem_fields mem_fields (
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
  wire is_load = opcode == loom_accel_pkg::OP_LOAD, is_store = opcode == loom_accel_pkg::OP_STORE;
  wire is_gemm = opcode == loom_accel_pkg::OP_GEMM, is_alu = opcode == loom_accel_pkg::OP_ALU;
  wire to_load = is_load && (mem_type == loom_accel_pkg::MEM_INP || mem_type == loom_accel_pkg::MEM_WGT);
  wire to_store = is_store;
  wire [31:0] uop_begin = 32'(insn[loom_accel_pkg::GEMM_UOP_BEGIN_LSB+:loom_accel_pkg::GEMM_UOP_BEGIN_W]);
  wire [31:0] uop_end = 32'(insn[loom_accel_pkg::GEMM_UOP_END_LSB+:loom_accel_pkg::GEMM_UOP_END_W]);
  wire [15:0] iter_out = 16'(insn[loom_accel_pkg::GEMM_ITER_OUT_LSB+:loom_accel_pkg::GEMM_ITER_OUT_W]);
  wire [15:0] iter_in = 16'(insn[loom_accel_pkg::GEMM_ITER_IN_LSB+:loom_accel_pkg::GEMM_ITER_IN_W]);
  wire [2:0] alu_op = insn[loom_accel_pkg::ALU_ALU_OPCODE_LSB+:loom_accel_pkg::ALU_ALU_OPCODE_W];
  wire use_imm = insn[loom_accel_pkg::ALU_USE_IMM_LSB];
  wire signed [15:0] imm = insn[loom_accel_pkg::ALU_IMM_LSB+:loom_accel_pkg::ALU_IMM_W];
  wire pads = (y_pad0 | y_pad1 | x_pad0 | x_pad1) != 0;

  function automatic logic reserved_set(input logic [InsnW-1:0] w, input int used_bits);
    reserved_set = (w >> used_bits) != 0;
  endfunction

  logic [7:0] check;
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

  wire d2_queue_full = d2_module_q == 2'd0 ? load_full_i : d2_module_q == 2'd2 ? store_full_i : compute_full_i;
  wire dispatch = active_q && d2_valid_q && d2_check_q == 0 && !d2_queue_full && !halt_i;
  wire d2_free = !d2_valid_q || dispatch;
  wire d1_free = !d1_valid_q || d2_free;
  assign buf_pop = active_q && !buf_empty && d1_free;
  assign q_data_o = d2_q;
  assign load_push_o = dispatch && d2_module_q == 2'd0;
  assign compute_push_o = dispatch && d2_module_q == 2'd1;
  assign store_push_o = dispatch && d2_module_q == 2'd2;
  assign blocked_o = active_q && d2_valid_q && d2_check_q == 0 && d2_queue_full;

  logic [31:0] dispatched_q;
  assign all_dispatched_o = dispatched_q == insn_count_i;

  always_ff @(posedge clk_i) begin
    fault_o <= 1'b0;
    if (!rst_ni) begin
      active_q <= 1'b0;
      dispatched_q <= '0;
      finish_dispatched_o <= 1'b0;
      fault_code_o <= '0;
      fault_index_o <= '0;
      in_flight_q <= '0;
      sized_q <= 1'b0;
      sizing_q <= 1'b0;
      d1_valid_q <= 1'b0;
      d2_valid_q <= 1'b0;
    end else if (start_i && insn_addr_i[InsnShift-1:0] != '0) begin
      fault_o <= 1'b1;  // instructions are aligned
      fault_code_o <= loom_accel_pkg::FAULT_FETCH_FAULT;
      fault_index_o <= '0;
    end else if (start_i) begin
      active_q <= 1'b1;
      req_left_q <= insn_count_i;
      req_addr_q <= insn_addr_i;
      sized_q <= 1'b0;
      sizing_q <= 1'b0;
      in_flight_q <= '0;
      beat_q <= '0;
      recv_index_q <= '0;
      dispatched_q <= '0;
      finish_dispatched_o <= 1'b0;
      d1_valid_q <= 1'b0;
      d2_valid_q <= 1'b0;
    end else if (active_q) begin
      // requests
      sizing_q <= !ar_fire && !sized_q && !sizing_q;
      sized_q <= !ar_fire && (sized_q || sizing_q);
      if (!sized_q && !sizing_q) burst_q <= burst_size;
      room_q <= 5'(in_flight_q) + 5'(buf_count) + 5'(burst_q) <= 5'(BufferInsns);
      more_q <= req_left_q != 0;
      if (ar_fire) begin
        req_left_q <= req_left_q - 32'(burst_q);
        req_addr_q <= req_addr_q + (64'(burst_q) << InsnShift);
      end
      in_flight_q <= in_flight_q + (ar_fire ? CntW'(burst_q) : '0) - CntW'(insn_complete);
      // responses
      if (axi_rsp_i.r_valid) beat_q <= insn_complete ? '0 : beat_q + 1'b1;
      if (insn_complete) recv_index_q <= recv_index_q + 32'd1;
      // D1, D2
      if (buf_pop) d1_q <= buf_head;
      if (d1_free) d1_valid_q <= buf_pop;
      if (d2_free) begin
        d2_valid_q <= d1_valid_q;
        d2_q <= d1_q;
        d2_check_q <= check;
        d2_module_q <= to_load ? 2'd0 : to_store ? 2'd2 : 2'd1;
      end
      // faults: a bad beat, or a malformed instruction reaching D2
      if (r_error) begin
        fault_o <= 1'b1;
        fault_code_o <= loom_accel_pkg::FAULT_FETCH_FAULT;
        fault_index_o <= recv_index_q;
        active_q <= 1'b0;
      end else if (d2_valid_q && d2_check_q != 0) begin
        fault_o <= 1'b1;
        fault_code_o <= d2_check_q;
        fault_index_o <= d2_q.index;
        active_q <= 1'b0;
      end
      if (dispatch) begin
        dispatched_q <= dispatched_q + 32'd1;
        if (d2_q.insn[2:0] == loom_accel_pkg::OP_FINISH) finish_dispatched_o <= 1'b1;
      end
    end
  end
  always_ff @(posedge clk_i) ar_wait_q <= rst_ni && !start_i && ar_valid && !axi_rsp_i.ar_ready;

`ifndef SYNTHESIS
  // What the decoder lets through is well formed, and known; the buffer never overflows.
  always_ff @(posedge clk_i) begin
    if (rst_ni) begin
      assert (!dispatch || d2_check_q == 8'd0) else $error("loom_fetch: dispatch of a malformed instruction");
      assert (!dispatch || !$isunknown(d2_q.insn[2:0])) else $error("loom_fetch: dispatch of an unknown (X) opcode");
      assert (!(insn_complete && !r_error && buf_full)) else $error("loom_fetch: a beat for a full fetch buffer");
      assert (!$isunknown({axi_rsp_i.ar_ready, axi_rsp_i.r_valid})) else $error("loom_fetch: ARREADY or RVALID unknown (X)");
    end
  end
`endif
  wire unused_ok = &{1'b0, sram_base, dram_base, axi_rsp_i.r_last};
endmodule
