#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "mlp.hpp"

using gwtrain::Matrix;
using gwtrain::Mlp;

namespace {

TEST(Mlp, LaysTensorsOutBackToBackWithNames) {
  Mlp m({784, 256, 128, 10});
  const auto& t = m.tensors();
  ASSERT_EQ(t.size(), 6u);
  const char* names[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"};
  size_t offset = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].name, names[i]);
    EXPECT_EQ(t[i].offset, offset);
    offset += t[i].count();
  }
  EXPECT_EQ(offset, 784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  EXPECT_EQ(m.parameters().size(), offset);
  EXPECT_EQ(m.gradients().size(), offset);
}

float loss_of(Mlp& m, const Matrix& x, const uint8_t* labels) { return m.compute_gradients(x, labels); }

TEST(Mlp, GradientsMatchFiniteDifferences) {
  Mlp m({6, 5, 4, 3});
  m.init(42);
  // Biases away from zero so no ReLU sits on its kink.
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const auto& t : m.tensors())
    if (t.name.ends_with(".bias"))
      for (size_t i = 0; i < t.count(); ++i) m.parameters()[t.offset + i] = 0.3f * u(gen);
  Matrix x(6, 5);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = u(gen);
  const uint8_t labels[] = {0, 2, 1, 2, 0};

  loss_of(m, x, labels);
  const std::vector<float> analytic(m.gradients().begin(), m.gradients().end());
  const double eps = 1e-3;
  double worst = 0;
  for (size_t i = 0; i < analytic.size(); ++i) {
    float& p = m.parameters()[i];
    const float saved = p;
    p = saved + float(eps);
    const double up = loss_of(m, x, labels);
    p = saved - float(eps);
    const double down = loss_of(m, x, labels);
    p = saved;
    const double numeric = (up - down) / (2 * eps);
    const double err = std::abs(numeric - analytic[i]) / (1e-3 + std::abs(numeric));
    worst = std::max(worst, err);
    EXPECT_NEAR(analytic[i], numeric, 2e-3 + 2e-2 * std::abs(numeric)) << "parameter " << i;
  }
  EXPECT_LT(worst, 0.05);
}

TEST(Mlp, InitIsDeterministicAndScaled) {
  Mlp a({100, 50, 10}), b({100, 50, 10}), c({100, 50, 10});
  a.init(3);
  b.init(3);
  c.init(4);
  EXPECT_TRUE(std::equal(a.parameters().begin(), a.parameters().end(), b.parameters().begin()));
  EXPECT_FALSE(std::equal(a.parameters().begin(), a.parameters().end(), c.parameters().begin()));
  // He-normal: the first layer's weights have variance 2 / fan_in.
  double sq = 0;
  for (size_t i = 0; i < 5000; ++i) sq += double(a.parameters()[i]) * a.parameters()[i];
  EXPECT_NEAR(sq / 5000, 2.0 / 100, 0.004);
  const auto& bias = a.tensors()[1];
  for (size_t i = 0; i < bias.count(); ++i) EXPECT_EQ(a.parameters()[bias.offset + i], 0.0f);
}

TEST(Mlp, EvaluateCountsCorrectPredictions) {
  Mlp m({2, 2});  // logits = W x + b
  auto p = m.parameters();
  p[0] = 1, p[1] = 0, p[2] = 0, p[3] = 1, p[4] = 0, p[5] = 0;  // identity (column-major), zero bias
  Matrix x(2, 3);
  x << 1, 0, 2,
       0, 1, 1;
  const uint8_t labels[] = {0, 1, 1};  // the third sample is predicted 0: wrong
  int64_t correct = 0;
  double loss = 0;
  m.evaluate(x, labels, correct, loss);
  EXPECT_EQ(correct, 2);
  const double expected = 2 * std::log(1 + std::exp(-1.0)) + std::log(1 + std::exp(1.0));
  EXPECT_NEAR(loss, expected, 1e-5);
}

TEST(Sgd, AppliesMomentum) {
  gwtrain::Sgd sgd(2, 0.5f);
  std::vector<float> p{1.0f, 2.0f};
  const std::vector<float> g{0.5f, -1.0f};
  sgd.step(p, g, 0.1f);  // v = g
  EXPECT_FLOAT_EQ(p[0], 1.0f - 0.05f);
  EXPECT_FLOAT_EQ(p[1], 2.0f + 0.1f);
  sgd.step(p, g, 0.1f);  // v = 0.5 g + g
  EXPECT_FLOAT_EQ(p[0], 0.95f - 0.075f);
  EXPECT_FLOAT_EQ(p[1], 2.1f + 0.15f);
  std::vector<float> wrong(3);
  EXPECT_THROW(sgd.step(wrong, g, 0.1f), std::invalid_argument);
}

}  // namespace
