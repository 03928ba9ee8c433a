// Write DMA of the out buffer: executes a STORE (y_size rows of x_size consecutive out entries
// to DRAM rows x_stride entries apart). The address side issues AXI4 write bursts (at most 256
// beats, never across a 4 KiB boundary, at most MAX_OUTSTANDING without a response); the data
// side reads the out buffer ahead into a small FIFO and sends each entry as ENTRY/BUS beats.
module loom_dma_wr #(
    parameter int MAX_OUTSTANDING = 4,
    localparam int BusBytes = loom_accel_pkg::BUS_BYTES,
    localparam int EntryBytes = loom_accel_pkg::OUT_ENTRY_BYTES,
    localparam int Depth = loom_accel_pkg::OUT_DEPTH,
    localparam int AW = loom_accel_pkg::OUT_IDX_BITS,
    localparam int EW = EntryBytes * 8
) (
    input  logic clk,
    input  logic rst_n,
    input  logic        start,
    input  logic [31:0] sram_base,
    input  logic [31:0] dram_base,  // in entries
    input  logic [15:0] y_size,
    input  logic [15:0] x_size,
    input  logic [15:0] x_stride,
    output logic        done,
    output logic        fault,
    output logic [7:0]  fault_code,
    output logic        data_entry,  // pulse: one entry sent
    // out buffer read port (data one cycle after the address)
    output logic [AW-1:0] raddr,
    input  logic [EW-1:0] rdata,
    // AXI4 write channels
    output logic                  awvalid,
    input  logic                  awready,
    output logic [63:0]           awaddr,
    output logic [7:0]            awlen,
    output logic                  wvalid,
    input  logic                  wready,
    output logic [BusBytes*8-1:0] wdata,
    output logic                  wlast,
    input  logic                  bvalid,
    output logic                  bready,
    input  logic [1:0]            bresp
);
  localparam int EntryShift = $clog2(EntryBytes), BusShift = $clog2(BusBytes);
  localparam int Beats = EntryBytes / BusBytes;
  localparam int OutW = $clog2(MAX_OUTSTANDING + 1);

  wire [31:0] total = 32'(y_size) * 32'(x_size);
  wire empty = (x_size == 0) || (y_size == 0);
  wire overflow = 33'(sram_base) + 33'(total) > 33'(Depth);

  // ---- address side: one or more bursts per row ----
  logic        aw_active;
  logic        aw_wait;   // the AW shown last cycle was not taken: AXI4 keeps it, unchanged, until it is
  logic        aw_abort;  // a fault stopped the DMA: finish the AW handshake in progress, request nothing more
  logic [15:0] aw_row;
  logic [63:0] aw_addr, aw_row_end;
  logic [OutW-1:0] outstanding;  // bursts without a write response
  logic [8:0] burst_beats;
  loom_burst_beats burst (.addr(aw_addr), .end_byte(aw_row_end), .beats(burst_beats));
  logic lenq_full, lenq_empty;
  logic [8:0] lenq_head;
  logic [2:0] lenq_count;
  assign awvalid = aw_active && (aw_wait || (!aw_abort && outstanding != OutW'(MAX_OUTSTANDING) && !lenq_full));
  assign awaddr = aw_addr;
  assign awlen = 8'(burst_beats - 9'd1);
  wire aw_fire = awvalid && awready;
  wire [63:0] next_row_start = (64'(dram_base) + (64'(aw_row) + 64'd1) * 64'(x_stride)) << EntryShift;

  // ---- data side ----
  logic [31:0] rd_left, rd_idx;  // out entries still to read, next index
  logic        rd_pending;       // a read was issued last cycle
  logic        fifo_full, fifo_empty, fifo_pop;
  logic [EW-1:0] fifo_head;
  logic [2:0]  fifo_count;
  wire rd_issue = rd_left != 0 && (32'(fifo_count) + 32'(rd_pending)) < 32'd3;
  assign raddr = AW'(rd_idx);
  loom_fifo #(
      .WIDTH(EW),
      .DEPTH(4)
  ) entries (
      .clk, .rst_n(rst_n && !start),
      .push(rd_pending), .din(rdata), .full(fifo_full),
      .pop(fifo_pop), .dout(fifo_head), .empty(fifo_empty), .count(fifo_count)
  );
  logic [$clog2(Beats+1)-1:0] beat;  // beat of the head entry
  logic [8:0] w_left;                // beats left in the current burst (0: take the next burst)
  assign wvalid = !fifo_empty && (w_left != 0 || !lenq_empty);
  assign wdata = fifo_head[32'(beat)*BusBytes*8+:BusBytes*8];
  wire [8:0] burst_left = w_left != 0 ? w_left : lenq_head;
  assign wlast = burst_left == 9'd1;
  wire w_fire = wvalid && wready;
  wire entry_done = w_fire && beat == ($clog2(Beats+1))'(Beats - 1);
  assign fifo_pop = entry_done;
  assign data_entry = entry_done;
  logic [31:0] sent_left;  // entries still to send
  loom_fifo #(
      .WIDTH(9),
      .DEPTH(4)
  ) burst_lengths (
      .clk, .rst_n(rst_n && !start),
      .push(aw_fire), .din(burst_beats), .full(lenq_full),
      .pop(w_fire && w_left == 0), .dout(lenq_head), .empty(lenq_empty), .count(lenq_count)
  );
  assign bready = 1'b1;
  logic active;

  always_ff @(posedge clk) begin
    done <= 1'b0;
    fault <= 1'b0;
    if (!rst_n) begin
      aw_active <= 1'b0;
      aw_wait <= 1'b0;
      aw_abort <= 1'b0;
      active <= 1'b0;
      outstanding <= '0;
      rd_left <= '0;
      rd_pending <= 1'b0;
      sent_left <= '0;
      fault_code <= '0;
    end else if (start) begin
      outstanding <= '0;
      aw_wait <= 1'b0;
      aw_abort <= 1'b0;
      beat <= '0;
      w_left <= '0;
      rd_pending <= 1'b0;
      if (empty) begin
        done <= 1'b1;
      end else if (overflow) begin
        fault <= 1'b1;
        fault_code <= loom_accel_pkg::FAULT_SRAM_OVERFLOW;
      end else begin
        active <= 1'b1;
        aw_active <= 1'b1;
        aw_row <= '0;
        aw_addr <= 64'(dram_base) << EntryShift;
        aw_row_end <= (64'(dram_base) + 64'(x_size)) << EntryShift;
        rd_left <= total;
        rd_idx <= sram_base;
        sent_left <= total;
      end
    end else begin
      aw_wait <= awvalid && !awready;
      if (aw_fire && aw_abort) begin
        aw_active <= 1'b0;
      end else if (aw_fire) begin
        if (aw_addr + (64'(burst_beats) << BusShift) >= aw_row_end) begin
          if (aw_row == y_size - 16'd1) aw_active <= 1'b0;
          aw_row <= aw_row + 16'd1;
          aw_addr <= next_row_start;
          aw_row_end <= next_row_start + (64'(x_size) << EntryShift);
        end else begin
          aw_addr <= aw_addr + (64'(burst_beats) << BusShift);
        end
      end
      outstanding <= outstanding + OutW'(aw_fire) - OutW'(bvalid);
      rd_pending <= rd_issue;
      if (rd_issue) begin
        rd_left <= rd_left - 32'd1;
        rd_idx <= rd_idx + 32'd1;
      end
      if (w_fire) begin
        beat <= entry_done ? '0 : beat + 1'b1;
        w_left <= burst_left - 9'd1;
      end
      if (entry_done) sent_left <= sent_left - 32'd1;
      if (bvalid && (bresp == 2'b10 || bresp == 2'b11)) begin  // SLVERR, DECERR
        fault <= 1'b1;
        fault_code <= loom_accel_pkg::FAULT_DMA_FAULT;
        active <= 1'b0;
        aw_abort <= 1'b1;
        if (!(awvalid && !awready)) aw_active <= 1'b0;  // else once the waiting AW is taken
      end else if (active && sent_left == 0 && !aw_active && outstanding == 0) begin
        active <= 1'b0;
        done <= 1'b1;
      end
    end
  end
  wire unused_ok = &{1'b0, fifo_full, lenq_count};
endmodule
