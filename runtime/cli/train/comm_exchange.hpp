// The gradient exchange through libgradwire's C ABI, as a user's trainer would call it: a communicator
// over the ranks `gradwire run` started, and an allreduce (average) of the one gradient buffer per step.
#pragma once

#include <gradwire/gradwire.h>

#include <string>

#include "exchange.hpp"

namespace gwtrain {

// A failed gradwire call: its status and gw_last_error().
struct GwError : std::runtime_error {
  GwError(gw_status s, const std::string& what) : std::runtime_error(what), status(s) {}
  gw_status status;
};

class CommExchange final : public Exchange {
 public:
  // Joins the other ranks (rank, world size and root address from the launcher's environment).
  explicit CommExchange(gw_runtime* runtime);
  ~CommExchange() override;
  CommExchange(const CommExchange&) = delete;
  CommExchange& operator=(const CommExchange&) = delete;

  uint32_t rank() const override { return gw_comm_rank(comm_); }
  uint32_t size() const override { return gw_comm_size(comm_); }
  void average_gradients(std::span<float> gradients, const std::vector<TensorInfo>& tensors, uint64_t step) override;
  void sum(std::span<double> values) override;
  uint64_t bytes_sent() const override { return bytes_sent_; }
  uint64_t raw_bytes() const override { return raw_bytes_; }

  // What a ring allreduce of `bytes` sends from each of `ranks` ranks: 2 (n - 1) / n of the buffer.
  static uint64_t ring_allreduce_bytes(uint64_t bytes, uint32_t ranks);

 private:
  gw_comm* comm_ = nullptr;
  uint64_t bytes_sent_ = 0;
  uint64_t raw_bytes_ = 0;
};

}  // namespace gwtrain
