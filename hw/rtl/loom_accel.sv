// The accelerator: fetch dispatches instructions to the load, compute and store modules, which
// run concurrently and synchronize only through four dependency-token counters (load->compute,
// compute->load, compute->store, store->compute). One AXI4 master port to DRAM (reads shared by
// fetch and the four read DMAs, writes from the store module) and an AXI4-Lite control port.
// A run ends DONE when every instruction has retired (and a FINISH was among them), or ERROR
// with a fault cause and the index of the instruction at fault; deadlocks are detected exactly:
// every module waits for a token no module can push.
module loom_accel #(
    parameter int QUEUE_DEPTH = 32,
    parameter int TOKEN_BITS = 16,
    localparam int BusW = loom_accel_pkg::BUS_BYTES * 8,
    localparam int NumCounters = loom_accel_pkg::NUM_COUNTERS
) (
    input  logic clk,
    input  logic rst_n,
    output logic irq,  // high while STATUS shows DONE or ERROR (what the simulation waits for)
    output logic ap_interrupt,  // ap_ctrl_hs: GIE && (IER & ISR) != 0 (the kernel's interrupt)
    // AXI4-Lite control slave
    input  logic        s_axil_awvalid,
    output logic        s_axil_awready,
    input  logic [11:0] s_axil_awaddr,
    input  logic        s_axil_wvalid,
    output logic        s_axil_wready,
    input  logic [31:0] s_axil_wdata,
    input  logic [3:0]  s_axil_wstrb,
    output logic        s_axil_bvalid,
    input  logic        s_axil_bready,
    output logic [1:0]  s_axil_bresp,
    input  logic        s_axil_arvalid,
    output logic        s_axil_arready,
    input  logic [11:0] s_axil_araddr,
    output logic        s_axil_rvalid,
    input  logic        s_axil_rready,
    output logic [31:0] s_axil_rdata,
    output logic [1:0]  s_axil_rresp,
    // AXI4 memory master (INCR bursts of BUS_BYTES beats)
    output logic            m_axi_arvalid,
    input  logic            m_axi_arready,
    output logic [63:0]     m_axi_araddr,
    output logic [7:0]      m_axi_arlen,
    output logic [2:0]      m_axi_arsize,
    output logic [1:0]      m_axi_arburst,
    output logic [2:0]      m_axi_arid,
    input  logic            m_axi_rvalid,
    output logic            m_axi_rready,
    input  logic [BusW-1:0] m_axi_rdata,
    input  logic [1:0]      m_axi_rresp,
    input  logic            m_axi_rlast,
    input  logic [2:0]      m_axi_rid,
    output logic            m_axi_awvalid,
    input  logic            m_axi_awready,
    output logic [63:0]     m_axi_awaddr,
    output logic [7:0]      m_axi_awlen,
    output logic [2:0]      m_axi_awsize,
    output logic [1:0]      m_axi_awburst,
    output logic [2:0]      m_axi_awid,
    output logic            m_axi_wvalid,
    input  logic            m_axi_wready,
    output logic [BusW-1:0] m_axi_wdata,
    output logic [BusW/8-1:0] m_axi_wstrb,
    output logic            m_axi_wlast,
    input  logic            m_axi_bvalid,
    output logic            m_axi_bready,
    input  logic [1:0]      m_axi_bresp,
    input  logic [2:0]      m_axi_bid
);
  // ---- control ----
  logic start, running, done_flag, error_flag;
  logic [7:0] fault_cause;
  logic [31:0] error_index;
  logic [63:0] insn_addr, cycles;
  logic [31:0] insn_count;
  logic [NumCounters*64-1:0] counters_flat;  // counter k at [64k +: 64]
  loom_ctrl ctrl (
      .clk, .rst_n,
      .awvalid(s_axil_awvalid), .awready(s_axil_awready), .awaddr(s_axil_awaddr), .wvalid(s_axil_wvalid),
      .wready(s_axil_wready), .wdata(s_axil_wdata), .bvalid(s_axil_bvalid), .bready(s_axil_bready), .bresp(s_axil_bresp),
      .arvalid(s_axil_arvalid), .arready(s_axil_arready), .araddr(s_axil_araddr), .rvalid(s_axil_rvalid),
      .rready(s_axil_rready), .rdata(s_axil_rdata), .rresp(s_axil_rresp),
      .start, .insn_addr, .insn_count, .running,
      .status({16'd0, fault_cause, 6'd0, error_flag, done_flag}), .cycles, .error_index, .counters(counters_flat),
      .wait_state({st_stalled, st_wait[30:0], cp_stalled, cp_wait[30:0], ld_stalled, ld_wait[30:0]}), .interrupt(ap_interrupt));
  assign irq = done_flag || error_flag;
  wire halt = error_flag || !running;

  // ---- dependency tokens: load->compute, compute->load, compute->store, store->compute ----
  logic ld_pop_next, ld_push_next, cp_pop_prev, cp_pop_next, cp_push_prev, cp_push_next, st_pop_prev, st_push_prev;
  logic l2c_avail, c2l_avail, c2s_avail, s2c_avail, l2c_room, c2l_room, c2s_room, s2c_room;
  loom_token_counter #(.Bits(TOKEN_BITS)) tok_l2c (
      .clk_i(clk), .rst_ni(rst_n), .clear_i(start), .enable_i(running), .push_i(ld_push_next), .pop_i(cp_pop_prev),
      .avail_o(l2c_avail), .room_o(l2c_room));
  loom_token_counter #(.Bits(TOKEN_BITS)) tok_c2l (
      .clk_i(clk), .rst_ni(rst_n), .clear_i(start), .enable_i(running), .push_i(cp_push_prev), .pop_i(ld_pop_next),
      .avail_o(c2l_avail), .room_o(c2l_room));
  loom_token_counter #(.Bits(TOKEN_BITS)) tok_c2s (
      .clk_i(clk), .rst_ni(rst_n), .clear_i(start), .enable_i(running), .push_i(cp_push_next), .pop_i(st_pop_prev),
      .avail_o(c2s_avail), .room_o(c2s_room));
  loom_token_counter #(.Bits(TOKEN_BITS)) tok_s2c (
      .clk_i(clk), .rst_ni(rst_n), .clear_i(start), .enable_i(running), .push_i(st_push_prev), .pop_i(cp_pop_next),
      .avail_o(s2c_avail), .room_o(s2c_room));

  // ---- memory read port: fetch, inp, wgt, uop, acc ----
  localparam int NRd = 5;
  logic [NRd-1:0] arvalid, arready, rvalid, rready;
  logic [NRd*64-1:0] araddr;
  logic [NRd*8-1:0] arlen;
  loom_axi_rd_arbiter #(.N(NRd)) rd_arbiter (
      .clk, .rst_n, .s_arvalid(arvalid), .s_arready(arready), .s_araddr(araddr), .s_arlen(arlen),
      .s_rvalid(rvalid), .s_rready(rready),
      .m_arvalid(m_axi_arvalid), .m_arready(m_axi_arready), .m_araddr(m_axi_araddr), .m_arlen(m_axi_arlen),
      .m_arid(m_axi_arid), .m_rvalid(m_axi_rvalid), .m_rready(m_axi_rready), .m_rid(m_axi_rid));
  assign m_axi_arsize = 3'($clog2(BusW / 8));
  assign m_axi_arburst = 2'b01;  // INCR
  assign m_axi_awsize = 3'($clog2(BusW / 8));
  assign m_axi_awburst = 2'b01;
  assign m_axi_awid = '0;
  assign m_axi_wstrb = '1;

  // ---- fetch ----
  logic [159:0] q_data;
  logic ld_push, cp_push, st_push, ld_full, cp_full, st_full;
  logic all_dispatched, finish_dispatched, fetch_fault, fetch_blocked;
  logic [7:0] fetch_code;
  logic [31:0] fetch_index;
  loom_fetch fetch (
      .clk, .rst_n, .start, .insn_addr, .insn_count, .halt, .all_dispatched, .finish_dispatched,
      .fault(fetch_fault), .fault_code(fetch_code), .fault_index(fetch_index), .blocked(fetch_blocked),
      .arvalid(arvalid[0]), .arready(arready[0]), .araddr(araddr[63:0]), .arlen(arlen[7:0]),
      .rvalid(rvalid[0]), .rready(rready[0]), .rdata(m_axi_rdata), .rresp(m_axi_rresp),
      .q_data, .load_push(ld_push), .load_full(ld_full), .compute_push(cp_push), .compute_full(cp_full),
      .store_push(st_push), .store_full(st_full));

  // ---- scratchpads shared between modules ----
  localparam int InpEW = loom_accel_pkg::INP_ENTRY_BYTES * 8, WgtEW = loom_accel_pkg::WGT_ENTRY_BYTES * 8;
  localparam int OutEW = loom_accel_pkg::OUT_ENTRY_BYTES * 8;
  logic inp_we, wgt_we, out_we;
  logic [loom_accel_pkg::INP_IDX_BITS-1:0] inp_waddr, inp_raddr;
  logic [loom_accel_pkg::WGT_IDX_BITS-1:0] wgt_waddr, wgt_raddr;
  logic [loom_accel_pkg::OUT_IDX_BITS-1:0] out_waddr, out_raddr;
  logic [InpEW-1:0] inp_wdata, inp_rdata;
  logic [WgtEW-1:0] wgt_wdata, wgt_rdata;
  logic [OutEW-1:0] out_wdata, out_rdata;
  loom_sram #(.WIDTH(InpEW), .DEPTH(loom_accel_pkg::INP_DEPTH)) inp_sram (
      .clk, .we(inp_we), .waddr(inp_waddr), .wdata(inp_wdata), .raddr(inp_raddr), .rdata(inp_rdata));
  loom_sram #(.WIDTH(WgtEW), .DEPTH(loom_accel_pkg::WGT_DEPTH)) wgt_sram (
      .clk, .we(wgt_we), .waddr(wgt_waddr), .wdata(wgt_wdata), .raddr(wgt_raddr), .rdata(wgt_rdata));
  loom_sram #(.WIDTH(OutEW), .DEPTH(loom_accel_pkg::OUT_DEPTH)) out_sram (
      .clk, .we(out_we), .waddr(out_waddr), .wdata(out_wdata), .raddr(out_raddr), .rdata(out_rdata));

  // ---- modules ----
  logic ld_busy, ld_stalled, ld_idle, cp_busy, cp_stalled, cp_idle, st_busy, st_stalled, st_idle;
  logic [31:0] ld_wait, cp_wait, st_wait;
  logic ld_fault, cp_fault, st_fault;
  logic [7:0] ld_code, cp_code, st_code;
  logic ld_insn, inp_entry, wgt_entry, uop_load, acc_load, gemm_insn, alu_insn, uop_entry, acc_entry, mac_step, alu_step;
  logic st_insn, out_entry, finish_done;
  loom_load #(.QUEUE_DEPTH(QUEUE_DEPTH)) load (
      .clk, .rst_n, .halt, .q_push(ld_push), .q_data, .q_full(ld_full),
      .next_avail(c2l_avail), .next_room(l2c_room), .pop_next(ld_pop_next), .push_next(ld_push_next),
      .busy(ld_busy), .stalled(ld_stalled), .idle(ld_idle), .wait_index(ld_wait), .fault(ld_fault), .fault_code(ld_code),
      .insn_started(ld_insn), .inp_entry, .wgt_entry, .inp_we, .inp_waddr, .inp_wdata, .wgt_we, .wgt_waddr, .wgt_wdata,
      .arvalid(arvalid[2:1]), .arready(arready[2:1]), .araddr(araddr[191:64]), .arlen(arlen[23:8]),
      .rvalid(rvalid[2:1]), .rready(rready[2:1]), .rdata(m_axi_rdata), .rresp(m_axi_rresp), .rlast(m_axi_rlast));
  loom_compute #(.QUEUE_DEPTH(QUEUE_DEPTH)) compute (
      .clk, .rst_n, .halt, .q_push(cp_push), .q_data, .q_full(cp_full),
      .prev_avail(l2c_avail), .next_avail(s2c_avail), .prev_room(c2l_room), .next_room(c2s_room),
      .pop_prev(cp_pop_prev), .pop_next(cp_pop_next), .push_prev(cp_push_prev), .push_next(cp_push_next),
      .busy(cp_busy), .stalled(cp_stalled), .idle(cp_idle), .wait_index(cp_wait), .fault(cp_fault), .fault_code(cp_code),
      .finish_done, .uop_load_started(uop_load), .acc_load_started(acc_load), .gemm_started(gemm_insn),
      .alu_started(alu_insn), .uop_entry, .acc_entry, .mac_step, .alu_step,
      .inp_raddr, .inp_rdata, .wgt_raddr, .wgt_rdata, .out_we, .out_waddr, .out_wdata,
      .arvalid(arvalid[4:3]), .arready(arready[4:3]), .araddr(araddr[319:192]), .arlen(arlen[39:24]),
      .rvalid(rvalid[4:3]), .rready(rready[4:3]), .rdata(m_axi_rdata), .rresp(m_axi_rresp), .rlast(m_axi_rlast));
  loom_store #(.QUEUE_DEPTH(QUEUE_DEPTH)) store (
      .clk, .rst_n, .halt, .q_push(st_push), .q_data, .q_full(st_full),
      .prev_avail(c2s_avail), .prev_room(s2c_room), .pop_prev(st_pop_prev), .push_prev(st_push_prev),
      .busy(st_busy), .stalled(st_stalled), .idle(st_idle), .wait_index(st_wait), .fault(st_fault), .fault_code(st_code),
      .insn_started(st_insn), .out_entry, .out_raddr, .out_rdata,
      .awvalid(m_axi_awvalid), .awready(m_axi_awready), .awaddr(m_axi_awaddr), .awlen(m_axi_awlen),
      .wvalid(m_axi_wvalid), .wready(m_axi_wready), .wdata(m_axi_wdata), .wlast(m_axi_wlast),
      .bvalid(m_axi_bvalid), .bready(m_axi_bready), .bresp(m_axi_bresp));

  // ---- deadlock and completion ----
  wire all_quiet = (ld_idle || ld_stalled) && (cp_idle || cp_stalled) && (st_idle || st_stalled);
  wire someone_waits = ld_stalled || cp_stalled || st_stalled;
  wire stuck = running && all_quiet && someone_waits && (all_dispatched || fetch_blocked);
  logic stuck_q;
  logic [31:0] deadlock_index;
  always_comb begin
    deadlock_index = '1;
    if (ld_stalled && ld_wait < deadlock_index) deadlock_index = ld_wait;
    if (cp_stalled && cp_wait < deadlock_index) deadlock_index = cp_wait;
    if (st_stalled && st_wait < deadlock_index) deadlock_index = st_wait;
  end
  wire drained = running && all_dispatched && ld_idle && cp_idle && st_idle;

  // ---- run state, faults, counters ----
  logic [NumCounters*32-1:0] inc;  // this cycle's increment of counter k at [32k +: 32]
  always_comb begin
    inc = '0;
    inc[loom_accel_pkg::CNT_LOAD_INSNS*32+:32] = 32'(ld_insn);
    inc[loom_accel_pkg::CNT_UOP_LOAD_INSNS*32+:32] = 32'(uop_load);
    inc[loom_accel_pkg::CNT_ACC_LOAD_INSNS*32+:32] = 32'(acc_load);
    inc[loom_accel_pkg::CNT_STORE_INSNS*32+:32] = 32'(st_insn);
    inc[loom_accel_pkg::CNT_GEMM_INSNS*32+:32] = 32'(gemm_insn);
    inc[loom_accel_pkg::CNT_ALU_INSNS*32+:32] = 32'(alu_insn);
    inc[loom_accel_pkg::CNT_DMA_LOAD_BYTES_INP*32+:32] = inp_entry ? 32'(loom_accel_pkg::INP_ENTRY_BYTES) : 32'd0;
    inc[loom_accel_pkg::CNT_DMA_LOAD_BYTES_WGT*32+:32] = wgt_entry ? 32'(loom_accel_pkg::WGT_ENTRY_BYTES) : 32'd0;
    inc[loom_accel_pkg::CNT_DMA_LOAD_BYTES_ACC*32+:32] = acc_entry ? 32'(loom_accel_pkg::ACC_ENTRY_BYTES) : 32'd0;
    inc[loom_accel_pkg::CNT_DMA_LOAD_BYTES_UOP*32+:32] = uop_entry ? 32'(loom_accel_pkg::UOP_ENTRY_BYTES) : 32'd0;
    inc[loom_accel_pkg::CNT_DMA_STORE_BYTES*32+:32] = out_entry ? 32'(loom_accel_pkg::OUT_ENTRY_BYTES) : 32'd0;
    inc[loom_accel_pkg::CNT_GEMM_MACS*32+:32] = mac_step ? 32'(loom_accel_pkg::BATCH * loom_accel_pkg::BLOCK_IN * loom_accel_pkg::BLOCK_OUT) : 32'd0;
    inc[loom_accel_pkg::CNT_ALU_OPS*32+:32] = alu_step ? 32'(loom_accel_pkg::BATCH * loom_accel_pkg::BLOCK_OUT) : 32'd0;
    inc[loom_accel_pkg::CNT_LOAD_BUSY_CYCLES*32+:32] = 32'(ld_busy);
    inc[loom_accel_pkg::CNT_LOAD_STALL_CYCLES*32+:32] = 32'(ld_stalled);
    inc[loom_accel_pkg::CNT_COMPUTE_BUSY_CYCLES*32+:32] = 32'(cp_busy);
    inc[loom_accel_pkg::CNT_COMPUTE_STALL_CYCLES*32+:32] = 32'(cp_stalled);
    inc[loom_accel_pkg::CNT_STORE_BUSY_CYCLES*32+:32] = 32'(st_busy);
    inc[loom_accel_pkg::CNT_STORE_STALL_CYCLES*32+:32] = 32'(st_stalled);
    inc[loom_accel_pkg::CNT_GEMM_CYCLES*32+:32] = 32'(mac_step);
  end

  // The fault that ends the run this cycle, if any (in priority order).
  logic raise;
  logic [7:0] raise_cause;
  logic [31:0] raise_index;
  always_comb begin
    raise = 1'b1;
    raise_cause = '0;
    raise_index = '0;
    if (fetch_fault) {raise_cause, raise_index} = {fetch_code, fetch_index};
    else if (ld_fault) {raise_cause, raise_index} = {ld_code, ld_wait};
    else if (cp_fault) {raise_cause, raise_index} = {cp_code, cp_wait};
    else if (st_fault) {raise_cause, raise_index} = {st_code, st_wait};
    else if (stuck && stuck_q) {raise_cause, raise_index} = {loom_accel_pkg::FAULT_DEADLOCK, deadlock_index};
    else if (drained && !finish_dispatched) {raise_cause, raise_index} = {loom_accel_pkg::FAULT_NO_FINISH, insn_count};
    else raise = 1'b0;
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      running <= 1'b0;
      done_flag <= 1'b0;
      error_flag <= 1'b0;
      fault_cause <= '0;
      error_index <= '0;
      cycles <= '0;
      stuck_q <= 1'b0;
      counters_flat <= '0;
    end else if (start) begin
      running <= 1'b1;
      done_flag <= 1'b0;
      error_flag <= 1'b0;
      fault_cause <= '0;
      error_index <= '0;
      cycles <= '0;
      stuck_q <= 1'b0;
      counters_flat <= '0;
    end else if (running) begin
      cycles <= cycles + 64'd1;
      for (int k = 0; k < NumCounters; k++) counters_flat[k*64+:64] <= counters_flat[k*64+:64] + 64'(inc[k*32+:32]);
      stuck_q <= stuck;
      if (raise) begin
        error_flag <= 1'b1;
        running <= 1'b0;
        fault_cause <= raise_cause;
        error_index <= raise_index;
      end else if (drained) begin
        running <= 1'b0;
        done_flag <= 1'b1;
      end
    end
  end
  wire unused_ok = &{1'b0, s_axil_wstrb, m_axi_bid, finish_done, ld_wait[31], cp_wait[31], st_wait[31]};

`ifndef SYNTHESIS
  // ---- assertions (simulation only: yosys reads the SYNTHESIS side; the rtl backend turns a
  // failure into a DeviceError naming this file and line) ----
  localparam int BusShift = $clog2(BusW / 8);
  // AXI4 master: a VALID without READY stays high, with its payload unchanged, until the handshake.
  a_ar_hold: assert property (@(posedge clk) disable iff (!rst_n)
      m_axi_arvalid && !m_axi_arready |=> m_axi_arvalid && $stable(m_axi_araddr) && $stable(m_axi_arlen) && $stable(m_axi_arid))
    else $error("AXI4 AR channel: ARVALID dropped, or ARADDR/ARLEN/ARID changed, before ARREADY");
  a_aw_hold: assert property (@(posedge clk) disable iff (!rst_n)
      m_axi_awvalid && !m_axi_awready |=> m_axi_awvalid && $stable(m_axi_awaddr) && $stable(m_axi_awlen))
    else $error("AXI4 AW channel: AWVALID dropped, or AWADDR/AWLEN changed, before AWREADY");
  a_w_hold: assert property (@(posedge clk) disable iff (!rst_n)
      m_axi_wvalid && !m_axi_wready |=> m_axi_wvalid && $stable(m_axi_wdata) && $stable(m_axi_wlast))
    else $error("AXI4 W channel: WVALID dropped, or WDATA/WLAST changed, before WREADY");
  // AXI4 master: no burst crosses a 4 KiB boundary.
  a_ar_4k: assert property (@(posedge clk) disable iff (!rst_n)
      m_axi_arvalid |-> m_axi_araddr[63:12] == 52'((m_axi_araddr + ((64'(m_axi_arlen) + 64'd1) << BusShift) - 64'd1) >> 12))
    else $error("AXI4 AR channel: burst crosses a 4 KiB boundary");
  a_aw_4k: assert property (@(posedge clk) disable iff (!rst_n)
      m_axi_awvalid |-> m_axi_awaddr[63:12] == 52'((m_axi_awaddr + ((64'(m_axi_awlen) + 64'd1) << BusShift) - 64'd1) >> 12))
    else $error("AXI4 AW channel: burst crosses a 4 KiB boundary");
  // AXI4-Lite slave: a response stays, unchanged, until the host takes it.
  a_axil_r_hold: assert property (@(posedge clk) disable iff (!rst_n)
      s_axil_rvalid && !s_axil_rready |=> s_axil_rvalid && $stable(s_axil_rdata) && $stable(s_axil_rresp))
    else $error("AXI4-Lite R channel: RVALID dropped, or RDATA/RRESP changed, before RREADY");
  a_axil_b_hold: assert property (@(posedge clk) disable iff (!rst_n)
      s_axil_bvalid && !s_axil_bready |=> s_axil_bvalid && $stable(s_axil_bresp))
    else $error("AXI4-Lite B channel: BVALID dropped, or BRESP changed, before BREADY");
`endif
endmodule
