// The model exchange through libgradwire's parameter server (gw_ps, docs/ps.md), as a user's trainer
// would call it: ranks 0 .. servers-1 serve (attach runs gw_ps_serve until every worker finished), the
// others are workers whose every step is one gw_ps_push_pull with the step's learning rate; the servers
// apply SGD with momentum, so the worker's own optimizer does not run.
#pragma once

#include <gradwire/gradwire.h>

#include "comm_exchange.hpp"

namespace gwtrain {

class PsExchange final : public Exchange {
 public:
  // Joins the other ranks; `options` gives servers, mode, staleness and momentum (runtime is set here).
  PsExchange(gw_runtime* runtime, gw_ps_options options);
  ~PsExchange() override;
  PsExchange(const PsExchange&) = delete;
  PsExchange& operator=(const PsExchange&) = delete;

  // Workers are numbered 0 .. workers-1 for the batch shards; a server reports 0 of 1.
  uint32_t rank() const override { return server_ ? 0 : gw_comm_rank(comm_) - options_.servers; }
  uint32_t size() const override { return server_ ? 1 : gw_comm_size(comm_) - options_.servers; }
  bool trains() const override { return !server_; }
  // gw_ps_serve leaves a server's shard final in its tensor: with one server, the whole model.
  bool holds_final_model() const override { return server_ && options_.servers == 1; }
  // The first worker evaluates the whole test set on its pulled parameters; the others do not evaluate.
  bool evaluates() const override { return !server_ && rank() == 0; }
  uint32_t eval_rank() const override { return 0; }
  uint32_t eval_ranks() const override { return 1; }
  void learning_rate(float lr) override { lr_ = lr; }
  void attach(std::span<float> parameters, std::span<float> gradients, const std::vector<TensorInfo>& tensors) override;
  bool synchronize() override;
  void sum(std::span<double>) override {}
  uint64_t bytes_sent() const override;
  uint64_t raw_bytes() const override { return raw_bytes_; }

  bool server() const { return server_; }
  gw_ps_stats stats() const;

 private:
  gw_comm* comm_ = nullptr;
  gw_ps* ps_ = nullptr;
  gw_ps_options options_;
  bool server_ = false;
  float lr_ = 0;
  std::span<float> gradients_;
  uint64_t raw_bytes_ = 0;
};

}  // namespace gwtrain
