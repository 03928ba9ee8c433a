// Burst generator of a 2-D DMA: walks y_size rows of x_size entries, x_stride entries apart from
// dram_base, and cuts every row into AXI4 INCR bursts (loom_burst_beats). A burst is ready three
// cycles after the one before it was taken (four at a row's start): each step is one adder or
// compare deep, which keeps the DMAs' address side inside a 200 MHz budget (docs/fpga_fit.md).
module loom_burst_gen #(
    parameter int EntryBytes = 16,
    localparam int BusBytes = loom_accel_pkg::BUS_BYTES,
    localparam int RowEntryW = loom_accel_pkg::DMA_ROW_ENTRY_BITS,
    localparam int AddrW = RowEntryW + $clog2(EntryBytes)  // a row's byte address
) (
    input  logic        clk_i,
    input  logic        rst_ni,
    input  logic        start_i,      // begin a transfer; the command below is held while active
    input  logic        stop_i,       // abandon it (a fault)
    input  logic [31:0] dram_base_i,  // in entries
    input  logic [15:0] y_size_i,     // at least 1
    input  logic [15:0] x_size_i,     // at least 1
    input  logic [15:0] x_stride_i,
    output logic        active_o,     // bursts still to hand out
    output logic        valid_o,      // a burst is ready: addr_o, beats_o (held until taken)
    input  logic        take_i,       // it is handed out this cycle
    output logic [AddrW-1:0] addr_o,  // beat-aligned byte address
    output logic [8:0]  beats_o
);
  localparam int EntryShift = $clog2(EntryBytes), BusShift = $clog2(BusBytes);
  // A row's bytes, from a partial first beat to a partial last one, and its beats
  localparam int RowBytesW = loom_accel_pkg::MEM_X_SIZE_W + EntryShift + 1;
  localparam int LeftW = RowBytesW - BusShift;
  typedef enum logic [2:0] {
    Idle,   // no transfer
    Row,    // a row starts: its first beat and its length in beats
    Page,   // the longest burst allowed where it starts (loom_burst_cap)
    Cut,    // the next burst's length
    Ready   // the burst waits to be taken
  } state_e;

  state_e      state_q;
  logic [15:0] row_q;
  logic [15:0] row_last_q;   // y_size - 1
  logic [RowEntryW-1:0] row_entry_q;  // the row's first DRAM entry
  logic [AddrW-1:0] addr_q;
  logic [8:0]  cap_q;        // the longest burst allowed at addr_q
  logic [8:0]  cap;
  logic [LeftW-1:0] left_q;  // beats of the row not handed out yet
  logic [8:0]  beats_q;
  logic        ends_row_q;
  logic [8:0]  beats;
  logic        ends_row;
  loom_burst_cap page (
      .addr_i(addr_q[11:0]),
      .cap_o (cap)
  );
  loom_burst_beats #(
      .LeftW(LeftW)
  ) cut (
      .cap_i     (cap_q),
      .left_i    (left_q),
      .beats_o   (beats),
      .ends_row_o(ends_row)
  );

  wire [AddrW-1:0] row_byte = AddrW'(row_entry_q) << EntryShift;
  assign active_o = state_q != Idle;
  assign valid_o = state_q == Ready;
  assign addr_o = addr_q;
  assign beats_o = beats_q;

  always_ff @(posedge clk_i) begin
    if (!rst_ni || stop_i) begin
      state_q <= Idle;
    end else if (start_i) begin
      state_q <= Row;
      row_q <= '0;
      row_last_q <= y_size_i - 16'd1;
      row_entry_q <= RowEntryW'(dram_base_i);
    end else begin
      unique case (state_q)
        Idle: ;
        Row: begin
          // a partial first or last beat (entries narrower than the bus) counts as a beat
          addr_q <= row_byte & ~(AddrW'(BusBytes) - AddrW'(1));
          left_q <= LeftW'((RowBytesW'(row_byte & (AddrW'(BusBytes) - AddrW'(1))) + (RowBytesW'(x_size_i) << EntryShift) +
                            RowBytesW'(BusBytes - 1)) >> BusShift);
          state_q <= Page;
        end
        Page: begin
          cap_q <= cap;
          state_q <= Cut;
        end
        Cut: begin
          beats_q <= beats;
          ends_row_q <= ends_row;
          state_q <= Ready;
        end
        Ready: begin
          if (take_i && ends_row_q) begin
            state_q <= row_q == row_last_q ? Idle : Row;
            row_q <= row_q + 16'd1;
            row_entry_q <= row_entry_q + RowEntryW'(x_stride_i);
          end else if (take_i) begin
            state_q <= Page;
            addr_q <= addr_q + (AddrW'(beats_q) << BusShift);
            left_q <= left_q - LeftW'(beats_q);
          end
        end
        // every state is named above: a default arm that no run can reach (waived from coverage)
        /*verilator coverage_off*/
        default: state_q <= Idle;
        /*verilator coverage_on*/
      endcase
    end
  end
endmodule
