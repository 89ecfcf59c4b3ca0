#include "mlp.hpp"

#include <cmath>
#include <random>
#include <stdexcept>

namespace gwtrain {
namespace {

// Standard normal deviates from mt19937_64 (whose output the C++ standard fixes) by Box-Muller, so the
// initial weights do not depend on the standard library's distribution algorithms.
class Normal {
 public:
  explicit Normal(uint64_t seed) : gen_(seed) {}
  float operator()() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    const double u1 = (double(gen_() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = double(gen_() >> 11) * 0x1.0p-53;          // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = float(r * std::sin(2.0 * M_PI * u2));
    have_spare_ = true;
    return float(r * std::cos(2.0 * M_PI * u2));
  }

 private:
  std::mt19937_64 gen_;
  float spare_ = 0;
  bool have_spare_ = false;
};

}  // namespace

Mlp::Mlp(std::vector<uint32_t> sizes) : sizes_(std::move(sizes)) {
  if (sizes_.size() < 2) throw std::invalid_argument("an MLP needs at least an input and an output size");
  size_t offset = 0;
  for (size_t i = 0; i + 1 < sizes_.size(); ++i) {
    if (sizes_[i] == 0 || sizes_[i + 1] == 0) throw std::invalid_argument("MLP layer sizes must be positive");
    Layer l{sizes_[i], sizes_[i + 1], offset, offset + size_t(sizes_[i]) * sizes_[i + 1]};
    const std::string name = "fc" + std::to_string(i + 1);
    tensors_.push_back({name + ".weight", l.weight, l.out, l.in});
    tensors_.push_back({name + ".bias", l.bias, l.out, 1});
    offset = l.bias + l.out;
    layers_.push_back(l);
  }
  params_.assign(offset, 0.0f);
  grads_.assign(offset, 0.0f);
  acts_.resize(layers_.size());
}

void Mlp::init(uint64_t seed) {
  Normal normal(seed);
  for (const Layer& l : layers_) {
    const float scale = std::sqrt(2.0f / float(l.in));
    auto w = weight(params_, l);
    for (Eigen::Index c = 0; c < w.cols(); ++c)
      for (Eigen::Index r = 0; r < w.rows(); ++r) w(r, c) = normal() * scale;
    bias(params_, l).setZero();
  }
}

void Mlp::forward(const Matrix& x) {
  if (x.rows() != Eigen::Index(sizes_.front()))
    throw std::invalid_argument("MLP input has " + std::to_string(x.rows()) + " features, the model expects " +
                                std::to_string(sizes_.front()));
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    const Matrix& in = i == 0 ? x : acts_[i - 1];
    Matrix& out = acts_[i];
    out.noalias() = weight(params_, l) * in;
    out.colwise() += bias(params_, l);
    if (i + 1 < layers_.size()) out = out.cwiseMax(0.0f);
  }
}

double Mlp::softmax_loss(Matrix& logits, const uint8_t* labels) {
  double loss = 0;
  for (Eigen::Index j = 0; j < logits.cols(); ++j) {
    auto col = logits.col(j);
    const float max = col.maxCoeff();
    col = (col.array() - max).exp();
    const float sum = col.sum();
    col /= sum;
    loss -= std::log(std::max(double(col(labels[j])), 1e-30));
  }
  return loss;
}

float Mlp::compute_gradients(const Matrix& x, const uint8_t* labels) {
  forward(x);
  const Eigen::Index batch = x.cols();
  Matrix& probs = acts_.back();
  const double loss = softmax_loss(probs, labels);
  // d(mean loss)/d(logits) = (softmax - onehot) / B
  delta_ = probs;
  for (Eigen::Index j = 0; j < batch; ++j) delta_(labels[j], j) -= 1.0f;
  delta_ /= float(batch);
  for (size_t i = layers_.size(); i-- > 0;) {
    const Layer& l = layers_[i];
    const Matrix& in = i == 0 ? x : acts_[i - 1];
    weight(grads_, l).noalias() = delta_ * in.transpose();
    bias(grads_, l) = delta_.rowwise().sum();
    if (i == 0) break;
    next_delta_.noalias() = weight(params_, l).transpose() * delta_;
    // ReLU: the gradient passes where the layer's output was positive.
    delta_ = (in.array() > 0.0f).select(next_delta_, 0.0f);
  }
  return float(loss / double(batch));
}

void Mlp::evaluate(const Matrix& x, const uint8_t* labels, int64_t& correct, double& loss_sum) {
  forward(x);
  Matrix& logits = acts_.back();
  for (Eigen::Index j = 0; j < logits.cols(); ++j) {
    Eigen::Index best = 0;
    logits.col(j).maxCoeff(&best);
    if (best == Eigen::Index(labels[j])) ++correct;
  }
  loss_sum += softmax_loss(logits, labels);
}

void Sgd::step(std::span<float> params, std::span<const float> grads, float lr) {
  if (params.size() != velocity_.size() || grads.size() != velocity_.size())
    throw std::invalid_argument("SGD: parameter, gradient and velocity sizes differ");
  Eigen::Map<Eigen::VectorXf> p(params.data(), Eigen::Index(params.size()));
  Eigen::Map<const Eigen::VectorXf> g(grads.data(), Eigen::Index(grads.size()));
  Eigen::Map<Eigen::VectorXf> v(velocity_.data(), Eigen::Index(velocity_.size()));
  v = momentum_ * v + g;
  p -= lr * v;
}

}  // namespace gwtrain
