// AXI4-Lite control registers (offsets from the generated package; the map is documented in
// docs/accel.md), Vitis' ap_ctrl_hs convention up to the arguments: CONTROL (START; DONE and READY
// cleared when read; IDLE), GIE, IER, ISR (toggle on write), the arguments INSN_ADDR and
// INSN_COUNT, then Loom's STATUS, CYCLES, ERROR_INDEX, the 64-bit performance counters and the
// per-module wait registers. Writes to read-only or unknown offsets answer SLVERR, as does START
// while a run is in progress. `interrupt` is GIE && (IER & ISR) != 0.
module loom_ctrl #(
    localparam int NumCounters = loom_accel_pkg::NUM_COUNTERS
) (
    input  logic clk_i,
    input  logic rst_ni,
    // AXI4-Lite slave
    input  logic        awvalid_i,
    output logic        awready_o,
    input  logic [11:0] awaddr_i,
    input  logic        wvalid_i,
    output logic        wready_o,
    input  logic [31:0] wdata_i,
    output logic        bvalid_o,
    input  logic        bready_i,
    output logic [1:0]  bresp_o,
    input  logic        arvalid_i,
    output logic        arready_o,
    input  logic [11:0] araddr_i,
    output logic        rvalid_o,
    input  logic        rready_i,
    output logic [31:0] rdata_o,
    output logic [1:0]  rresp_o,
    // to/from the accelerator
    output logic        start_o,
    output logic [63:0] insn_addr_o,
    output logic [31:0] insn_count_o,
    input  logic        running_i,
    input  logic [7:0]  fault_cause_i,  // STATUS: {16'b0, fault cause, 6'b0, error, done}
    input  logic        error_i,
    input  logic        done_i,
    input  logic [63:0] cycles_i,
    input  logic [31:0] error_index_i,
    input  logic [NumCounters*64-1:0] counters_i,
    input  logic [3*32-1:0] wait_state_i,  // load, compute, store: {waiting, index[30:0]}
    output logic interrupt_o
);
  localparam int CounterEnd = loom_accel_pkg::REG_COUNTER_BASE + 8 * NumCounters;

  // ---- ap_ctrl_hs state: a run's end sets DONE and READY (until CONTROL is read) and their ISR bits ----
  logic running_q, ap_done_q, ap_ready_q, gie_q;
  logic [1:0] ier_q, isr_q;
  wire finished = running_q && !running_i;
  logic rd_pending_q;
  logic [11:0] rd_addr_q;
  wire control_read = rd_pending_q && 32'(rd_addr_q) == loom_accel_pkg::REG_CONTROL;  // the cycle its value is taken
  assign interrupt_o = gie_q && |(ier_q & isr_q);

  // ---- writes ----
  wire w_fire = awvalid_i && wvalid_i && !bvalid_o;
  assign awready_o = w_fire;
  assign wready_o = w_fire;
  always_ff @(posedge clk_i) begin
    start_o <= 1'b0;
    if (!rst_ni) begin
      bvalid_o <= 1'b0;
      bresp_o <= 2'b00;
      insn_addr_o <= '0;
      insn_count_o <= '0;
      running_q <= 1'b0;
      ap_done_q <= 1'b0;
      ap_ready_q <= 1'b0;
      gie_q <= 1'b0;
      ier_q <= '0;
      isr_q <= '0;
    end else begin
      running_q <= running_i;
      if (control_read) begin
        ap_done_q <= 1'b0;
        ap_ready_q <= 1'b0;
      end
      if (finished) begin
        ap_done_q <= 1'b1;
        ap_ready_q <= 1'b1;
      end
      if (bvalid_o && bready_i) bvalid_o <= 1'b0;
      if (w_fire) begin
        bvalid_o <= 1'b1;
        bresp_o <= 2'b00;
        case (32'(awaddr_i))
          loom_accel_pkg::REG_CONTROL:
          if (wdata_i[0]) begin
            if (running_i) bresp_o <= 2'b10;
            else start_o <= 1'b1;
          end
          loom_accel_pkg::REG_GIE: gie_q <= wdata_i[0];
          loom_accel_pkg::REG_IER: ier_q <= wdata_i[1:0];
          loom_accel_pkg::REG_ISR: isr_q <= isr_q ^ wdata_i[1:0];
          loom_accel_pkg::REG_INSN_ADDR_LO: insn_addr_o[31:0] <= wdata_i;
          loom_accel_pkg::REG_INSN_ADDR_HI: insn_addr_o[63:32] <= wdata_i;
          loom_accel_pkg::REG_INSN_COUNT: insn_count_o <= wdata_i;
          default: bresp_o <= 2'b10;  // read-only or no such register
        endcase
      end
      if (finished) isr_q <= (w_fire && 32'(awaddr_i) == loom_accel_pkg::REG_ISR ? isr_q ^ wdata_i[1:0] : isr_q) | 2'b11;
    end
  end

  // ---- reads: the address is taken into a register (with the counter and wait-register word
  // it selects), the data follows a cycle later: the read mux is a stage of its own ----
  logic        rd_counter_q, rd_wait_q;  // the address is a counter word, a wait register
  logic [$clog2(NumCounters*2+1)-1:0] rd_word_q;  // which 32-bit word of the counters or wait registers
  logic [31:0] value;
  logic known;
  always_comb begin
    known = 1'b1;
    value = '0;
    if (rd_counter_q) value = counters_i[32'(rd_word_q)*32+:32];
    else if (rd_wait_q) value = wait_state_i[32'(rd_word_q)*32+:32];
    else begin
      case (32'(rd_addr_q))
        loom_accel_pkg::REG_CONTROL: value = {28'd0, ap_ready_q, !running_i, ap_done_q, running_i};
        loom_accel_pkg::REG_GIE: value = 32'(gie_q);
        loom_accel_pkg::REG_IER: value = 32'(ier_q);
        loom_accel_pkg::REG_ISR: value = 32'(isr_q);
        loom_accel_pkg::REG_STATUS: value = {16'd0, fault_cause_i, 6'd0, error_i, done_i};
        loom_accel_pkg::REG_INSN_ADDR_LO: value = insn_addr_o[31:0];
        loom_accel_pkg::REG_INSN_ADDR_HI: value = insn_addr_o[63:32];
        loom_accel_pkg::REG_INSN_COUNT: value = insn_count_o;
        loom_accel_pkg::REG_CYCLES_LO: value = cycles_i[31:0];
        loom_accel_pkg::REG_CYCLES_HI: value = cycles_i[63:32];
        loom_accel_pkg::REG_ERROR_INDEX: value = error_index_i;
        loom_accel_pkg::REG_ERROR_INDEX + 4: value = '0;  // reserved (the counters start 8-aligned)
        default: known = 1'b0;
      endcase
    end
  end
  wire in_counters = 32'(araddr_i) >= loom_accel_pkg::REG_COUNTER_BASE && 32'(araddr_i) < CounterEnd && araddr_i[1:0] == 2'b00;
  wire in_wait = 32'(araddr_i) >= loom_accel_pkg::REG_WAIT_BASE && 32'(araddr_i) < loom_accel_pkg::REG_WAIT_BASE + 12 &&
                 araddr_i[1:0] == 2'b00;
  assign arready_o = !rvalid_o && !rd_pending_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      rvalid_o <= 1'b0;
      rd_pending_q <= 1'b0;
      rdata_o <= '0;
      rresp_o <= 2'b00;
    end else begin
      if (rvalid_o && rready_i) rvalid_o <= 1'b0;
      rd_pending_q <= arvalid_i && arready_o;
      if (arvalid_i && arready_o) begin
        rd_addr_q <= araddr_i;
        rd_counter_q <= in_counters;
        rd_wait_q <= in_wait;
        rd_word_q <= in_counters ? ($clog2(NumCounters*2+1))'((32'(araddr_i) - loom_accel_pkg::REG_COUNTER_BASE) >> 2)
                                 : ($clog2(NumCounters*2+1))'((32'(araddr_i) - loom_accel_pkg::REG_WAIT_BASE) >> 2);
      end
      if (rd_pending_q) begin
        rvalid_o <= 1'b1;
        rdata_o <= value;
        rresp_o <= known ? 2'b00 : 2'b10;
      end
    end
  end
endmodule
