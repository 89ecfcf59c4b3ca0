#include <gtest/gtest.h>

#include "trainer.hpp"

namespace {

const gwtrain::Dataset& fashion_mnist() {
  static const gwtrain::Dataset data = gwtrain::load_fashion_mnist(gwtrain::kDefaultDataDir);
  return data;
}

gwtrain::TrainOptions small_run() {
  gwtrain::TrainOptions o;
  o.hidden = {64, 32};
  o.epochs = 2;
  o.batch = 64;
  o.lr = 0.05f;
  o.evals_per_epoch = 2;
  o.train_limit = 3000;
  o.test_limit = 1000;
  return o;
}

TEST(Trainer, SameSeedGivesTheSameWeights) {
  gwtrain::SingleRank one;
  auto o = small_run();
  o.epochs = 1;
  const auto a = gwtrain::train(fashion_mnist(), o, one);
  const auto b = gwtrain::train(fashion_mnist(), o, one);
  ASSERT_EQ(a.parameters.size(), b.parameters.size());
  EXPECT_TRUE(a.parameters == b.parameters);
  o.seed = 2;
  const auto c = gwtrain::train(fashion_mnist(), o, one);
  EXPECT_FALSE(a.parameters == c.parameters);
}

TEST(Trainer, ShortRunOnRealDataLearns) {
  gwtrain::SingleRank one;
  std::vector<gwtrain::CurvePoint> seen;
  const auto r = gwtrain::train(fashion_mnist(), small_run(), one, [&](const auto& p) { seen.push_back(p); });
  ASSERT_EQ(r.curve.size(), 4u);  // 2 epochs x 2 evaluations
  EXPECT_EQ(seen.size(), r.curve.size());
  EXPECT_EQ(r.curve.back().step, 2u * (3000 / 64));
  EXPECT_DOUBLE_EQ(r.curve.back().epoch, 2.0);
  // 3000 images, 2 epochs: well above chance (0.1); a full run reaches 0.88.
  EXPECT_GE(r.curve.back().test_accuracy, 0.75);
  EXPECT_LT(r.curve.back().train_loss, r.curve.front().train_loss);
  EXPECT_EQ(r.curve.back().bytes, 0u);  // one rank sends nothing
}

TEST(Trainer, RejectsOptionsThatCannotWork) {
  gwtrain::SingleRank one;
  auto o = small_run();
  o.batch = 5000;  // more than the 3000 images
  EXPECT_THROW(gwtrain::train(fashion_mnist(), o, one), std::invalid_argument);
  o = small_run();
  o.lr = 0;
  EXPECT_THROW(gwtrain::train(fashion_mnist(), o, one), std::invalid_argument);
}

TEST(Trainer, NormalizationMatchesTheData) {
  gwtrain::Split s;
  s.images = {0, 255, 0, 255};
  const auto n = gwtrain::normalization_of(s);
  EXPECT_FLOAT_EQ(n.mean, 0.5f);
  EXPECT_FLOAT_EQ(n.std, 0.5f);
}

}  // namespace
