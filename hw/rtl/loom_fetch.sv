// Fetch: reads INSN_COUNT instructions from INSN_ADDR over AXI4 (bursts into a small fetch
// buffer), checks each one (the hardware decoder's view of the ISA: opcodes, memory types, ALU
// opcodes, reserved bits, dependency flags, DMA shapes, micro-op ranges) and dispatches it, in
// order, to the queue of the module that executes it. A malformed instruction stops fetch with
// a fault naming its index. Instructions pass three registers after the buffer (D1 taken from
// the buffer, D2 checked, D3 dispatched), so the decoder's logic is a stage of its own.
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
  logic [1:0]      size_step_q; // after a request: 0 the limits, 1 burst_q, 2 room_q and more_q
  logic [3:0]      left8_q;     // min(8, instructions left)
  logic [8:0]      to_4k_q;     // instructions left in the page
  logic [CntW-1:0] in_flight_q;  // requested, not yet in the buffer (each change counted a cycle late)
  logic [3:0]      requested_q;  // instructions of the request taken last cycle
  logic            completed_q;  // an instruction completed last cycle
  logic [CntW-1:0] buf_count;
  logic            active_q;
  logic            ar_wait_q;  // the AR shown last cycle was not taken: AXI4 keeps it until it is, halt or fault
  wire [8:0] to_4k = 9'(4096 / InsnBytes) - 9'(req_addr_q[11:InsnShift]);
  wire [3:0] left8 = req_left_q[31:3] == '0 ? 4'(req_left_q) : 4'd8;
  // Room in the buffer and requests left, as registers: recomputed in the steps after each
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

  // ---- decode: D1 takes the instruction from the buffer, D2 holds the checks' findings, D3 the
  // fault code, and dispatches. A stage takes an instruction only when it is empty, so no ready
  // signal runs back through the stages (one instruction every second cycle at most; the modules
  // take far longer per instruction). ----
  logic d1_valid_q, d2_valid_q, d3_valid_q;
  loom_accel_pkg::queue_entry_t d1_q, d2_q, d3_q;
  logic [9:0] d2_flags_q;   // one bit per check below (their faults' priority: `code`)
  logic [1:0] d2_module_q, d3_module_q;  // 0 load, 1 compute, 2 store
  logic       d3_ok_q;      // D3's instruction is well formed
  logic [7:0] d3_code_q;    // else the fault code

  // The decoder's checks of D1's instruction.
  wire [InsnW-1:0] insn = d1_q.insn;
  wire [2:0] opcode = insn[2:0];
  wire pop_prev = insn[loom_accel_pkg::MEM_POP_PREV_LSB], pop_next = insn[loom_accel_pkg::MEM_POP_NEXT_LSB];
  wire push_prev = insn[loom_accel_pkg::MEM_PUSH_PREV_LSB], push_next = insn[loom_accel_pkg::MEM_PUSH_NEXT_LSB];
  logic [2:0] mem_type;
  logic [loom_accel_pkg::MEM_SRAM_BASE_W-1:0] sram_base;
  logic [31:0] dram_base;
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
  wire [loom_accel_pkg::GEMM_UOP_BEGIN_W-1:0] uop_begin = insn[loom_accel_pkg::GEMM_UOP_BEGIN_LSB+:loom_accel_pkg::GEMM_UOP_BEGIN_W];
  wire [loom_accel_pkg::GEMM_UOP_END_W-1:0] uop_end = insn[loom_accel_pkg::GEMM_UOP_END_LSB+:loom_accel_pkg::GEMM_UOP_END_W];
  wire [loom_accel_pkg::GEMM_ITER_OUT_W-1:0] iter_out = insn[loom_accel_pkg::GEMM_ITER_OUT_LSB+:loom_accel_pkg::GEMM_ITER_OUT_W];
  wire [loom_accel_pkg::GEMM_ITER_IN_W-1:0] iter_in = insn[loom_accel_pkg::GEMM_ITER_IN_LSB+:loom_accel_pkg::GEMM_ITER_IN_W];
  wire [2:0] alu_op = insn[loom_accel_pkg::ALU_ALU_OPCODE_LSB+:loom_accel_pkg::ALU_ALU_OPCODE_W];
  wire use_imm = insn[loom_accel_pkg::ALU_USE_IMM_LSB];
  wire signed [15:0] imm = insn[loom_accel_pkg::ALU_IMM_LSB+:loom_accel_pkg::ALU_IMM_W];
  wire pads = (y_pad0 | y_pad1 | x_pad0 | x_pad1) != 0;

  function automatic logic reserved_set(input logic [InsnW-1:0] w, input int used_bits);
    reserved_set = (w >> used_bits) != 0;
  endfunction

  wire [9:0] flags;
  assign flags[0] = opcode > 3'd4;
  assign flags[1] = (is_load || is_store) && mem_type > 3'd4;
  // CLIP or SHRSAT with a register operand (their bounds are the immediate's), or SHRSAT's reserved
  // immediate bits set
  assign flags[2] = is_alu && (((alu_op == loom_accel_pkg::ALU_CLIP || alu_op == loom_accel_pkg::ALU_SHRSAT) && !use_imm) ||
                               (alu_op == loom_accel_pkg::ALU_SHRSAT && imm[15:10] != '0));
  assign flags[3] = ((is_load || is_store) && reserved_set(insn, loom_accel_pkg::MEM_USED_BITS)) ||
                    (is_gemm && reserved_set(insn, loom_accel_pkg::GEMM_USED_BITS)) ||
                    (is_alu && reserved_set(insn, loom_accel_pkg::ALU_USED_BITS)) ||
                    (opcode == loom_accel_pkg::OP_FINISH && reserved_set(insn, loom_accel_pkg::FINISH_USED_BITS));
  assign flags[4] = (to_load && (pop_prev || push_prev)) || (to_store && (pop_next || push_next));
  assign flags[5] = (is_store && mem_type != loom_accel_pkg::MEM_OUT) || (is_load && mem_type == loom_accel_pkg::MEM_OUT);
  assign flags[6] = (is_load || is_store) && pads &&
                    (is_store || mem_type == loom_accel_pkg::MEM_UOP || x_size == 0 || y_size == 0);
  assign flags[9] = (is_load || is_store) && x_size != 0 && y_size > 16'd1 && x_stride < x_size;  // rows overlap
  assign flags[7] = (is_gemm || is_alu) &&
                    (32'(uop_end) <= 32'(uop_begin) || 32'(uop_end) > 32'(loom_accel_pkg::UOP_DEPTH) || iter_out == 0 || iter_in == 0);
  // a shift by more than 31 either way, as bit tests (|imm| > 31)
  assign flags[8] = is_alu && alu_op == loom_accel_pkg::ALU_SHR && use_imm &&
                    (imm[15] ? imm[14:5] != '1 || imm[4:0] == 5'd0 : imm[14:5] != '0);

  // The fault of the first check that fails, 0 if none.
  logic [7:0] code;
  always_comb begin
    code = 8'd0;
    if (d2_flags_q[0]) code = loom_accel_pkg::FAULT_ILLEGAL_OPCODE;
    else if (d2_flags_q[1]) code = loom_accel_pkg::FAULT_ILLEGAL_MEM_TYPE;
    else if (d2_flags_q[2]) code = loom_accel_pkg::FAULT_ILLEGAL_ALU_OP;
    else if (d2_flags_q[3]) code = loom_accel_pkg::FAULT_RESERVED_BITS;
    else if (d2_flags_q[4]) code = loom_accel_pkg::FAULT_ILLEGAL_DEPS;
    else if (d2_flags_q[5]) code = loom_accel_pkg::FAULT_ILLEGAL_MEM_TYPE;
    else if (d2_flags_q[6] || d2_flags_q[9]) code = loom_accel_pkg::FAULT_BAD_DMA_SHAPE;
    else if (d2_flags_q[7] || d2_flags_q[8]) code = loom_accel_pkg::FAULT_BAD_UOP_RANGE;
  end

  wire d3_queue_full = d3_module_q == 2'd0 ? load_full_i : d3_module_q == 2'd2 ? store_full_i : compute_full_i;
  wire dispatch = active_q && d3_valid_q && d3_ok_q && !d3_queue_full && !halt_i;
  assign buf_pop = active_q && !buf_empty && !d1_valid_q;
  assign q_data_o = d3_q;
  assign load_push_o = dispatch && d3_module_q == 2'd0;
  assign compute_push_o = dispatch && d3_module_q == 2'd1;
  assign store_push_o = dispatch && d3_module_q == 2'd2;
  assign blocked_o = active_q && d3_valid_q && d3_ok_q && d3_queue_full;

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
      requested_q <= '0;
      completed_q <= 1'b0;
      sized_q <= 1'b0;
      size_step_q <= '0;
      d1_valid_q <= 1'b0;
      d2_valid_q <= 1'b0;
      d3_valid_q <= 1'b0;
    end else if (start_i && insn_addr_i[InsnShift-1:0] != '0) begin
      fault_o <= 1'b1;  // instructions are aligned
      fault_code_o <= loom_accel_pkg::FAULT_FETCH_FAULT;
      fault_index_o <= '0;
    end else if (start_i) begin
      active_q <= 1'b1;
      req_left_q <= insn_count_i;
      req_addr_q <= insn_addr_i;
      sized_q <= 1'b0;
      size_step_q <= '0;
      in_flight_q <= '0;
      requested_q <= '0;
      completed_q <= 1'b0;
      beat_q <= '0;
      recv_index_q <= '0;
      dispatched_q <= '0;
      finish_dispatched_o <= 1'b0;
      d1_valid_q <= 1'b0;
      d2_valid_q <= 1'b0;
      d3_valid_q <= 1'b0;
    end else if (active_q) begin
      // requests
      if (ar_fire) begin
        sized_q <= 1'b0;
        size_step_q <= '0;
      end else if (!sized_q) begin
        size_step_q <= size_step_q + 2'd1;
        sized_q <= size_step_q == 2'd2;
      end
      left8_q <= left8;
      to_4k_q <= to_4k;
      if (!sized_q && size_step_q == 2'd1) burst_q <= to_4k_q < 9'(left8_q) ? 4'(to_4k_q) : left8_q;
      room_q <= 5'(in_flight_q) + 5'(buf_count) + 5'(burst_q) <= 5'(BufferInsns);
      more_q <= req_left_q != 0;
      if (ar_fire) begin
        req_left_q <= req_left_q - 32'(burst_q);
        req_addr_q <= req_addr_q + (64'(burst_q) << InsnShift);
      end
      requested_q <= ar_fire ? burst_q : 4'd0;
      completed_q <= insn_complete;
      in_flight_q <= in_flight_q + CntW'(requested_q) - CntW'(completed_q);
      // responses
      if (axi_rsp_i.r_valid) beat_q <= insn_complete ? '0 : beat_q + 1'b1;
      if (insn_complete) recv_index_q <= recv_index_q + 32'd1;
      // D1, D2, D3: each takes the instruction before it only when empty
      if (buf_pop) begin
        d1_q <= buf_head;
        d1_valid_q <= 1'b1;
      end
      if (d1_valid_q && !d2_valid_q) begin
        d1_valid_q <= buf_pop;
        d2_valid_q <= 1'b1;
        d2_q <= d1_q;
        d2_flags_q <= flags;
        d2_module_q <= to_load ? 2'd0 : to_store ? 2'd2 : 2'd1;
      end
      if (d2_valid_q && !d3_valid_q) begin
        d2_valid_q <= d1_valid_q && !d2_valid_q;
        d3_valid_q <= 1'b1;
        d3_q <= d2_q;
        d3_module_q <= d2_module_q;
        d3_ok_q <= d2_flags_q == '0;
        d3_code_q <= code;
      end
      if (dispatch) d3_valid_q <= 1'b0;
      // faults: a bad beat, or a malformed instruction reaching D3
      if (r_error) begin
        fault_o <= 1'b1;
        fault_code_o <= loom_accel_pkg::FAULT_FETCH_FAULT;
        fault_index_o <= recv_index_q;
        active_q <= 1'b0;
      end else if (d3_valid_q && !d3_ok_q) begin
        fault_o <= 1'b1;
        fault_code_o <= d3_code_q;
        fault_index_o <= d3_q.index;
        active_q <= 1'b0;
      end
      if (dispatch) begin
        dispatched_q <= dispatched_q + 32'd1;
        if (d3_q.insn[2:0] == loom_accel_pkg::OP_FINISH) finish_dispatched_o <= 1'b1;
      end
    end
  end
  always_ff @(posedge clk_i) ar_wait_q <= rst_ni && !start_i && ar_valid && !axi_rsp_i.ar_ready;

`ifndef SYNTHESIS
  // What the decoder lets through is well formed, and known; the buffer never overflows.
  always_ff @(posedge clk_i) begin
    if (rst_ni) begin
      assert (!dispatch || d3_code_q == 8'd0) else $error("loom_fetch: dispatch of a malformed instruction");
      assert (!dispatch || !$isunknown(d3_q.insn[2:0])) else $error("loom_fetch: dispatch of an unknown (X) opcode");
      assert (!(insn_complete && !r_error && buf_full)) else $error("loom_fetch: a beat for a full fetch buffer");
      assert (!$isunknown({axi_rsp_i.ar_ready, axi_rsp_i.r_valid})) else $error("loom_fetch: ARREADY or RVALID unknown (X)");
    end
  end
`endif
  wire unused_ok = &{1'b0, sram_base, dram_base, axi_rsp_i.r_last};
endmodule
