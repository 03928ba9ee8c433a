// Read DMA of one scratchpad: executes the 2-D strided, zero-padded block copy of a LOAD
// (rows of x_size entries, x_stride entries apart in DRAM) into consecutive scratchpad entries.
// The address side issues AXI4 bursts (loom_burst_gen: at most 256 beats, never across a 4 KiB
// boundary, at most MaxOutstanding in flight) while the data side writes one entry per cycle:
// zeros for padding, beats for data. Entries wider than the bus take several beats; narrower
// ones (micro-ops) are unpacked from the lanes of a beat.
module loom_dma_rd #(
    parameter int EntryBytes = 16,
    parameter int Depth = 2048,
    parameter int MaxOutstanding = 4,
    localparam int BusBytes = loom_accel_pkg::BUS_BYTES,
    localparam int AW = $clog2(Depth),
    localparam int EW = EntryBytes * 8,
    localparam int SramW = loom_accel_pkg::MEM_SRAM_BASE_W,
    localparam int RowEntryW = loom_accel_pkg::DMA_ROW_ENTRY_BITS,
    localparam int AddrW = RowEntryW + $clog2(EntryBytes)
) (
    input  logic clk_i,
    input  logic rst_ni,
    // command (held stable while busy)
    input  logic        start_i,
    input  logic [SramW-1:0] sram_base_i,
    input  logic [31:0] dram_base_i,  // in entries
    input  logic [15:0] y_size_i,
    input  logic [15:0] x_size_i,
    input  logic [15:0] x_stride_i,
    input  logic [3:0]  y_pad0_i,
    input  logic [3:0]  y_pad1_i,
    input  logic [3:0]  x_pad0_i,
    input  logic [3:0]  x_pad1_i,
    output logic        done_o,        // pulse: every entry written
    output logic        fault_o,       // pulse: stopped; fault_code_o says why
    output logic [7:0]  fault_code_o,
    output logic        data_entry_o,  // pulse: one entry came from DRAM (for the byte counters)
    output logic        writing_o,     // the data side owns the scratchpad's write port
    // scratchpad write port
    output logic          we_o,
    output logic [AW-1:0] waddr_o,
    output logic [EW-1:0] wdata_o,
    // AXI4 read
    output loom_accel_pkg::axi_rd_req_t axi_req_o,
    input  loom_accel_pkg::axi_rd_rsp_t axi_rsp_i
);
  localparam int OutW = $clog2(MaxOutstanding + 1);

  // ---- command: sizes at start, then the check (loom_dma_cmd); the data side's bounds follow
  // the sizes one register step at a time ----
  logic [16:0] rows_q, cols_q;                  // with padding
  logic [16:0] rows_last_q, cols_last_q;        // rows_q - 1, cols_q - 1
  logic [16:0] row_data_end_q, col_data_end_q;  // the first padding row/column after the data
  logic [16:0] col_data_last_q;                 // the last data column
  // the same bounds one lower: the data side compares its position before the step, not after
  logic [16:0] rows_last_m1_q, cols_last_m1_q, row_data_end_m1_q, col_data_end_m1_q, col_data_last_m1_q;
  logic [33:0] entries;
  logic        begin_copy, overflow;
  wire empty = x_size_i == 0 || y_size_i == 0;
  loom_dma_cmd #(
      .Depth(Depth)
  ) cmd (
      .clk_i,
      .rst_ni,
      .start_i    (start_i && !empty),
      .rows_i     (rows_q),
      .cols_i     (cols_q),
      .sram_base_i,
      .entries_o  (entries),
      .go_o       (begin_copy),
      .overflow_o (overflow)
  );
  always_ff @(posedge clk_i) begin
    rows_last_q <= rows_q - 17'd1;
    cols_last_q <= cols_q - 17'd1;
    col_data_last_q <= col_data_end_q - 17'd1;
    row_data_end_m1_q <= row_data_end_q - 17'd1;
    col_data_end_m1_q <= col_data_end_q - 17'd1;
    rows_last_m1_q <= rows_last_q - 17'd1;
    cols_last_m1_q <= cols_last_q - 17'd1;
    col_data_last_m1_q <= col_data_last_q - 17'd1;
  end

  // ---- address side ----
  logic        gen_active, gen_valid, ar_fire;
  logic [AddrW-1:0] gen_addr;
  logic [8:0]  gen_beats;
  logic        ar_wait_q;   // the AR shown last cycle was not taken: AXI4 keeps it, unchanged, until it is
  logic        ar_abort_q;  // a fault stopped the DMA: finish the AR handshake in progress, request nothing more
  logic [OutW-1:0] outstanding_q;  // bursts asked for; a last beat counts one cycle late (the safe side)
  logic            last_beat_q;
  // An error response is a fault as soon as it shows (the beat holds until taken, so waiting
  // for READY would only lengthen this path).
  wire r_error = axi_rsp_i.r_valid && (axi_rsp_i.r_resp == 2'b10 || axi_rsp_i.r_resp == 2'b11);
  wire ar_valid = gen_valid && (ar_wait_q || (!ar_abort_q && outstanding_q != OutW'(MaxOutstanding)));
  assign ar_fire = ar_valid && axi_rsp_i.ar_ready;
  loom_burst_gen #(
      .EntryBytes(EntryBytes)
  ) bursts (
      .clk_i,
      .rst_ni,
      .start_i    (begin_copy),
      .stop_i     ((ar_fire && ar_abort_q) || (r_error && !(ar_valid && !axi_rsp_i.ar_ready))),
      .dram_base_i,
      .y_size_i,
      .x_size_i,
      .x_stride_i,
      .active_o   (gen_active),
      .valid_o    (gen_valid),
      .take_i     (ar_fire),
      .addr_o     (gen_addr),
      .beats_o    (gen_beats)
  );
  assign axi_req_o.ar_valid = ar_valid;
  assign axi_req_o.ar_addr = 64'(gen_addr);
  assign axi_req_o.ar_len = 8'(gen_beats - 9'd1);

  // ---- data side ----
  logic        w_active_q;
  logic [16:0] w_row_q, w_col_q;
  logic [RowEntryW-1:0] w_row_entry_q;  // DRAM entry of the current data row's first element
  logic [AW-1:0] w_idx_q;  // the command check keeps every write inside the scratchpad
  // Where (w_row_q, w_col_q) lies, as registers set for the next position while stepping: the
  // compares take the position before the step against the bounds minus one.
  logic in_data_rows_q, in_data_cols_q, last_col_q, last_row_q, col_last_data_q;
  wire is_data = in_data_rows_q && in_data_cols_q;
  wire last_col = last_col_q;
  wire last_entry = last_col_q && last_row_q;
  wire next_col_in = (x_pad0_i == 4'd0 || w_col_q >= 17'(x_pad0_i) - 17'd1) && w_col_q < col_data_end_m1_q;
  wire next_row_in = (y_pad0_i == 4'd0 || w_row_q >= 17'(y_pad0_i) - 17'd1) && w_row_q < row_data_end_m1_q;
  logic entry_ready;  // the entry at (w_row_q, w_col_q) is written this cycle
  logic r_ready;      // the data side takes a beat this cycle if there is one (READY may come first)
  wire beat_take = r_ready && axi_rsp_i.r_valid;
  logic [EW-1:0] entry_data;

  if (EntryBytes >= BusBytes) begin : g_wide
    localparam int Beats = EntryBytes / BusBytes;
    if (Beats == 1) begin : g_one
      assign entry_data = axi_rsp_i.r_data;
      assign entry_ready = w_active_q && (!is_data || axi_rsp_i.r_valid);
      assign r_ready = w_active_q && is_data;
    end else begin : g_multi
      logic [$clog2(Beats)-1:0] beat_q;
      logic [EW-BusBytes*8-1:0] gathered_q;  // earlier beats of this entry, lowest bytes first
      assign entry_data = {axi_rsp_i.r_data, gathered_q};
      assign entry_ready = w_active_q && (!is_data || (axi_rsp_i.r_valid && beat_q == $clog2(Beats)'(Beats - 1)));
      assign r_ready = w_active_q && is_data;
      always_ff @(posedge clk_i) begin
        if (!rst_ni || start_i) begin
          beat_q <= '0;
        end else if (beat_take) begin
          beat_q <= beat_q + 1'b1;
          gathered_q <= entry_data[EW-1:BusBytes*8];
        end
      end
    end
  end else begin : g_narrow
    localparam int Lanes = BusBytes / EntryBytes;
    localparam int LaneW = $clog2(Lanes);
    // the lane of the entry in its beat: only the low bits of the column count
    wire [LaneW-1:0] lane = w_row_entry_q[LaneW-1:0] + LaneW'(w_col_q) - LaneW'(x_pad0_i);
    wire row_last_data = col_last_data_q;
    assign entry_data = axi_rsp_i.r_data[32'(lane)*EW+:EW];
    assign entry_ready = w_active_q && (!is_data || axi_rsp_i.r_valid);
    assign r_ready = w_active_q && is_data && (lane == LaneW'(Lanes - 1) || row_last_data);
  end

  assign axi_req_o.r_ready = r_ready;
  assign writing_o = w_active_q;
  assign we_o = entry_ready;
  assign waddr_o = w_idx_q;
  assign wdata_o = is_data ? entry_data : '0;
  assign data_entry_o = entry_ready && is_data;

  always_ff @(posedge clk_i) begin
    done_o <= 1'b0;
    fault_o <= 1'b0;
    if (!rst_ni) begin
      ar_wait_q <= 1'b0;
      ar_abort_q <= 1'b0;
      w_active_q <= 1'b0;
      outstanding_q <= '0;
      last_beat_q <= 1'b0;
      fault_code_o <= '0;
    end else if (start_i) begin
      outstanding_q <= '0;
      last_beat_q <= 1'b0;
      ar_wait_q <= 1'b0;
      ar_abort_q <= 1'b0;
      rows_q <= 17'(y_size_i) + 17'(y_pad0_i) + 17'(y_pad1_i);
      cols_q <= 17'(x_size_i) + 17'(x_pad0_i) + 17'(x_pad1_i);
      row_data_end_q <= 17'(y_pad0_i) + 17'(y_size_i);
      col_data_end_q <= 17'(x_pad0_i) + 17'(x_size_i);
      if (empty) done_o <= 1'b1;
    end else begin
      // command
      if (overflow) begin
        fault_o <= 1'b1;
        fault_code_o <= loom_accel_pkg::FAULT_SRAM_OVERFLOW;
      end
      if (begin_copy) begin
        w_active_q <= 1'b1;
        w_row_q <= '0;
        w_col_q <= '0;
        w_row_entry_q <= RowEntryW'(dram_base_i);
        w_idx_q <= AW'(sram_base_i);  // below Depth: the check passed
        in_data_rows_q <= y_pad0_i == 4'd0;
        in_data_cols_q <= x_pad0_i == 4'd0;
        last_col_q <= cols_last_q == 17'd0;
        last_row_q <= rows_last_q == 17'd0;
        col_last_data_q <= col_data_last_q == 17'd0;
      end
      // address side
      ar_wait_q <= ar_valid && !axi_rsp_i.ar_ready;
      last_beat_q <= beat_take && axi_rsp_i.r_last;
      outstanding_q <= outstanding_q + OutW'(ar_fire) - OutW'(last_beat_q);
      // data side
      if (r_error) begin  // SLVERR, DECERR
        fault_o <= 1'b1;
        fault_code_o <= loom_accel_pkg::FAULT_DMA_FAULT;
        ar_abort_q <= 1'b1;  // the generator stops now, or once the waiting AR is taken
        w_active_q <= 1'b0;
      end else if (entry_ready) begin
        w_idx_q <= w_idx_q + AW'(1);  // past the last entry only after the last write
        if (last_col) begin
          w_col_q <= '0;
          w_row_q <= w_row_q + 17'd1;
          if (in_data_rows_q) w_row_entry_q <= w_row_entry_q + RowEntryW'(x_stride_i);
          in_data_rows_q <= next_row_in;
          last_row_q <= w_row_q == rows_last_m1_q;
          in_data_cols_q <= x_pad0_i == 4'd0;
          last_col_q <= cols_last_q == 17'd0;
          col_last_data_q <= col_data_last_q == 17'd0;
        end else begin
          w_col_q <= w_col_q + 17'd1;
          in_data_cols_q <= next_col_in;
          last_col_q <= w_col_q == cols_last_m1_q;
          col_last_data_q <= w_col_q == col_data_last_m1_q;
        end
        if (last_entry) begin
          w_active_q <= 1'b0;
          done_o <= 1'b1;
        end
      end
    end
  end

`ifndef SYNTHESIS
  // Beats only for bursts asked for, never more bursts in flight than allowed, writes only
  // inside the scratchpad (the command check's promise).
  always_ff @(posedge clk_i) begin
    if (rst_ni) begin
      assert (!beat_take || outstanding_q != '0)
      else $error("loom_dma_rd: R beat without an outstanding burst");
      assert (outstanding_q <= OutW'(MaxOutstanding)) else $error("loom_dma_rd: more than %0d bursts in flight", MaxOutstanding);
      assert (!we_o || 32'(w_idx_q) < 32'(Depth)) else $error("loom_dma_rd: write at entry %0d of %0d", w_idx_q, Depth);
    end
  end
`endif
  wire unused_ok = &{1'b0, gen_active, col_last_data_q, entries};  // the last data column: narrow entries only
endmodule
