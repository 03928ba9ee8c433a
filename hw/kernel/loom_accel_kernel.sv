// The accelerator as a Vitis RTL kernel: loom_accel with the port names Vitis expects (ap_clk,
// ap_rst_n, s_axi_control, m_axi_gmem, interrupt). Packaged by the script `loom hw-kernel`
// writes (docs/fpga.md); the control registers follow ap_ctrl_hs up to the arguments.
module loom_accel_kernel #(
    localparam int BusW = loom_accel_pkg::BUS_BYTES * 8
) (
    input  logic ap_clk,
    input  logic ap_rst_n,
    /* verilator lint_off SYMRSVDWORD */  // Vitis names the interrupt port so
    output logic interrupt,
    /* verilator lint_on SYMRSVDWORD */
    // s_axi_control (AXI4-Lite)
    input  logic        s_axi_control_awvalid,
    output logic        s_axi_control_awready,
    input  logic [11:0] s_axi_control_awaddr,
    input  logic        s_axi_control_wvalid,
    output logic        s_axi_control_wready,
    input  logic [31:0] s_axi_control_wdata,
    input  logic [3:0]  s_axi_control_wstrb,
    output logic        s_axi_control_bvalid,
    input  logic        s_axi_control_bready,
    output logic [1:0]  s_axi_control_bresp,
    input  logic        s_axi_control_arvalid,
    output logic        s_axi_control_arready,
    input  logic [11:0] s_axi_control_araddr,
    output logic        s_axi_control_rvalid,
    input  logic        s_axi_control_rready,
    output logic [31:0] s_axi_control_rdata,
    output logic [1:0]  s_axi_control_rresp,
    // m_axi_gmem (AXI4)
    output logic              m_axi_gmem_arvalid,
    input  logic              m_axi_gmem_arready,
    output logic [63:0]       m_axi_gmem_araddr,
    output logic [7:0]        m_axi_gmem_arlen,
    output logic [2:0]        m_axi_gmem_arsize,
    output logic [1:0]        m_axi_gmem_arburst,
    output logic [2:0]        m_axi_gmem_arid,
    input  logic              m_axi_gmem_rvalid,
    output logic              m_axi_gmem_rready,
    input  logic [BusW-1:0]   m_axi_gmem_rdata,
    input  logic [1:0]        m_axi_gmem_rresp,
    input  logic              m_axi_gmem_rlast,
    input  logic [2:0]        m_axi_gmem_rid,
    output logic              m_axi_gmem_awvalid,
    input  logic              m_axi_gmem_awready,
    output logic [63:0]       m_axi_gmem_awaddr,
    output logic [7:0]        m_axi_gmem_awlen,
    output logic [2:0]        m_axi_gmem_awsize,
    output logic [1:0]        m_axi_gmem_awburst,
    output logic [2:0]        m_axi_gmem_awid,
    output logic              m_axi_gmem_wvalid,
    input  logic              m_axi_gmem_wready,
    output logic [BusW-1:0]   m_axi_gmem_wdata,
    output logic [BusW/8-1:0] m_axi_gmem_wstrb,
    output logic              m_axi_gmem_wlast,
    input  logic              m_axi_gmem_bvalid,
    output logic              m_axi_gmem_bready,
    input  logic [1:0]        m_axi_gmem_bresp,
    input  logic [2:0]        m_axi_gmem_bid
);
  /* verilator lint_off UNUSEDSIGNAL */
  logic run_ended;  // the simulation's completion signal; the kernel reports through interrupt
  /* verilator lint_on UNUSEDSIGNAL */
  loom_accel accel (
      .clk(ap_clk), .rst_n(ap_rst_n), .irq(run_ended), .ap_interrupt(interrupt),
      .s_axil_awvalid(s_axi_control_awvalid), .s_axil_awready(s_axi_control_awready),
      .s_axil_awaddr(s_axi_control_awaddr), .s_axil_wvalid(s_axi_control_wvalid),
      .s_axil_wready(s_axi_control_wready), .s_axil_wdata(s_axi_control_wdata),
      .s_axil_wstrb(s_axi_control_wstrb), .s_axil_bvalid(s_axi_control_bvalid),
      .s_axil_bready(s_axi_control_bready), .s_axil_bresp(s_axi_control_bresp),
      .s_axil_arvalid(s_axi_control_arvalid), .s_axil_arready(s_axi_control_arready),
      .s_axil_araddr(s_axi_control_araddr), .s_axil_rvalid(s_axi_control_rvalid),
      .s_axil_rready(s_axi_control_rready), .s_axil_rdata(s_axi_control_rdata),
      .s_axil_rresp(s_axi_control_rresp),
      .m_axi_arvalid(m_axi_gmem_arvalid), .m_axi_arready(m_axi_gmem_arready), .m_axi_araddr(m_axi_gmem_araddr),
      .m_axi_arlen(m_axi_gmem_arlen), .m_axi_arsize(m_axi_gmem_arsize), .m_axi_arburst(m_axi_gmem_arburst),
      .m_axi_arid(m_axi_gmem_arid), .m_axi_rvalid(m_axi_gmem_rvalid), .m_axi_rready(m_axi_gmem_rready),
      .m_axi_rdata(m_axi_gmem_rdata), .m_axi_rresp(m_axi_gmem_rresp), .m_axi_rlast(m_axi_gmem_rlast),
      .m_axi_rid(m_axi_gmem_rid), .m_axi_awvalid(m_axi_gmem_awvalid), .m_axi_awready(m_axi_gmem_awready),
      .m_axi_awaddr(m_axi_gmem_awaddr), .m_axi_awlen(m_axi_gmem_awlen), .m_axi_awsize(m_axi_gmem_awsize),
      .m_axi_awburst(m_axi_gmem_awburst), .m_axi_awid(m_axi_gmem_awid), .m_axi_wvalid(m_axi_gmem_wvalid),
      .m_axi_wready(m_axi_gmem_wready), .m_axi_wdata(m_axi_gmem_wdata), .m_axi_wstrb(m_axi_gmem_wstrb),
      .m_axi_wlast(m_axi_gmem_wlast), .m_axi_bvalid(m_axi_gmem_bvalid), .m_axi_bready(m_axi_gmem_bready),
      .m_axi_bresp(m_axi_gmem_bresp), .m_axi_bid(m_axi_gmem_bid));
endmodule
