#include "sage_model.h"

#include <cmath>

namespace gnn {

Weights::Weights(int dim_, int hidden_)
    : dim(dim_),
      hidden(hidden_),
      w1s(static_cast<size_t>(hidden_) * dim_),
      w1n(static_cast<size_t>(hidden_) * dim_),
      b1(hidden_, 0.0f),
      w2s(hidden_),
      w2n(hidden_),
      b2(1, 0.0f) {
  // Small deterministic values: every rank starts from the same model.
  for (size_t i = 0; i < w1s.size(); ++i) {
    w1s[i] = 0.3f * std::sin(1.0f + static_cast<float>(i));
    w1n[i] = 0.3f * std::cos(2.0f + static_cast<float>(i));
  }
  for (int j = 0; j < hidden_; ++j) {
    w2s[j] = 0.2f * std::sin(3.0f + static_cast<float>(j));
    w2n[j] = 0.2f * std::cos(4.0f + static_cast<float>(j));
  }
}

std::vector<float*> Weights::parameters() {
  std::vector<float*> all;
  for (auto* block : {&w1s, &w1n, &b1, &w2s, &w2n, &b2}) {
    for (float& value : *block) all.push_back(&value);
  }
  return all;
}

namespace {

// out[j] += sum_c m[j * dim + c] * v[c]
void mat_vec(const std::vector<float>& m, const float* v, int rows, int dim, float* out) {
  for (int j = 0; j < rows; ++j) {
    float sum = 0;
    for (int c = 0; c < dim; ++c) sum += m[static_cast<size_t>(j) * dim + c] * v[c];
    out[j] += sum;
  }
}

void mean_of(const Neighbourhood& hood, int64_t item, const float* rows, int width, float* out) {
  const int32_t begin = hood.offsets[item], end = hood.offsets[item + 1];
  for (int c = 0; c < width; ++c) out[c] = 0;
  if (end == begin) return;
  for (int32_t k = begin; k < end; ++k) {
    const float* row = rows + static_cast<size_t>(hood.position[k]) * width;
    for (int c = 0; c < width; ++c) out[c] += row[c];
  }
  for (int c = 0; c < width; ++c) out[c] /= static_cast<float>(end - begin);
}

}  // namespace

StepResult forward_backward(const Weights& w, const std::vector<float>& x, int64_t u1_count,
                            const Neighbourhood& hop1, const Neighbourhood& hop2,
                            const std::vector<float>& labels, double batch_total) {
  const int d = w.dim, h = w.hidden;
  const auto targets = static_cast<int64_t>(labels.size());
  std::vector<float> agg1(static_cast<size_t>(u1_count) * d), z(static_cast<size_t>(u1_count) * h),
      hid(z.size());
  for (int64_t i = 0; i < u1_count; ++i) {
    float* zi = &z[static_cast<size_t>(i) * h];
    mean_of(hop2, i, x.data(), d, &agg1[static_cast<size_t>(i) * d]);
    for (int j = 0; j < h; ++j) zi[j] = w.b1[j];
    mat_vec(w.w1s, &x[static_cast<size_t>(i) * d], h, d, zi);
    mat_vec(w.w1n, &agg1[static_cast<size_t>(i) * d], h, d, zi);
    for (int j = 0; j < h; ++j) hid[static_cast<size_t>(i) * h + j] = zi[j] > 0 ? zi[j] : 0;
  }
  StepResult result;
  result.dx.assign(x.size(), 0.0f);
  Weights grad(d, h);
  for (auto* p : grad.parameters()) *p = 0;
  std::vector<float> dh(hid.size(), 0.0f), agg2(h);
  for (int64_t t = 0; t < targets; ++t) {
    mean_of(hop1, t, hid.data(), h, agg2.data());
    float y = w.b2[0];
    for (int j = 0; j < h; ++j) y += w.w2s[j] * hid[t * h + j] + w.w2n[j] * agg2[j];
    const float error = y - labels[t];
    result.loss_sum += static_cast<double>(error) * error;
    const auto dy = static_cast<float>(2.0 * error / batch_total);
    grad.b2[0] += dy;
    const int32_t begin = hop1.offsets[t], end = hop1.offsets[t + 1];
    for (int j = 0; j < h; ++j) {
      grad.w2s[j] += dy * hid[t * h + j];
      grad.w2n[j] += dy * agg2[j];
      dh[t * h + j] += dy * w.w2s[j];
      for (int32_t k = begin; k < end; ++k) {
        dh[static_cast<size_t>(hop1.position[k]) * h + j] +=
            dy * w.w2n[j] / static_cast<float>(end - begin);
      }
    }
  }
  for (int64_t i = 0; i < u1_count; ++i) {
    const int32_t begin = hop2.offsets[i], end = hop2.offsets[i + 1];
    for (int j = 0; j < h; ++j) {
      const size_t at = static_cast<size_t>(i) * h + j;
      const float dz = z[at] > 0 ? dh[at] : 0.0f;
      if (dz == 0) continue;
      grad.b1[j] += dz;
      for (int c = 0; c < d; ++c) {
        const size_t wc = static_cast<size_t>(j) * d + c;
        grad.w1s[wc] += dz * x[static_cast<size_t>(i) * d + c];
        grad.w1n[wc] += dz * agg1[static_cast<size_t>(i) * d + c];
        result.dx[static_cast<size_t>(i) * d + c] += dz * w.w1s[wc];
        for (int32_t k = begin; k < end; ++k) {
          result.dx[static_cast<size_t>(hop2.position[k]) * d + c] +=
              dz * w.w1n[wc] / static_cast<float>(end - begin);
        }
      }
    }
  }
  for (float* p : grad.parameters()) result.dweights.push_back(*p);
  return result;
}

}  // namespace gnn
