// Write DMA of the out buffer: executes a STORE (y_size rows of x_size consecutive out entries
// to DRAM rows x_stride entries apart). The address side issues AXI4 write bursts
// (loom_burst_gen: at most 256 beats, never across a 4 KiB boundary, at most MaxOutstanding
// without a response); the data side reads the out buffer ahead into a small FIFO and sends
// each entry as ENTRY/BUS beats.
module loom_dma_wr #(
    parameter int MaxOutstanding = 4,
    localparam int BusBytes = loom_accel_pkg::BUS_BYTES,
    localparam int EntryBytes = loom_accel_pkg::OUT_ENTRY_BYTES,
    localparam int Depth = loom_accel_pkg::OUT_DEPTH,
    localparam int AW = loom_accel_pkg::OUT_IDX_BITS,
    localparam int EW = EntryBytes * 8,
    localparam int SramW = loom_accel_pkg::MEM_SRAM_BASE_W,
    localparam int AddrW = loom_accel_pkg::DMA_ROW_ENTRY_BITS + $clog2(EntryBytes),
    localparam int CntW = $clog2(Depth + 1)  // an entry count, up to the whole buffer
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
    output logic        done_o,
    output logic        fault_o,
    output logic [7:0]  fault_code_o,
    output logic        data_entry_o,  // pulse: one entry sent
    // out buffer read port (data one cycle after the address)
    output logic [AW-1:0] raddr_o,
    input  logic [EW-1:0] rdata_i,
    // AXI4 write
    output loom_accel_pkg::axi_wr_req_t axi_req_o,
    input  loom_accel_pkg::axi_wr_rsp_t axi_rsp_i
);
  localparam int Beats = EntryBytes / BusBytes;
  localparam int OutW = $clog2(MaxOutstanding + 1);

  // ---- command: the check (loom_dma_cmd) ----
  logic [33:0] cmd_entries;
  logic        begin_copy, overflow;
  wire empty = x_size_i == 0 || y_size_i == 0;
  loom_dma_cmd #(
      .Depth(Depth)
  ) cmd (
      .clk_i,
      .rst_ni,
      .start_i    (start_i && !empty),
      .rows_i     (17'(y_size_i)),
      .cols_i     (17'(x_size_i)),
      .sram_base_i,
      .entries_o  (cmd_entries),
      .go_o       (begin_copy),
      .overflow_o (overflow)
  );
  wire [CntW-1:0] total = CntW'(cmd_entries);  // read only once the check passed: at most Depth

  // ---- address side: one or more bursts per row ----
  logic        gen_active, gen_valid, aw_fire;
  logic [AddrW-1:0] gen_addr;
  logic [8:0]  gen_beats;
  logic        aw_wait_q;   // the AW shown last cycle was not taken: AXI4 keeps it, unchanged, until it is
  logic        aw_abort_q;  // a fault stopped the DMA: finish the AW handshake in progress, request nothing more
  logic [OutW-1:0] outstanding_q;  // bursts without a write response
  logic lenq_full, lenq_empty;
  logic [8:0] lenq_head;
  logic [2:0] lenq_count;
  wire b_error = axi_rsp_i.b_valid && (axi_rsp_i.b_resp == 2'b10 || axi_rsp_i.b_resp == 2'b11);
  wire aw_valid = gen_valid && (aw_wait_q || (!aw_abort_q && outstanding_q != OutW'(MaxOutstanding) && !lenq_full));
  assign aw_fire = aw_valid && axi_rsp_i.aw_ready;
  loom_burst_gen #(
      .EntryBytes(EntryBytes)
  ) bursts (
      .clk_i,
      .rst_ni,
      .start_i    (begin_copy),
      .stop_i     ((aw_fire && aw_abort_q) || (b_error && !(aw_valid && !axi_rsp_i.aw_ready))),
      .dram_base_i,
      .y_size_i,
      .x_size_i,
      .x_stride_i,
      .active_o   (gen_active),
      .valid_o    (gen_valid),
      .take_i     (aw_fire),
      .addr_o     (gen_addr),
      .beats_o    (gen_beats)
  );
  assign axi_req_o.aw_valid = aw_valid;
  assign axi_req_o.aw_addr = 64'(gen_addr);
  assign axi_req_o.aw_len = 8'(gen_beats - 9'd1);

  // ---- data side ----
  logic [CntW-1:0] rd_left_q;  // out entries still to read
  logic [AW-1:0]   rd_idx_q;   // the next (past the last entry only after the last read)
  logic        rd_pending_q;         // a read was issued last cycle
  logic        fifo_full, fifo_empty, fifo_pop;
  logic [EW-1:0] fifo_head;
  logic [2:0]  fifo_count;
  wire rd_issue = rd_left_q != 0 && (32'(fifo_count) + 32'(rd_pending_q)) < 32'd3;
  assign raddr_o = rd_idx_q;
  loom_fifo #(
      .Width(EW),
      .Depth(4)
  ) entries (
      .clk_i,
      .rst_ni (rst_ni && !start_i),
      .push_i (rd_pending_q),
      .data_i (rdata_i),
      .full_o (fifo_full),
      .pop_i  (fifo_pop),
      .data_o (fifo_head),
      .empty_o(fifo_empty),
      .count_o(fifo_count)
  );
  logic [$clog2(Beats+1)-1:0] beat_q;  // beat of the head entry
  logic [8:0] w_left_q;                // beats left in the current burst (0: take the next burst)
  wire [8:0] burst_left = w_left_q != 0 ? w_left_q : lenq_head;
  wire w_valid = !fifo_empty && (w_left_q != 0 || !lenq_empty);
  wire w_fire = w_valid && axi_rsp_i.w_ready;
  wire entry_done = w_fire && beat_q == ($clog2(Beats+1))'(Beats - 1);
  assign axi_req_o.w_valid = w_valid;
  assign axi_req_o.w_data = fifo_head[32'(beat_q)*BusBytes*8+:BusBytes*8];
  assign axi_req_o.w_last = burst_left == 9'd1;
  assign axi_req_o.b_ready = 1'b1;
  assign fifo_pop = entry_done;
  assign data_entry_o = entry_done;
  logic [CntW-1:0] sent_left_q;  // entries still to send
  loom_fifo #(
      .Width(9),
      .Depth(4)
  ) burst_lengths (
      .clk_i,
      .rst_ni (rst_ni && !start_i),
      .push_i (aw_fire),
      .data_i (gen_beats),
      .full_o (lenq_full),
      .pop_i  (w_fire && w_left_q == 0),
      .data_o (lenq_head),
      .empty_o(lenq_empty),
      .count_o(lenq_count)
  );
  logic active_q;

  always_ff @(posedge clk_i) begin
    done_o <= 1'b0;
    fault_o <= 1'b0;
    if (!rst_ni) begin
      aw_wait_q <= 1'b0;
      aw_abort_q <= 1'b0;
      active_q <= 1'b0;
      outstanding_q <= '0;
      rd_left_q <= '0;
      rd_pending_q <= 1'b0;
      sent_left_q <= '0;
      fault_code_o <= '0;
    end else if (start_i) begin
      outstanding_q <= '0;
      aw_wait_q <= 1'b0;
      aw_abort_q <= 1'b0;
      beat_q <= '0;
      w_left_q <= '0;
      rd_pending_q <= 1'b0;
      if (empty) done_o <= 1'b1;
    end else begin
      if (overflow) begin
        fault_o <= 1'b1;
        fault_code_o <= loom_accel_pkg::FAULT_SRAM_OVERFLOW;
      end
      if (begin_copy) begin
        active_q <= 1'b1;
        rd_left_q <= total;
        rd_idx_q <= AW'(sram_base_i);  // below Depth: the check passed
        sent_left_q <= total;
      end
      aw_wait_q <= aw_valid && !axi_rsp_i.aw_ready;
      outstanding_q <= outstanding_q + OutW'(aw_fire) - OutW'(axi_rsp_i.b_valid);
      rd_pending_q <= rd_issue;
      if (rd_issue) begin
        rd_left_q <= rd_left_q - CntW'(1);
        rd_idx_q <= rd_idx_q + AW'(1);
      end
      if (w_fire) begin
        beat_q <= entry_done ? '0 : beat_q + 1'b1;
        w_left_q <= burst_left - 9'd1;
      end
      if (entry_done) sent_left_q <= sent_left_q - CntW'(1);
      if (b_error) begin  // SLVERR, DECERR
        fault_o <= 1'b1;
        fault_code_o <= loom_accel_pkg::FAULT_DMA_FAULT;
        active_q <= 1'b0;
        aw_abort_q <= 1'b1;  // the generator stops now, or once the waiting AW is taken
      end else if (active_q && sent_left_q == 0 && !gen_active && outstanding_q == 0) begin
        active_q <= 1'b0;
        done_o <= 1'b1;
      end
    end
  end

`ifndef SYNTHESIS
  // Responses only for bursts sent, never more in flight than allowed, reads only inside the
  // out buffer (the command check's promise), W beats only inside announced bursts.
  always_ff @(posedge clk_i) begin
    if (rst_ni) begin
      assert (!axi_rsp_i.b_valid || outstanding_q != '0) else $error("loom_dma_wr: B response without a burst");
      assert (outstanding_q <= OutW'(MaxOutstanding)) else $error("loom_dma_wr: more than %0d bursts in flight", MaxOutstanding);
      assert (!rd_issue || 32'(rd_idx_q) < 32'(Depth)) else $error("loom_dma_wr: read at entry %0d of %0d", rd_idx_q, Depth);
      assert (!w_valid || burst_left != 9'd0) else $error("loom_dma_wr: W beat outside a burst");
    end
  end
`endif
  wire unused_ok = &{1'b0, fifo_full, lenq_count, cmd_entries};  // the count: its low bits, once it fits
endmodule
