// Read DMA of one scratchpad: executes the 2-D strided, zero-padded block copy of a LOAD
// (rows of x_size entries, x_stride entries apart in DRAM) into consecutive scratchpad entries.
// The address side issues AXI4 bursts (at most 256 beats, never across a 4 KiB boundary, at most
// MAX_OUTSTANDING in flight) while the data side writes one entry per cycle: zeros for padding,
// beats for data. Entries wider than the bus take several beats; narrower ones (micro-ops) are
// unpacked from the lanes of a beat.
module loom_dma_rd #(
    parameter int ENTRY_BYTES = 16,
    parameter int DEPTH = 2048,
    parameter int MAX_OUTSTANDING = 4,
    localparam int BusBytes = loom_accel_pkg::BUS_BYTES,
    localparam int AW = $clog2(DEPTH),
    localparam int EW = ENTRY_BYTES * 8
) (
    input  logic clk,
    input  logic rst_n,
    // command (held stable while busy)
    input  logic        start,
    input  logic [31:0] sram_base,
    input  logic [31:0] dram_base,  // in entries
    input  logic [15:0] y_size,
    input  logic [15:0] x_size,
    input  logic [15:0] x_stride,
    input  logic [3:0]  y_pad0,
    input  logic [3:0]  y_pad1,
    input  logic [3:0]  x_pad0,
    input  logic [3:0]  x_pad1,
    output logic        done,        // pulse: every entry written
    output logic        fault,       // pulse: stopped; fault_code says why
    output logic [7:0]  fault_code,
    output logic        data_entry,  // pulse: one entry came from DRAM (for the byte counters)
    // scratchpad write port
    output logic          we,
    output logic [AW-1:0] waddr,
    output logic [EW-1:0] wdata,
    // AXI4 read (address + data channels)
    output logic                  arvalid,
    input  logic                  arready,
    output logic [63:0]           araddr,
    output logic [7:0]            arlen,
    input  logic                  rvalid,
    output logic                  rready,
    input  logic [BusBytes*8-1:0] rdata,
    input  logic [1:0]            rresp,
    input  logic                  rlast
);
  localparam int EntryShift = $clog2(ENTRY_BYTES), BusShift = $clog2(BusBytes);
  localparam int OutW = $clog2(MAX_OUTSTANDING + 1);

  // ---- command checks ----
  wire [16:0] rows = 17'(y_size) + 17'(y_pad0) + 17'(y_pad1);
  wire [16:0] cols = 17'(x_size) + 17'(x_pad0) + 17'(x_pad1);
  wire [33:0] entries = 34'(rows) * 34'(cols);
  wire empty = (x_size == 0) || (y_size == 0);
  wire overflow = 34'(sram_base) + entries > 34'(DEPTH);

  // ---- address side ----
  logic        ar_active;
  logic        ar_wait;   // the AR shown last cycle was not taken: AXI4 keeps it, unchanged, until it is
  logic        ar_abort;  // a fault stopped the DMA: finish the AR handshake in progress, request nothing more
  logic [15:0] ar_row;        // data row being requested
  logic [47:0] ar_row_entry;  // its first DRAM entry
  logic [63:0] ar_addr;       // next beat-aligned byte address of the row
  logic [OutW-1:0] outstanding;
  wire [63:0] row_start_byte = 64'(ar_row_entry) << EntryShift;
  wire [63:0] row_end_byte = row_start_byte + (64'(x_size) << EntryShift);
  logic [8:0] burst_beats;
  loom_burst_beats burst (.addr(ar_addr), .end_byte(row_end_byte), .beats(burst_beats));
  assign arvalid = ar_active && (ar_wait || (!ar_abort && outstanding != OutW'(MAX_OUTSTANDING)));
  assign araddr = ar_addr;
  assign arlen = 8'(burst_beats - 9'd1);

  // ---- data side ----
  logic        w_active;
  logic [16:0] w_row, w_col;
  logic [47:0] w_row_entry;  // DRAM entry of the current data row's first element
  logic [31:0] w_idx;
  wire in_data_rows = (w_row >= 17'(y_pad0)) && (w_row < 17'(y_pad0) + 17'(y_size));
  wire in_data_cols = (w_col >= 17'(x_pad0)) && (w_col < 17'(x_pad0) + 17'(x_size));
  wire is_data = in_data_rows && in_data_cols;
  wire last_col = w_col == cols - 17'd1;
  wire last_entry = last_col && (w_row == rows - 17'd1);
  logic entry_ready;  // the entry at (w_row, w_col) is written this cycle
  logic beat_take;    // the R beat is consumed this cycle
  logic [EW-1:0] entry_data;

  if (ENTRY_BYTES >= BusBytes) begin : g_wide
    localparam int Beats = ENTRY_BYTES / BusBytes;
    if (Beats == 1) begin : g_one
      assign entry_data = rdata;
      assign entry_ready = w_active && (!is_data || rvalid);
      assign beat_take = w_active && is_data && rvalid;
    end else begin : g_multi
      logic [$clog2(Beats)-1:0] beat;
      logic [EW-BusBytes*8-1:0] gathered;  // earlier beats of this entry, lowest bytes first
      assign entry_data = {rdata, gathered};
      assign entry_ready = w_active && (!is_data || (rvalid && beat == $clog2(Beats)'(Beats - 1)));
      assign beat_take = w_active && is_data && rvalid;
      always_ff @(posedge clk) begin
        if (!rst_n || start) beat <= '0;
        else if (beat_take) begin
          beat <= beat + 1'b1;
          gathered <= entry_data[EW-1:BusBytes*8];
        end
      end
    end
  end else begin : g_narrow
    localparam int Lanes = BusBytes / ENTRY_BYTES;
    localparam int LaneW = $clog2(Lanes);
    wire [LaneW-1:0] data_col = LaneW'(w_col - 17'(x_pad0));
    wire row_last_data = w_col == 17'(x_pad0) + 17'(x_size) - 17'd1;
    wire [LaneW-1:0] lane = w_row_entry[LaneW-1:0] + data_col;  // lane of the entry in its beat
    assign entry_data = rdata[32'(lane)*EW+:EW];
    assign entry_ready = w_active && (!is_data || rvalid);
    assign beat_take = w_active && is_data && rvalid && (lane == $clog2(Lanes)'(Lanes - 1) || row_last_data);
  end

  assign rready = beat_take;
  assign we = entry_ready;
  assign waddr = AW'(w_idx);
  assign wdata = is_data ? entry_data : '0;
  assign data_entry = entry_ready && is_data;

  always_ff @(posedge clk) begin
    done <= 1'b0;
    fault <= 1'b0;
    if (!rst_n) begin
      ar_active <= 1'b0;
      ar_wait <= 1'b0;
      ar_abort <= 1'b0;
      w_active <= 1'b0;
      outstanding <= '0;
      fault_code <= '0;
    end else if (start) begin
      outstanding <= '0;
      ar_wait <= 1'b0;
      ar_abort <= 1'b0;
      if (empty) begin
        done <= 1'b1;
      end else if (overflow) begin
        fault <= 1'b1;
        fault_code <= loom_accel_pkg::FAULT_SRAM_OVERFLOW;
      end else begin
        ar_active <= 1'b1;
        ar_row <= '0;
        ar_row_entry <= 48'(dram_base);
        ar_addr <= (64'(dram_base) << EntryShift) & ~(64'(BusBytes) - 64'd1);
        w_active <= 1'b1;
        w_row <= '0;
        w_col <= '0;
        w_row_entry <= 48'(dram_base);
        w_idx <= sram_base;
      end
    end else begin
      // address side
      ar_wait <= arvalid && !arready;
      if (arvalid && arready && ar_abort) begin
        ar_active <= 1'b0;
      end else if (arvalid && arready) begin
        if (ar_addr + (64'(burst_beats) << BusShift) >= row_end_byte) begin
          if (ar_row == y_size - 16'd1) ar_active <= 1'b0;
          ar_row <= ar_row + 16'd1;
          ar_row_entry <= ar_row_entry + 48'(x_stride);
          ar_addr <= ((64'(ar_row_entry) + 64'(x_stride)) << EntryShift) & ~(64'(BusBytes) - 64'd1);
        end else begin
          ar_addr <= ar_addr + (64'(burst_beats) << BusShift);
        end
      end
      outstanding <= outstanding + OutW'(arvalid && arready) - OutW'(rvalid && rready && rlast);
      // data side
      if (rvalid && rready && (rresp == 2'b10 || rresp == 2'b11)) begin  // SLVERR, DECERR
        fault <= 1'b1;
        fault_code <= loom_accel_pkg::FAULT_DMA_FAULT;
        ar_abort <= 1'b1;
        if (!(arvalid && !arready)) ar_active <= 1'b0;  // else once the waiting AR is taken
        w_active <= 1'b0;
      end else if (entry_ready) begin
        w_idx <= w_idx + 32'd1;
        if (last_col) begin
          w_col <= '0;
          w_row <= w_row + 17'd1;
          if (in_data_rows) w_row_entry <= w_row_entry + 48'(x_stride);
        end else begin
          w_col <= w_col + 17'd1;
        end
        if (last_entry) begin
          w_active <= 1'b0;
          done <= 1'b1;
        end
      end
    end
  end

endmodule
