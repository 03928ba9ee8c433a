// AXI4-Lite control registers (offsets from the generated package; the map is documented in
// docs/accel.md), Vitis' ap_ctrl_hs convention up to the arguments: CONTROL (START; DONE and READY
// cleared when read; IDLE), GIE, IER, ISR (toggle on write), the arguments INSN_ADDR and
// INSN_COUNT, then Loom's STATUS, CYCLES, ERROR_INDEX, the 64-bit performance counters and the
// per-module wait registers. Writes to read-only or unknown offsets answer SLVERR, as does START
// while a run is in progress. `interrupt` is GIE && (IER & ISR) != 0.
module loom_ctrl #(
    localparam int NumCounters = loom_accel_pkg::NUM_COUNTERS
) (
    input  logic clk,
    input  logic rst_n,
    // AXI4-Lite slave
    input  logic        awvalid,
    output logic        awready,
    input  logic [11:0] awaddr,
    input  logic        wvalid,
    output logic        wready,
    input  logic [31:0] wdata,
    output logic        bvalid,
    input  logic        bready,
    output logic [1:0]  bresp,
    input  logic        arvalid,
    output logic        arready,
    input  logic [11:0] araddr,
    output logic        rvalid,
    input  logic        rready,
    output logic [31:0] rdata,
    output logic [1:0]  rresp,
    // to/from the accelerator
    output logic        start,
    output logic [63:0] insn_addr,
    output logic [31:0] insn_count,
    input  logic        running,
    input  logic [31:0] status,
    input  logic [63:0] cycles,
    input  logic [31:0] error_index,
    input  logic [NumCounters*64-1:0] counters,
    input  logic [3*32-1:0] wait_state,  // load, compute, store: {waiting, index[30:0]}
    output logic interrupt
);
  localparam int CounterEnd = loom_accel_pkg::REG_COUNTER_BASE + 8 * NumCounters;

  // ---- ap_ctrl_hs state: a run's end sets DONE and READY (until CONTROL is read) and their ISR bits ----
  logic running_q, ap_done, ap_ready, gie;
  logic [1:0] ier, isr;
  wire finished = running_q && !running;
  wire control_read = arvalid && arready && 32'(araddr) == loom_accel_pkg::REG_CONTROL;
  assign interrupt = gie && |(ier & isr);

  // ---- writes ----
  wire w_fire = awvalid && wvalid && !bvalid;
  assign awready = w_fire;
  assign wready = w_fire;
  always_ff @(posedge clk) begin
    start <= 1'b0;
    if (!rst_n) begin
      bvalid <= 1'b0;
      bresp <= 2'b00;
      insn_addr <= '0;
      insn_count <= '0;
      running_q <= 1'b0;
      ap_done <= 1'b0;
      ap_ready <= 1'b0;
      gie <= 1'b0;
      ier <= '0;
      isr <= '0;
    end else begin
      running_q <= running;
      if (control_read) begin
        ap_done <= 1'b0;
        ap_ready <= 1'b0;
      end
      if (finished) begin
        ap_done <= 1'b1;
        ap_ready <= 1'b1;
      end
      if (bvalid && bready) bvalid <= 1'b0;
      if (w_fire) begin
        bvalid <= 1'b1;
        bresp <= 2'b00;
        case (32'(awaddr))
          loom_accel_pkg::REG_CONTROL:
          if (wdata[0]) begin
            if (running) bresp <= 2'b10;
            else start <= 1'b1;
          end
          loom_accel_pkg::REG_GIE: gie <= wdata[0];
          loom_accel_pkg::REG_IER: ier <= wdata[1:0];
          loom_accel_pkg::REG_ISR: isr <= isr ^ wdata[1:0];
          loom_accel_pkg::REG_INSN_ADDR_LO: insn_addr[31:0] <= wdata;
          loom_accel_pkg::REG_INSN_ADDR_HI: insn_addr[63:32] <= wdata;
          loom_accel_pkg::REG_INSN_COUNT: insn_count <= wdata;
          default: bresp <= 2'b10;  // read-only or no such register
        endcase
      end
      if (finished) isr <= (w_fire && 32'(awaddr) == loom_accel_pkg::REG_ISR ? isr ^ wdata[1:0] : isr) | 2'b11;
    end
  end

  // ---- reads ----
  logic [31:0] value;
  logic known;
  always_comb begin
    known = 1'b1;
    value = '0;
    case (32'(araddr))
      loom_accel_pkg::REG_CONTROL: value = {28'd0, ap_ready, !running, ap_done, running};
      loom_accel_pkg::REG_GIE: value = 32'(gie);
      loom_accel_pkg::REG_IER: value = 32'(ier);
      loom_accel_pkg::REG_ISR: value = 32'(isr);
      loom_accel_pkg::REG_STATUS: value = status;
      loom_accel_pkg::REG_INSN_ADDR_LO: value = insn_addr[31:0];
      loom_accel_pkg::REG_INSN_ADDR_HI: value = insn_addr[63:32];
      loom_accel_pkg::REG_INSN_COUNT: value = insn_count;
      loom_accel_pkg::REG_CYCLES_LO: value = cycles[31:0];
      loom_accel_pkg::REG_CYCLES_HI: value = cycles[63:32];
      loom_accel_pkg::REG_ERROR_INDEX: value = error_index;
      loom_accel_pkg::REG_ERROR_INDEX + 4: value = '0;  // reserved (the counters start 8-aligned)
      default:
      if (32'(araddr) >= loom_accel_pkg::REG_COUNTER_BASE && 32'(araddr) < CounterEnd && araddr[1:0] == 2'b00)
        value = counters[(32'(araddr) - loom_accel_pkg::REG_COUNTER_BASE) * 8+:32];
      else if (32'(araddr) >= loom_accel_pkg::REG_WAIT_BASE && 32'(araddr) < loom_accel_pkg::REG_WAIT_BASE + 12 && araddr[1:0] == 2'b00)
        value = wait_state[(32'(araddr) - loom_accel_pkg::REG_WAIT_BASE) * 8+:32];
      else known = 1'b0;
    endcase
  end
  assign arready = !rvalid;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      rvalid <= 1'b0;
      rdata <= '0;
      rresp <= 2'b00;
    end else begin
      if (rvalid && rready) rvalid <= 1'b0;
      if (arvalid && arready) begin
        rvalid <= 1'b1;
        rdata <= value;
        rresp <= known ? 2'b00 : 2'b10;
      end
    end
  end
endmodule
