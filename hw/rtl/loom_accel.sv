// The accelerator: fetch dispatches instructions to the load, compute and store modules, which
// run concurrently and synchronize only through four dependency-token counters (load->compute,
// compute->load, compute->store, store->compute). One AXI4 master port to DRAM (reads shared by
// fetch and the four read DMAs, writes from the store module) and an AXI4-Lite control port.
// A run ends DONE when every instruction has retired (and a FINISH was among them), or ERROR
// with a fault cause and the index of the instruction at fault; deadlocks are detected exactly:
// every module waits for a token no module can push.
module loom_accel #(
    parameter int QueueDepth = 32,
    parameter int TokenBits = 16,
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
  // Read by the simulators' timelines (Verilator public; no effect on synthesis): whether each
  // module waits for a token, and the index of the instruction it waits on or executes.
  logic ld_stalled /*verilator public_flat_rd*/;
  logic cp_stalled /*verilator public_flat_rd*/;
  logic st_stalled /*verilator public_flat_rd*/;
  logic [31:0] ld_wait /*verilator public_flat_rd*/;
  logic [31:0] cp_wait /*verilator public_flat_rd*/;
  logic [31:0] st_wait /*verilator public_flat_rd*/;
  loom_ctrl ctrl (
      .clk_i        (clk),
      .rst_ni       (rst_n),
      .awvalid_i    (s_axil_awvalid),
      .awready_o    (s_axil_awready),
      .awaddr_i     (s_axil_awaddr),
      .wvalid_i     (s_axil_wvalid),
      .wready_o     (s_axil_wready),
      .wdata_i      (s_axil_wdata),
      .bvalid_o     (s_axil_bvalid),
      .bready_i     (s_axil_bready),
      .bresp_o      (s_axil_bresp),
      .arvalid_i    (s_axil_arvalid),
      .arready_o    (s_axil_arready),
      .araddr_i     (s_axil_araddr),
      .rvalid_o     (s_axil_rvalid),
      .rready_i     (s_axil_rready),
      .rdata_o      (s_axil_rdata),
      .rresp_o      (s_axil_rresp),
      .start_o      (start),
      .insn_addr_o  (insn_addr),
      .insn_count_o (insn_count),
      .running_i    (running),
      .fault_cause_i(fault_cause),
      .error_i      (error_flag),
      .done_i       (done_flag),
      .cycles_i     (cycles),
      .error_index_i(error_index),
      .counters_i   (counters_flat),
      .wait_state_i ({st_stalled, st_wait[30:0], cp_stalled, cp_wait[30:0], ld_stalled, ld_wait[30:0]}),
      .interrupt_o  (ap_interrupt)
  );
  assign irq = done_flag || error_flag;
  logic halt;

  // ---- dependency tokens: load->compute, compute->load, compute->store, store->compute ----
  loom_accel_pkg::tokens_t ld_tokens, cp_tokens, st_tokens;
  loom_accel_pkg::token_ops_t ld_ops, cp_ops, st_ops;
  logic l2c_avail, c2l_avail, c2s_avail, s2c_avail, l2c_room, c2l_room, c2s_room, s2c_room;
  loom_token_counter #(
      .Bits(TokenBits)
  ) tok_l2c (
      .clk_i   (clk),
      .rst_ni  (rst_n),
      .clear_i (start),
      .enable_i(running),
      .push_i  (ld_ops.push_next),
      .pop_i   (cp_ops.pop_prev),
      .avail_o (l2c_avail),
      .room_o  (l2c_room)
  );
  loom_token_counter #(
      .Bits(TokenBits)
  ) tok_c2l (
      .clk_i   (clk),
      .rst_ni  (rst_n),
      .clear_i (start),
      .enable_i(running),
      .push_i  (cp_ops.push_prev),
      .pop_i   (ld_ops.pop_next),
      .avail_o (c2l_avail),
      .room_o  (c2l_room)
  );
  loom_token_counter #(
      .Bits(TokenBits)
  ) tok_c2s (
      .clk_i   (clk),
      .rst_ni  (rst_n),
      .clear_i (start),
      .enable_i(running),
      .push_i  (cp_ops.push_next),
      .pop_i   (st_ops.pop_prev),
      .avail_o (c2s_avail),
      .room_o  (c2s_room)
  );
  loom_token_counter #(
      .Bits(TokenBits)
  ) tok_s2c (
      .clk_i   (clk),
      .rst_ni  (rst_n),
      .clear_i (start),
      .enable_i(running),
      .push_i  (st_ops.push_prev),
      .pop_i   (cp_ops.pop_next),
      .avail_o (s2c_avail),
      .room_o  (s2c_room)
  );
  // what each module sees of its neighbours (load has no previous one, store no next one)
  assign ld_tokens.prev_avail = 1'b0;
  assign ld_tokens.next_avail = c2l_avail;
  assign ld_tokens.prev_room = 1'b0;
  assign ld_tokens.next_room = l2c_room;
  assign cp_tokens.prev_avail = l2c_avail;
  assign cp_tokens.next_avail = s2c_avail;
  assign cp_tokens.prev_room = c2l_room;
  assign cp_tokens.next_room = c2s_room;
  assign st_tokens.prev_avail = c2s_avail;
  assign st_tokens.next_avail = 1'b0;
  assign st_tokens.prev_room = s2c_room;
  assign st_tokens.next_room = 1'b0;

  // ---- memory read port: fetch, inp, wgt, uop, acc (requester i, ARID i) ----
  localparam int NRd = 5;
  loom_accel_pkg::axi_rd_req_t fetch_rd_req, inp_rd_req, wgt_rd_req, uop_rd_req, acc_rd_req;
  loom_accel_pkg::axi_rd_rsp_t fetch_rd_rsp, inp_rd_rsp, wgt_rd_rsp, uop_rd_rsp, acc_rd_rsp;
  logic [NRd-1:0] arvalid, arready, rvalid, rready;
  logic [NRd*64-1:0] araddr;
  logic [NRd*8-1:0] arlen;
  assign arvalid = {acc_rd_req.ar_valid, uop_rd_req.ar_valid, wgt_rd_req.ar_valid, inp_rd_req.ar_valid, fetch_rd_req.ar_valid};
  assign araddr = {acc_rd_req.ar_addr, uop_rd_req.ar_addr, wgt_rd_req.ar_addr, inp_rd_req.ar_addr, fetch_rd_req.ar_addr};
  assign arlen = {acc_rd_req.ar_len, uop_rd_req.ar_len, wgt_rd_req.ar_len, inp_rd_req.ar_len, fetch_rd_req.ar_len};
  assign rready = {acc_rd_req.r_ready, uop_rd_req.r_ready, wgt_rd_req.r_ready, inp_rd_req.r_ready, fetch_rd_req.r_ready};
  // R data, response and last go to every requester; only the one RID names sees RVALID
  logic [BusW-1:0] rdata;
  logic [1:0] rresp;
  logic rlast;
  `define LOOM_RD_RSP(rsp, i) \
    assign rsp.ar_ready = arready[i]; \
    assign rsp.r_valid = rvalid[i]; \
    assign rsp.r_data = rdata; \
    assign rsp.r_resp = rresp; \
    assign rsp.r_last = rlast;
  `LOOM_RD_RSP(fetch_rd_rsp, 0)
  `LOOM_RD_RSP(inp_rd_rsp, 1)
  `LOOM_RD_RSP(wgt_rd_rsp, 2)
  `LOOM_RD_RSP(uop_rd_rsp, 3)
  `LOOM_RD_RSP(acc_rd_rsp, 4)
  `undef LOOM_RD_RSP
  loom_axi_rd_arbiter #(
      .N    (NRd),
      .DataW(BusW)
  ) rd_arbiter (
      .clk_i      (clk),
      .rst_ni     (rst_n),
      .s_arvalid_i(arvalid),
      .s_arready_o(arready),
      .s_araddr_i (araddr),
      .s_arlen_i  (arlen),
      .s_rvalid_o (rvalid),
      .s_rready_i (rready),
      .s_rdata_o  (rdata),
      .s_rresp_o  (rresp),
      .s_rlast_o  (rlast),
      .m_arvalid_o(m_axi_arvalid),
      .m_arready_i(m_axi_arready),
      .m_araddr_o (m_axi_araddr),
      .m_arlen_o  (m_axi_arlen),
      .m_arid_o   (m_axi_arid),
      .m_rvalid_i (m_axi_rvalid),
      .m_rready_o (m_axi_rready),
      .m_rid_i    (m_axi_rid),
      .m_rdata_i  (m_axi_rdata),
      .m_rresp_i  (m_axi_rresp),
      .m_rlast_i  (m_axi_rlast)
  );
  assign m_axi_arsize = 3'($clog2(BusW / 8));
  assign m_axi_arburst = 2'b01;  // INCR
  assign m_axi_awsize = 3'($clog2(BusW / 8));
  assign m_axi_awburst = 2'b01;
  assign m_axi_awid = '0;
  assign m_axi_wstrb = '1;

  // ---- memory write port: store ----
  loom_accel_pkg::axi_wr_req_t wr_req;
  loom_accel_pkg::axi_wr_rsp_t wr_rsp;
  assign m_axi_awvalid = wr_req.aw_valid;
  assign m_axi_awaddr = wr_req.aw_addr;
  assign m_axi_awlen = wr_req.aw_len;
  assign m_axi_wvalid = wr_req.w_valid;
  assign m_axi_wdata = wr_req.w_data;
  assign m_axi_wlast = wr_req.w_last;
  assign m_axi_bready = wr_req.b_ready;
  assign wr_rsp.aw_ready = m_axi_awready;
  assign wr_rsp.w_ready = m_axi_wready;
  assign wr_rsp.b_valid = m_axi_bvalid;
  assign wr_rsp.b_resp = m_axi_bresp;

  // ---- fetch ----
  loom_accel_pkg::queue_entry_t q_data;
  logic ld_push, cp_push, st_push, ld_full, cp_full, st_full;
  logic all_dispatched, finish_dispatched, fetch_fault, fetch_blocked;
  logic [7:0] fetch_code;
  logic [31:0] fetch_index;
  loom_fetch fetch (
      .clk_i              (clk),
      .rst_ni             (rst_n),
      .start_i            (start),
      .insn_addr_i        (insn_addr),
      .insn_count_i       (insn_count),
      .halt_i             (halt),
      .all_dispatched_o   (all_dispatched),
      .finish_dispatched_o(finish_dispatched),
      .fault_o            (fetch_fault),
      .fault_code_o       (fetch_code),
      .fault_index_o      (fetch_index),
      .blocked_o          (fetch_blocked),
      .axi_req_o          (fetch_rd_req),
      .axi_rsp_i          (fetch_rd_rsp),
      .q_data_o           (q_data),
      .load_push_o        (ld_push),
      .load_full_i        (ld_full),
      .compute_push_o     (cp_push),
      .compute_full_i     (cp_full),
      .store_push_o       (st_push),
      .store_full_i       (st_full)
  );

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
  loom_sram #(
      .Width(InpEW),
      .Depth(loom_accel_pkg::INP_DEPTH)
  ) inp_sram (
      .clk_i  (clk),
      .we_i   (inp_we),
      .waddr_i(inp_waddr),
      .wdata_i(inp_wdata),
      .raddr_i(inp_raddr),
      .rdata_o(inp_rdata)
  );
  loom_sram #(
      .Width(WgtEW),
      .Depth(loom_accel_pkg::WGT_DEPTH)
  ) wgt_sram (
      .clk_i  (clk),
      .we_i   (wgt_we),
      .waddr_i(wgt_waddr),
      .wdata_i(wgt_wdata),
      .raddr_i(wgt_raddr),
      .rdata_o(wgt_rdata)
  );
  loom_sram #(
      .Width(OutEW),
      .Depth(loom_accel_pkg::OUT_DEPTH)
  ) out_sram (
      .clk_i  (clk),
      .we_i   (out_we),
      .waddr_i(out_waddr),
      .wdata_i(out_wdata),
      .raddr_i(out_raddr),
      .rdata_o(out_rdata)
  );

  // ---- modules ----
  logic ld_busy /*verilator public_flat_rd*/;  // executing an instruction (timelines, as above)
  logic cp_busy /*verilator public_flat_rd*/;
  logic st_busy /*verilator public_flat_rd*/;
  logic ld_idle, cp_idle, st_idle;
  logic ld_fault, cp_fault, st_fault;
  logic [7:0] ld_code, cp_code, st_code;
  logic ld_insn, inp_entry, wgt_entry, uop_load, acc_load, gemm_insn, alu_insn, uop_entry, acc_entry, mac_step, alu_step;
  logic reset_step, alu_vec_step, acc_pad_entry;
  logic st_insn, out_entry, finish_done;
  loom_load #(
      .QueueDepth(QueueDepth)
  ) load (
      .clk_i         (clk),
      .rst_ni        (rst_n),
      .halt_i        (halt),
      .q_push_i      (ld_push),
      .q_data_i      (q_data),
      .q_full_o      (ld_full),
      .tokens_i      (ld_tokens),
      .token_ops_o   (ld_ops),
      .busy_o        (ld_busy),
      .stalled_o     (ld_stalled),
      .idle_o        (ld_idle),
      .wait_index_o  (ld_wait),
      .fault_o       (ld_fault),
      .fault_code_o  (ld_code),
      .insn_started_o(ld_insn),
      .inp_entry_o   (inp_entry),
      .wgt_entry_o   (wgt_entry),
      .inp_we_o      (inp_we),
      .inp_waddr_o   (inp_waddr),
      .inp_wdata_o   (inp_wdata),
      .wgt_we_o      (wgt_we),
      .wgt_waddr_o   (wgt_waddr),
      .wgt_wdata_o   (wgt_wdata),
      .axi_inp_req_o (inp_rd_req),
      .axi_inp_rsp_i (inp_rd_rsp),
      .axi_wgt_req_o (wgt_rd_req),
      .axi_wgt_rsp_i (wgt_rd_rsp)
  );
  loom_compute #(
      .QueueDepth(QueueDepth)
  ) compute (
      .clk_i             (clk),
      .rst_ni            (rst_n),
      .halt_i            (halt),
      .q_push_i          (cp_push),
      .q_data_i          (q_data),
      .q_full_o          (cp_full),
      .tokens_i          (cp_tokens),
      .token_ops_o       (cp_ops),
      .busy_o            (cp_busy),
      .stalled_o         (cp_stalled),
      .idle_o            (cp_idle),
      .wait_index_o      (cp_wait),
      .fault_o           (cp_fault),
      .fault_code_o      (cp_code),
      .finish_done_o     (finish_done),
      .uop_load_started_o(uop_load),
      .acc_load_started_o(acc_load),
      .gemm_started_o    (gemm_insn),
      .alu_started_o     (alu_insn),
      .uop_entry_o       (uop_entry),
      .acc_entry_o       (acc_entry),
      .mac_step_o        (mac_step),
      .alu_step_o        (alu_step),
      .reset_step_o      (reset_step),
      .alu_vec_step_o    (alu_vec_step),
      .acc_pad_entry_o   (acc_pad_entry),
      .inp_raddr_o       (inp_raddr),
      .inp_rdata_i       (inp_rdata),
      .wgt_raddr_o       (wgt_raddr),
      .wgt_rdata_i       (wgt_rdata),
      .out_we_o          (out_we),
      .out_waddr_o       (out_waddr),
      .out_wdata_o       (out_wdata),
      .axi_uop_req_o     (uop_rd_req),
      .axi_uop_rsp_i     (uop_rd_rsp),
      .axi_acc_req_o     (acc_rd_req),
      .axi_acc_rsp_i     (acc_rd_rsp)
  );
  loom_store #(
      .QueueDepth(QueueDepth)
  ) store (
      .clk_i         (clk),
      .rst_ni        (rst_n),
      .halt_i        (halt),
      .q_push_i      (st_push),
      .q_data_i      (q_data),
      .q_full_o      (st_full),
      .tokens_i      (st_tokens),
      .token_ops_o   (st_ops),
      .busy_o        (st_busy),
      .stalled_o     (st_stalled),
      .idle_o        (st_idle),
      .wait_index_o  (st_wait),
      .fault_o       (st_fault),
      .fault_code_o  (st_code),
      .insn_started_o(st_insn),
      .out_entry_o   (out_entry),
      .out_raddr_o   (out_raddr),
      .out_rdata_i   (out_rdata),
      .axi_req_o     (wr_req),
      .axi_rsp_i     (wr_rsp)
  );

  // ---- deadlock and completion, from the modules' state one register later (the run's end is
  // decided from registers: the longest path of the design ran through these muxes before) ----
  logic ld_stalled_q, cp_stalled_q, st_stalled_q, ld_idle_q, cp_idle_q, st_idle_q;
  logic all_dispatched_q, fetch_blocked_q, finish_dispatched_q;
  logic fetch_fault_q, ld_fault_q, cp_fault_q, st_fault_q;
  logic [7:0] fetch_code_q, ld_code_q, cp_code_q, st_code_q;
  logic [31:0] fetch_index_q, ld_wait_q, cp_wait_q, st_wait_q;
  always_ff @(posedge clk) begin
    {ld_stalled_q, cp_stalled_q, st_stalled_q} <= {ld_stalled, cp_stalled, st_stalled};
    {ld_idle_q, cp_idle_q, st_idle_q} <= {ld_idle, cp_idle, st_idle};
    // fetch's counts still hold the last run's in START's cycle
    {all_dispatched_q, fetch_blocked_q, finish_dispatched_q} <= start ? 3'b000 : {all_dispatched, fetch_blocked, finish_dispatched};
    {fetch_fault_q, ld_fault_q, cp_fault_q, st_fault_q} <= {fetch_fault, ld_fault, cp_fault, st_fault};
    {fetch_code_q, ld_code_q, cp_code_q, st_code_q} <= {fetch_code, ld_code, cp_code, st_code};
    {fetch_index_q, ld_wait_q, cp_wait_q, st_wait_q} <= {fetch_index, ld_wait, cp_wait, st_wait};
  end
  wire all_quiet = (ld_idle_q || ld_stalled_q) && (cp_idle_q || cp_stalled_q) && (st_idle_q || st_stalled_q);
  wire someone_waits = ld_stalled_q || cp_stalled_q || st_stalled_q;
  wire stuck = running && all_quiet && someone_waits && (all_dispatched_q || fetch_blocked_q);
  logic stuck_q, stuck_q2;  // stuck one and two cycles ago
  // The lowest index among the waiting modules (compares side by side, then one select).
  // (A deadlock is declared after three cycles of it, as long as the index takes to follow.)
  logic [31:0] deadlock_index_q, ld_w, cp_w, st_w;
  always_ff @(posedge clk) begin
    ld_w <= ld_stalled_q ? ld_wait_q : '1;
    cp_w <= cp_stalled_q ? cp_wait_q : '1;
    st_w <= st_stalled_q ? st_wait_q : '1;
  end
  wire ld_lt_cp = ld_w < cp_w, ld_lt_st = ld_w < st_w, cp_lt_st = cp_w < st_w;
  always_ff @(posedge clk) deadlock_index_q <= ld_lt_cp && ld_lt_st ? ld_w : !ld_lt_cp && cp_lt_st ? cp_w : st_w;
  wire drained = running && all_dispatched_q && ld_idle_q && cp_idle_q && st_idle_q;

  // ---- run state, faults, counters ----
  // This cycle's increment of counter k at [32k +: 32], added one cycle later.
  logic [NumCounters*32-1:0] inc, inc_q;
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
    inc[loom_accel_pkg::CNT_GEMM_RESET_STEPS*32+:32] = 32'(reset_step);
    inc[loom_accel_pkg::CNT_ALU_VECTOR_OPS*32+:32] = alu_vec_step ? 32'(loom_accel_pkg::BATCH * loom_accel_pkg::BLOCK_OUT) : 32'd0;
    // padding: an entry written without a DRAM beat
    inc[loom_accel_pkg::CNT_PAD_ENTRIES_INP*32+:32] = 32'(inp_we && !inp_entry);
    inc[loom_accel_pkg::CNT_PAD_ENTRIES_WGT*32+:32] = 32'(wgt_we && !wgt_entry);
    inc[loom_accel_pkg::CNT_PAD_ENTRIES_ACC*32+:32] = 32'(acc_pad_entry);
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
    if (fetch_fault_q) {raise_cause, raise_index} = {fetch_code_q, fetch_index_q};
    else if (ld_fault_q) {raise_cause, raise_index} = {ld_code_q, ld_wait_q};
    else if (cp_fault_q) {raise_cause, raise_index} = {cp_code_q, cp_wait_q};
    else if (st_fault_q) {raise_cause, raise_index} = {st_code_q, st_wait_q};
    else if (stuck && stuck_q && stuck_q2) {raise_cause, raise_index} = {loom_accel_pkg::FAULT_DEADLOCK, deadlock_index_q};
    else if (drained && !finish_dispatched_q) {raise_cause, raise_index} = {loom_accel_pkg::FAULT_NO_FINISH, insn_count};
    else raise = 1'b0;
  end
  // A module's fault halts the others at once, as before the registers above.
  assign halt = error_flag || !running || fetch_fault_q || ld_fault_q || cp_fault_q || st_fault_q;

  always_ff @(posedge clk) begin
    inc_q <= running && !start ? inc : '0;
    if (!rst_n) begin
      running <= 1'b0;
      done_flag <= 1'b0;
      error_flag <= 1'b0;
      fault_cause <= '0;
      error_index <= '0;
      cycles <= '0;
      stuck_q <= 1'b0;
      stuck_q2 <= 1'b0;
      counters_flat <= '0;
    end else if (start) begin
      running <= 1'b1;
      done_flag <= 1'b0;
      error_flag <= 1'b0;
      fault_cause <= '0;
      error_index <= '0;
      cycles <= '0;
      stuck_q <= 1'b0;
      stuck_q2 <= 1'b0;
      counters_flat <= '0;
    end else begin
      // the last cycle's events still count after the run ends
      for (int k = 0; k < NumCounters; k++) counters_flat[k*64+:64] <= counters_flat[k*64+:64] + 64'(inc_q[k*32+:32]);
      if (running) begin
        cycles <= cycles + 64'd1;
        stuck_q <= stuck;
        stuck_q2 <= stuck_q;
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
  end
  wire unused_ok = &{1'b0, s_axil_wstrb, m_axi_bid, finish_done, ld_wait[31], cp_wait[31], st_wait[31],
                     ld_ops.pop_prev, ld_ops.push_prev, st_ops.pop_next, st_ops.push_next};

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

  // ---- functional coverage (Verilator --coverage-user): back-pressure on each AXI4 channel that
  // has it (BREADY is tied high), read requesters contending, the instruction queues full ----
  c_ar_backpressure: cover property (@(posedge clk) disable iff (!rst_n) m_axi_arvalid && !m_axi_arready);
  c_r_backpressure: cover property (@(posedge clk) disable iff (!rst_n) m_axi_rvalid && !m_axi_rready);
  c_aw_backpressure: cover property (@(posedge clk) disable iff (!rst_n) m_axi_awvalid && !m_axi_awready);
  c_w_backpressure: cover property (@(posedge clk) disable iff (!rst_n) m_axi_wvalid && !m_axi_wready);
  c_rd_contention: cover property (@(posedge clk) disable iff (!rst_n) $countones(arvalid) > 1);
  c_load_queue_full: cover property (@(posedge clk) disable iff (!rst_n) ld_full);
  c_compute_queue_full: cover property (@(posedge clk) disable iff (!rst_n) cp_full);
  c_store_queue_full: cover property (@(posedge clk) disable iff (!rst_n) st_full);
`endif
endmodule
