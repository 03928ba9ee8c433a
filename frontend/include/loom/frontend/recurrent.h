// The recurrent layers (ONNX's RNN, GRU and LSTM) unrolled over time into graph operators (Loom
// graphs have no loops, and sequence lengths are static): per step the input projection of every
// step computed at once, the recurrent dense, the gates and the state update; steps past a
// sequence's end masked. The ONNX importer and from_torch (through loom.Graph.add_recurrent) build
// through it, with the weights in ONNX's layouts and gate orders.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loom/frontend/node_builder.h"

namespace loom::frontend {

enum class RecurrentCell { Rnn, Gru, Lstm };

struct RecurrentSpec {
  RecurrentCell cell = RecurrentCell::Rnn;
  int64_t hidden = 0, seq = 0, batch = 0, input = 0, dirs = 1;
  bool reverse = false;              // one direction, run from the last step
  bool batch_first = false;          // ONNX layout=1: X, Y and the states have batch first
  bool linear_before_reset = false;  // GRU: r multiplies the recurrent h block's output (PyTorch's GRU)
  double clip = 0;                   // > 0: every activation's input clamped to [-clip, clip]
  DataType dtype;
  // Per direction, the graph operator of each activation (sigmoid, tanh, relu): RNN f; GRU f, g;
  // LSTM f, g, h.
  std::vector<std::vector<std::string>> acts;
  std::vector<int64_t> lens;  // per batch entry, where some sequence is shorter than seq; else empty

  int64_t gates() const { return cell == RecurrentCell::Rnn ? 1 : cell == RecurrentCell::Gru ? 3 : 4; }
};

// ONNX's default activations of a cell, as graph operators.
std::vector<std::string> default_recurrent_activations(RecurrentCell cell);

// The layer's inputs as graph nodes in ONNX's layouts (gates i, o, f, c for the LSTM; z, r, h for
// the GRU): X [seq, batch, input] ([batch, seq, input] with batch_first), W [D, G*H, input],
// R [D, G*H, H], B [D, 2*G*H] (input then recurrent biases), initial states [D, batch, H]
// ([batch, D, H] with batch_first), LSTM peepholes P [D, 3*H]; -1 for one that is absent.
struct RecurrentInputs {
  int x = -1, w = -1, r = -1, b = -1, initial_h = -1, initial_c = -1, p = -1;
};
// Y [seq, D, batch, H] ([batch, seq, D, H]), the last states Y_h and (LSTM) Y_c [D, batch, H]
// ([batch, D, H]).
struct RecurrentOutputs {
  int y = -1, y_h = -1, y_c = -1;
};

// ModelError naming the input whose shape or type does not match `spec`, or an activation that is
// not one of sigmoid, tanh, relu.
RecurrentOutputs build_recurrent(const NodeBuilder& b, const RecurrentSpec& spec, const RecurrentInputs& in);

}  // namespace loom::frontend
