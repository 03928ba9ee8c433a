// Shares the AXI4 read channels among N requesters: round-robin on AR (a granted request stays
// selected until accepted, as AXI requires), the requester's index as ARID, and R beats routed
// back by RID (data, response and last are broadcast by the parent). Each requester may have
// several bursts outstanding; beats of one ID arrive in order. Every requester's AR passes a
// spill register first, so its request logic, the arbitration and the memory's ARREADY are not
// one combinational path (the longest of the design before, docs/fpga_fit.md).
module loom_axi_rd_arbiter #(
    parameter int N = 2,
    localparam int IdW = $clog2(N)
) (
    input  logic clk,
    input  logic rst_n,
    // requesters (packed side by side)
    input  logic [N-1:0]      s_arvalid,
    output logic [N-1:0]      s_arready,
    input  logic [N*64-1:0]   s_araddr,
    input  logic [N*8-1:0]    s_arlen,
    output logic [N-1:0]      s_rvalid,
    input  logic [N-1:0]      s_rready,
    // memory
    output logic              m_arvalid,
    input  logic              m_arready,
    output logic [63:0]       m_araddr,
    output logic [7:0]        m_arlen,
    output logic [IdW-1:0]    m_arid,
    input  logic              m_rvalid,
    output logic              m_rready,
    input  logic [IdW-1:0]    m_rid
);
  logic [N-1:0]    ar_valid, ar_ready;
  logic [N*64-1:0] ar_addr;
  logic [N*8-1:0]  ar_len;
  for (genvar i = 0; i < N; i++) begin : g_slice
    loom_spill_reg #(
        .Width(72)
    ) ar_slice (
        .clk_i  (clk),
        .rst_ni (rst_n),
        .valid_i(s_arvalid[i]),
        .ready_o(s_arready[i]),
        .data_i ({s_arlen[i*8+:8], s_araddr[i*64+:64]}),
        .valid_o(ar_valid[i]),
        .ready_i(ar_ready[i]),
        .data_o ({ar_len[i*8+:8], ar_addr[i*64+:64]})
    );
  end

  logic [IdW-1:0] last, pick, held_id;
  logic held;  // an AR is shown to memory and not yet accepted: keep it stable

  // The first valid requester after `last`, cyclically. last + k < 2N, so one conditional
  // subtraction wraps it (a `%` by a constant that is not a power of two would be a divider).
  always_comb begin
    pick = last;
    for (int k = N; k >= 1; k--) begin
      logic [IdW:0] idx;
      idx = (IdW + 1)'(last) + (IdW + 1)'(k);
      if (idx >= (IdW + 1)'(N)) idx = idx - (IdW + 1)'(N);
      if (ar_valid[idx[IdW-1:0]]) pick = idx[IdW-1:0];
    end
  end

  wire [IdW-1:0] sel = held ? held_id : pick;
  assign m_arvalid = ar_valid[sel];
  assign m_araddr = ar_addr[32'(sel)*64+:64];
  assign m_arlen = ar_len[32'(sel)*8+:8];
  assign m_arid = sel;
  always_comb begin
    ar_ready = '0;
    ar_ready[sel] = m_arready;
    s_rvalid = '0;
    s_rvalid[m_rid] = m_rvalid;
  end
  assign m_rready = s_rready[m_rid];

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      last <= '0;
      held <= 1'b0;
      held_id <= '0;
    end else begin
      held <= m_arvalid && !m_arready;
      held_id <= sel;
      if (m_arvalid && m_arready) last <= sel;
    end
  end
endmodule
