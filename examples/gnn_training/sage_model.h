// The two-layer GraphSAGE-style model of gnn_training.cpp, on the host: mean aggregation of
// sampled neighbours, a ReLU hidden layer and a scalar output, with its backward pass written out.
//
//   layer 1, for every node i of the first-hop set U1:
//     z_i = W1s x_i + W1n mean_{k in N2(i)} x_k + b1,   h_i = relu(z_i)
//   layer 2, for every target t:
//     y_t = w2s . h_t + w2n . mean_{k in N1(t)} h_k + b2
//   loss = mean_t (y_t - label_t)^2
//
// x are rows of the learnable embedding (gathered for the second-hop set U2, which starts with U1
// in order); N1 and N2 are the sampled neighbourhoods as positions in U1 and U2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gnn {

struct Weights {
  int dim = 0, hidden = 0;
  std::vector<float> w1s, w1n, b1, w2s, w2n, b2;  // hidden x dim, hidden x dim, hidden, ...

  Weights(int dim, int hidden);
  // All parameters back to back (for averaging gradients over the ranks).
  std::vector<float*> parameters();
  size_t size() const { return w1s.size() + w1n.size() + b1.size() + w2s.size() + w2n.size() + 1; }
};

// A sampled neighbourhood: for item i, neighbours position[offsets[i]] .. position[offsets[i+1]).
struct Neighbourhood {
  std::vector<int32_t> offsets;
  std::vector<int32_t> position;
};

struct StepResult {
  double loss_sum = 0;          // sum of squared errors over the targets
  std::vector<float> dx;        // |U2| x dim: the embedding's gradient
  std::vector<float> dweights;  // Weights::size(), in parameters() order
};

// Forward and backward for `targets` (the first targets.size() entries of U1), whose labels are
// `labels`; gradients are of the mean loss over `batch_total` targets (all ranks').
StepResult forward_backward(const Weights& weights, const std::vector<float>& x, int64_t u1_count,
                            const Neighbourhood& hop1, const Neighbourhood& hop2,
                            const std::vector<float>& labels, double batch_total);

}  // namespace gnn
