// Data-parallel training of the MLP on Fashion-MNIST: every rank holds the whole data set and the same
// initial weights; each step every rank takes its shard of the same global batch, computes the gradient
// of its shard's mean loss, the Exchange synchronizes (averages the gradients through a codec, or the
// parameters every few steps), and every rank applies its SGD step.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exchange.hpp"
#include "idx.hpp"
#include "mlp.hpp"

namespace gwtrain {

// Per-pixel scaling of the images: (byte / 255 - mean) / std, mean and std over the training images.
struct Normalization {
  float mean = 0;
  float std = 1;
};
Normalization normalization_of(const Split& train);

// Where the training samples come from when they are not in Dataset::train (the data cache): fills
// `pixels` (count x pixels bytes) and `labels` (count) with the samples at `indices`; `next` (count
// indices, or NULL at the end of an epoch) is the batch the following call will ask for, so it can be
// fetched meanwhile. Every rank calls it once per step, so it may be collective.
using FetchSamples = std::function<void(const uint32_t* indices, const uint32_t* next, uint32_t count,
                                        std::vector<uint8_t>& pixels, std::vector<uint8_t>& labels)>;

struct TrainOptions {
  std::vector<uint32_t> hidden{256, 128};
  uint32_t epochs = 8;
  uint32_t batch = 128;        // global batch; each of n ranks takes batch / n samples of it (in elastic
                               // mode, after a change, rank r of n the samples [batch r / n, batch (r + 1) / n))
  float lr = 0.05f;            // peak learning rate, decayed along a cosine to 0 at the last step
  float momentum = 0.9f;
  uint64_t seed = 1;
  uint32_t evals_per_epoch = 4;
  uint32_t train_limit = 0;    // use only the first N training images (0: all)
  uint32_t test_limit = 0;     // evaluate on the first N test images (0: all)
  // A straggler: the rank (Exchange::rank()) that sleeps (slow_factor - 1) x its compute time per step.
  int64_t slow_rank = -1;
  float slow_factor = 1.0f;
  // Fault injection (elastic training, docs/elastic.md): the rank that SIGKILLs itself just before it
  // synchronizes step kill_step (-1: none).
  int64_t kill_rank = -1;
  int64_t kill_step = -1;
  // The data cache: the training batches come from fetch_train (Dataset::train then holds the sizes
  // only) and the images are scaled by `normalization` (computed over the whole training set).
  FetchSamples fetch_train;
  Normalization normalization;
};

// One evaluation of the test set during training.
struct CurvePoint {
  uint64_t step = 0;
  double epoch = 0;
  double seconds = 0;      // training wall time so far, evaluations excluded
  uint64_t bytes = 0;      // bytes this rank sent for gradient exchange so far
  uint64_t raw_bytes = 0;  // what uncompressed fp32 allreduce of the gradients every step would have sent
  double train_loss = 0;   // mean training loss since the previous point, over all ranks
  double test_loss = 0;
  double test_accuracy = 0;
};

struct TrainResult {
  std::vector<CurvePoint> curve;
  std::vector<float> parameters;  // the final weights
  // On a rank that holds the final model without training (Exchange::holds_final_model): its
  // evaluation on the whole test set (test_loss and test_accuracy set).
  bool has_final_model = false;
  CurvePoint final_model;
};


// Trains and returns the curve and final weights; `on_point` sees each evaluation as it happens
// (also on ranks other than 0). Throws std::invalid_argument for options that cannot work.
TrainResult train(const Dataset& data, const TrainOptions& options, Exchange& exchange,
                  const std::function<void(const CurvePoint&)>& on_point = {});

}  // namespace gwtrain
