// The classifier `gradwire train` trains: a multi-layer perceptron (fully connected layers, ReLU between
// them, softmax cross-entropy at the end), its dense math in Eigen. All parameters live in one contiguous
// fp32 buffer and all gradients in another with the same layout, tensor after tensor ("fc1.weight",
// "fc1.bias", "fc2.weight", ...), so a gradient exchange sees one buffer and a list of named tensors.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gwtrain {

// One named tensor inside the parameter and gradient buffers.
struct TensorInfo {
  std::string name;
  size_t offset = 0;  // in elements
  size_t rows = 0;
  size_t cols = 1;
  size_t count() const { return rows * cols; }
};

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;  // column-major: one sample per column

class Mlp {
 public:
  // layer sizes: inputs, hidden..., classes (at least one layer).
  explicit Mlp(std::vector<uint32_t> sizes);

  // He-normal weights from `seed`, zero biases; the same seed gives the same bits on every platform.
  void init(uint64_t seed);

  const std::vector<uint32_t>& sizes() const { return sizes_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  std::span<float> parameters() { return params_; }
  std::span<const float> parameters() const { return params_; }
  std::span<float> gradients() { return grads_; }

  // Forward and backward pass over a batch (inputs x B) with its B labels: writes the gradient of the
  // batch's mean loss into gradients() and returns that mean loss.
  float compute_gradients(const Matrix& x, const uint8_t* labels);

  // Forward pass only: adds the number of correctly classified samples and the summed loss.
  void evaluate(const Matrix& x, const uint8_t* labels, int64_t& correct, double& loss_sum);

 private:
  struct Layer {
    uint32_t in, out;
    size_t weight, bias;  // offsets into the buffers
  };
  Eigen::Map<Matrix> weight(std::vector<float>& buf, const Layer& l) { return {buf.data() + l.weight, l.out, l.in}; }
  Eigen::Map<Eigen::VectorXf> bias(std::vector<float>& buf, const Layer& l) { return {buf.data() + l.bias, l.out}; }
  // Runs the layers over x, keeping every layer's output in acts_ (the last one: logits).
  void forward(const Matrix& x);
  // Softmax of the logits in place, then per-sample cross-entropy of the labels; returns the summed loss.
  double softmax_loss(Matrix& logits, const uint8_t* labels);

  std::vector<uint32_t> sizes_;
  std::vector<Layer> layers_;
  std::vector<TensorInfo> tensors_;
  std::vector<float> params_;
  std::vector<float> grads_;
  std::vector<Matrix> acts_;
  Matrix delta_, next_delta_;
};

// SGD with momentum: v = momentum * v + g;  p -= lr * v.
class Sgd {
 public:
  Sgd(size_t count, float momentum) : velocity_(count, 0.0f), momentum_(momentum) {}
  void step(std::span<float> params, std::span<const float> grads, float lr);
  // The momentum buffer (elastic training puts it back to an earlier step and shares it with joiners).
  std::span<float> velocity() { return velocity_; }

 private:
  std::vector<float> velocity_;
  float momentum_;
};

}  // namespace gwtrain
