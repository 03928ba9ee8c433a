// AXI4-Lite control registers (offsets from the generated package; the map is documented in
// docs/accel.md): CONTROL (START), STATUS, INSN_ADDR, INSN_COUNT, CYCLES, ERROR_INDEX and the
// 64-bit performance counters, then the per-module wait registers. Writes to read-only or unknown offsets answer SLVERR, as does
// START while a run is in progress.
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
    input  logic [3*32-1:0] wait_state  // load, compute, store: {waiting, index[30:0]}
);
  localparam int CounterEnd = loom_accel_pkg::REG_COUNTER_BASE + 8 * NumCounters;

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
    end else begin
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
          loom_accel_pkg::REG_INSN_ADDR_LO: insn_addr[31:0] <= wdata;
          loom_accel_pkg::REG_INSN_ADDR_HI: insn_addr[63:32] <= wdata;
          loom_accel_pkg::REG_INSN_COUNT: insn_count <= wdata;
          default: bresp <= 2'b10;  // read-only or no such register
        endcase
      end
    end
  end

  // ---- reads ----
  logic [31:0] value;
  logic known;
  always_comb begin
    known = 1'b1;
    value = '0;
    case (32'(araddr))
      loom_accel_pkg::REG_CONTROL: value = 32'(running);
      loom_accel_pkg::REG_STATUS: value = status;
      loom_accel_pkg::REG_INSN_ADDR_LO: value = insn_addr[31:0];
      loom_accel_pkg::REG_INSN_ADDR_HI: value = insn_addr[63:32];
      loom_accel_pkg::REG_INSN_COUNT: value = insn_count;
      loom_accel_pkg::REG_CYCLES_LO: value = cycles[31:0];
      loom_accel_pkg::REG_CYCLES_HI: value = cycles[63:32];
      loom_accel_pkg::REG_ERROR_INDEX: value = error_index;
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
