// How ranks agree on the model: the hook the trainer calls between the backward pass and the optimizer
// step. SingleRank does nothing; CommExchange (comm_exchange.hpp) goes through libgradwire's synchronizer.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "mlp.hpp"

namespace gwtrain {

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;
  // Called once before the first step with the model's buffers (all tensors back to back, as `tensors`
  // describes); they stay valid for the whole training.
  virtual void attach(std::span<float> parameters, std::span<float> gradients, const std::vector<TensorInfo>& tensors) = 0;
  // Called every step after the backward pass: on return the gradients (and, for schedules that average
  // them, the parameters) are what the optimizer should see. Returns whether the optimizer applies the
  // gradients this step.
  virtual bool synchronize() = 0;
  // Whether this rank trains at all (a parameter server's server ranks serve inside attach instead).
  virtual bool trains() const { return true; }
  // Whether this rank, which does not train, holds the whole final model once attach returns (a
  // parameter server's only server rank): the trainer then evaluates that model.
  virtual bool holds_final_model() const { return false; }
  // Whether this rank evaluates, and its share of the test set (eval_rank of eval_ranks).
  virtual bool evaluates() const { return true; }
  virtual uint32_t eval_rank() const { return rank(); }
  virtual uint32_t eval_ranks() const { return size(); }
  // The learning rate of the coming step (a parameter server applies it itself).
  virtual void learning_rate(float) {}
  // Sums evaluation counters over all ranks, in place (between steps).
  virtual void sum(std::span<double> values) = 0;
  // Bytes this rank has sent for the model so far, and what an uncompressed fp32 ring allreduce of the
  // gradients at every step would have sent by now (the baseline of the compression ratio).
  virtual uint64_t bytes_sent() const = 0;
  virtual uint64_t raw_bytes() const = 0;

  // Elastic membership (docs/elastic.md), where the exchange supports it:
  // whether a failure or a joiner may change the membership during synchronize().
  virtual bool elastic() const { return false; }
  // After synchronize(): the step to continue from when the membership changed during it (the step was
  // discarded, the parameters are those at the start of that step, rank() and size() may differ); the
  // trainer puts its optimizer state back to that step, shares it (share_state) and computes the step again.
  virtual std::optional<uint64_t> membership_changed() const { return std::nullopt; }
  // The step this rank starts at: 0, or for a process that joined a running job the members' step (it
  // then calls share_state once before its first step, as the members do after the change).
  virtual uint64_t start_step() const { return 0; }
  virtual bool joined() const { return false; }
  // Makes `state` (the optimizer's momentum) rank 0's on every rank. Collective.
  virtual void share_state(std::span<float>) {}
};

// One rank: nothing to exchange.
class SingleRank final : public Exchange {
 public:
  uint32_t rank() const override { return 0; }
  uint32_t size() const override { return 1; }
  void attach(std::span<float>, std::span<float>, const std::vector<TensorInfo>&) override {}
  bool synchronize() override { return true; }
  void sum(std::span<double>) override {}
  uint64_t bytes_sent() const override { return 0; }
  uint64_t raw_bytes() const override { return 0; }
};

}  // namespace gwtrain
