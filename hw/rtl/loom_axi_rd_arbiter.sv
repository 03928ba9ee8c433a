// Shares the AXI4 read channels among N requesters: round-robin on AR, the requester's index as
// ARID, and R beats routed back by RID (RVALID to the requester it names; data, response and
// last go to all). Each requester may have several bursts outstanding; beats of one ID arrive in
// order. Spill registers on every requester's AR, on the memory's AR and on the memory's R cut
// the request logic, the arbitration, ARREADY, RVALID and RREADY into separate
// register-to-register paths (the longest paths of the whole design before; docs/fpga_fit.md).
// Ports are per field, requester i at [i*W +: W].
module loom_axi_rd_arbiter #(
    parameter int N = 2,
    parameter int DataW = 128,
    localparam int IdW = $clog2(N)
) (
    input  logic clk_i,
    input  logic rst_ni,
    // requesters
    input  logic [N-1:0]    s_arvalid_i,
    output logic [N-1:0]    s_arready_o,
    input  logic [N*64-1:0] s_araddr_i,
    input  logic [N*8-1:0]  s_arlen_i,
    output logic [N-1:0]     s_rvalid_o,
    input  logic [N-1:0]     s_rready_i,
    output logic [DataW-1:0] s_rdata_o,  // to every requester
    output logic [1:0]       s_rresp_o,
    output logic             s_rlast_o,
    // memory
    output logic           m_arvalid_o,
    input  logic           m_arready_i,
    output logic [63:0]    m_araddr_o,
    output logic [7:0]     m_arlen_o,
    output logic [IdW-1:0] m_arid_o,
    input  logic             m_rvalid_i,
    output logic             m_rready_o,
    input  logic [IdW-1:0]   m_rid_i,
    input  logic [DataW-1:0] m_rdata_i,
    input  logic [1:0]       m_rresp_i,
    input  logic             m_rlast_i
);
  localparam int ReqW = 64 + 8;
  logic [N-1:0]      ar_valid, ar_ready;
  logic [N*ReqW-1:0] ar_req;  // {len, addr} per requester
  for (genvar i = 0; i < N; i++) begin : g_slice
    loom_spill_reg #(
        .Width(ReqW)
    ) ar_slice (
        .clk_i,
        .rst_ni,
        .valid_i(s_arvalid_i[i]),
        .ready_o(s_arready_o[i]),
        .data_i ({s_arlen_i[i*8+:8], s_araddr_i[i*64+:64]}),
        .valid_o(ar_valid[i]),
        .ready_i(ar_ready[i]),
        .data_o (ar_req[i*ReqW+:ReqW])
    );
  end

  // Round robin: the lowest requesting index above the last grant, else the lowest overall
  // (priority written out bit by bit: a subtraction would put carry chains in this path).
  logic [N-1:0] above_q;  // indices above the last grant
  wire [N-1:0] preferred = ar_valid & above_q;
  wire [N-1:0] pool = preferred != '0 ? preferred : ar_valid;
  logic [N-1:0] grant, above_grant;
  always_comb begin
    for (int i = 0; i < N; i++) begin
      grant[i] = pool[i];
      above_grant[i] = 1'b0;
      for (int j = 0; j < i; j++) begin
        grant[i] = grant[i] && !pool[j];
        above_grant[i] = above_grant[i] || grant[j];
      end
    end
  end
  logic m_ready;
  wire fire = ar_valid != '0 && m_ready;
  assign ar_ready = fire ? grant : '0;

  logic [ReqW-1:0] granted;
  logic [IdW-1:0]  granted_id;
  always_comb begin
    granted = '0;
    granted_id = '0;
    for (int i = 0; i < N; i++) begin
      if (grant[i]) begin
        granted = granted | ar_req[i*ReqW+:ReqW];
        granted_id = granted_id | IdW'(i);
      end
    end
  end
  loom_spill_reg #(
      .Width(IdW + ReqW)
  ) m_slice (
      .clk_i,
      .rst_ni,
      .valid_i(ar_valid != '0),
      .ready_o(m_ready),
      .data_i ({granted_id, granted}),
      .valid_o(m_arvalid_o),
      .ready_i(m_arready_i),
      .data_o ({m_arid_o, m_arlen_o, m_araddr_o})
  );

  always_ff @(posedge clk_i) begin
    if (!rst_ni) above_q <= '0;
    else if (fire) above_q <= above_grant;
  end

  // R: the beat waits in a spill register, then goes to the requester its RID names.
  logic           r_valid, r_ready;
  logic [IdW-1:0] r_id;
  loom_spill_reg #(
      .Width(IdW + DataW + 3)
  ) r_slice (
      .clk_i,
      .rst_ni,
      .valid_i(m_rvalid_i),
      .ready_o(m_rready_o),
      .data_i ({m_rid_i, m_rdata_i, m_rresp_i, m_rlast_i}),
      .valid_o(r_valid),
      .ready_i(r_ready),
      .data_o ({r_id, s_rdata_o, s_rresp_o, s_rlast_o})
  );
  // decoded bit by bit: an index into the vector would check its range with a 32-bit compare
  always_comb begin
    r_ready = 1'b0;
    for (int i = 0; i < N; i++) begin
      s_rvalid_o[i] = r_valid && r_id == IdW'(i);
      r_ready = r_ready || (s_rready_i[i] && r_id == IdW'(i));
    end
  end

`ifndef SYNTHESIS
  // One grant at a time, only to a requester that asks.
  always_ff @(posedge clk_i) begin
    if (rst_ni && fire) assert ((grant & ~ar_valid) == '0 && $onehot(grant)) else $error("loom_axi_rd_arbiter: bad grant %b", grant);
  end
`endif
endmodule
