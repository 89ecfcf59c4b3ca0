// How ranks agree on a gradient: the one hook the trainer calls between the backward pass and the
// optimizer step. SingleRank is the identity; CommExchange (comm_exchange.hpp) goes through libgradwire.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mlp.hpp"

namespace gwtrain {

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;
  // The gradient-averaging hook, called once per step before the optimizer step: on return every rank's
  // `gradients` (all tensors back to back, as `tensors` describes) holds the same average over all ranks.
  virtual void average_gradients(std::span<float> gradients, const std::vector<TensorInfo>& tensors,
                                 uint64_t step) = 0;
  // Sums evaluation counters over all ranks, in place.
  virtual void sum(std::span<double> values) = 0;
  // Bytes this rank has sent for gradient exchange so far, and what uncompressed fp32 would have sent.
  virtual uint64_t bytes_sent() const = 0;
  virtual uint64_t raw_bytes() const = 0;
};

// One rank: nothing to exchange.
class SingleRank final : public Exchange {
 public:
  uint32_t rank() const override { return 0; }
  uint32_t size() const override { return 1; }
  void average_gradients(std::span<float>, const std::vector<TensorInfo>&, uint64_t) override {}
  void sum(std::span<double>) override {}
  uint64_t bytes_sent() const override { return 0; }
  uint64_t raw_bytes() const override { return 0; }
};

}  // namespace gwtrain
