// Formal harness of loom_ctrl, the AXI4-Lite slave: a master that keeps the protocol (VALID held
// with its payload until READY) and otherwise does anything. Checks the slave's side: RVALID and
// BVALID stay up, with their data and response, until taken; one response per request and none
// without one; a read of an offset that is no register answers SLVERR; START only from a write
// of 1 to CONTROL while idle.
module loom_ctrl_formal (
    input logic        clk,
    input logic        rst_n,
    input logic        awvalid,
    input logic [11:0] awaddr,
    input logic        wvalid,
    input logic [31:0] wdata,
    input logic        bready,
    input logic        arvalid,
    input logic [11:0] araddr,
    input logic        rready,
    input logic        running,
    input logic [7:0]  fault_cause,
    input logic        error,
    input logic        done,
    input logic [31:0] error_index
);
  localparam int NumCounters = loom_accel_pkg::NUM_COUNTERS;
  logic awready, wready, bvalid, arready, rvalid, start, interrupt;
  logic [1:0] bresp, rresp;
  logic [31:0] rdata, insn_count;
  logic [63:0] insn_addr;
  loom_ctrl dut (
      .clk_i        (clk),
      .rst_ni       (rst_n),
      .awvalid_i    (awvalid),
      .awready_o    (awready),
      .awaddr_i     (awaddr),
      .wvalid_i     (wvalid),
      .wready_o     (wready),
      .wdata_i      (wdata),
      .bvalid_o     (bvalid),
      .bready_i     (bready),
      .bresp_o      (bresp),
      .arvalid_i    (arvalid),
      .arready_o    (arready),
      .araddr_i     (araddr),
      .rvalid_o     (rvalid),
      .rready_i     (rready),
      .rdata_o      (rdata),
      .rresp_o      (rresp),
      .start_o      (start),
      .insn_addr_o  (insn_addr),
      .insn_count_o (insn_count),
      .running_i    (running),
      .fault_cause_i(fault_cause),
      .error_i      (error),
      .done_i       (done),
      .cycles_i     (64'd0),
      .error_index_i(error_index),
      .counters_i   ('0),
      .wait_state_i ('0),
      .interrupt_o  (interrupt)
  );

  logic checking = 1'b0, past_aw, past_w, past_ar, past_r_wait, past_b_wait, past_bad_read, past_start_write;
  logic past_read, past2_read, past2_bad_read;  // reads are answered two cycles after ARREADY
  logic [11:0] past_awaddr, past_araddr;
  logic [31:0] past_wdata, past_rdata;
  logic [1:0] past_rresp, past_bresp;
  logic [1:0] reads, writes;  // requests taken minus responses taken
  initial assume (!rst_n);
  // what the last cycle showed (nothing during reset, which the slave ignores)
  always_ff @(posedge clk) begin
    if (!rst_n) checking <= 1'b1;
    past_aw <= rst_n && awvalid && !awready;
    past_w <= rst_n && wvalid && !wready;
    past_ar <= rst_n && arvalid && !arready;
    past_awaddr <= awaddr;
    past_wdata <= wdata;
    past_araddr <= araddr;
    past_r_wait <= rst_n && rvalid && !rready;
    past_b_wait <= rst_n && bvalid && !bready;
    past_rdata <= rdata;
    past_rresp <= rresp;
    past_bresp <= bresp;
    past_bad_read <= rst_n && arvalid && arready && araddr == 12'hffc;  // above every register
    past2_bad_read <= rst_n && past_bad_read;
    past_read <= rst_n && arvalid && arready;
    past2_read <= rst_n && past_read;
    past_start_write <= rst_n && awvalid && awready && wvalid && 32'(awaddr) == loom_accel_pkg::REG_CONTROL && wdata[0] &&
                        !running;
    if (!rst_n) begin
      reads <= '0;
      writes <= '0;
    end else begin
      reads <= reads + 2'(arvalid && arready) - 2'(rvalid && rready);
      writes <= writes + 2'(awvalid && awready) - 2'(bvalid && bready);
    end
  end

  always_comb begin
    if (checking && rst_n) begin
      // the master keeps the protocol
      if (past_aw) assume (awvalid && awaddr == past_awaddr);
      if (past_w) assume (wvalid && wdata == past_wdata);
      if (past_ar) assume (arvalid && araddr == past_araddr);
      // the slave's side
      if (past_r_wait) assert (rvalid && rdata == past_rdata && rresp == past_rresp);
      if (past_b_wait) assert (bvalid && bresp == past_bresp);
      assert (awready == wready);  // address and data are taken together
      assert (reads <= 2'd1 && (!rvalid || reads == 2'd1));
      if (past2_read) assert (rvalid);
      assert (writes <= 2'd1 && bvalid == (writes == 2'd1));
      if (past2_bad_read) assert (rvalid && rresp == 2'b10);
      assert (start == past_start_write);
    end
  end
  wire unused = &{1'b0, insn_addr, insn_count, interrupt};
endmodule
