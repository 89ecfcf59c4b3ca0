// The model exchange through libgradwire's C ABI, as a user's trainer would call it: a communicator over
// the ranks `gradwire run` started and a synchronizer (gw_sync) with the model's tensors registered by
// name (gradient and parameter each); every step is one gw_sync_step, which runs the configured codec,
// error feedback and schedule. Bytes on the wire come from gw_sync_get_stats.
#pragma once

#include <gradwire/gradwire.h>

#include <stdexcept>
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
  // Joins the other ranks (rank, world size and root address from the launcher's environment). The
  // synchronizer reads codec, error feedback, buckets, rules and schedule from `runtime`'s configuration.
  // With `eval_comm` the evaluation counters get a communicator of their own (a schedule that exchanges
  // in the background drives the synchronizer's communicator between steps).
  // `elastic`: the runtime has [elastic] enabled (docs/elastic.md): synchronize() reports membership
  // changes, and a process started with GW_ELASTIC_JOIN=1 joins the running job.
  explicit CommExchange(gw_runtime* runtime, bool eval_comm = false, bool elastic = false);
  ~CommExchange() override;
  CommExchange(const CommExchange&) = delete;
  CommExchange& operator=(const CommExchange&) = delete;

  uint32_t rank() const override { return gw_comm_rank(comm_); }
  uint32_t size() const override { return gw_comm_size(comm_); }
  void attach(std::span<float> parameters, std::span<float> gradients, const std::vector<TensorInfo>& tensors) override;
  bool synchronize() override;
  // The evaluation counters go through the synchronizer's communicator between steps: the configurations
  // of `gradwire train` use synchronous schedules only, so no exchange is in flight then.
  void sum(std::span<double> values) override;
  uint64_t bytes_sent() const override;
  uint64_t raw_bytes() const override { return raw_bytes_; }
  bool elastic() const override { return elastic_; }
  std::optional<uint64_t> membership_changed() const override { return changed_; }
  uint64_t start_step() const override { return start_step_; }
  bool joined() const override { return joined_; }
  void share_state(std::span<float> state) override;

  // The synchronizer's accounting over all buckets (zeros before attach).
  gw_sync_stats stats() const;
  // "int8 x1 (235146 f32), none x1 (10 f32)": the buckets gw_sync_finalize made.
  std::string describe_buckets() const;

  // What a ring allreduce of `bytes` sends from each of `ranks` ranks: 2 (n - 1) / n of the buffer.
  static uint64_t ring_allreduce_bytes(uint64_t bytes, uint32_t ranks);

 private:
  gw_runtime* runtime_ = nullptr;
  gw_comm* comm_ = nullptr;
  gw_sync* sync_ = nullptr;
  gw_comm* eval_comm_ = nullptr;
  uint64_t gradient_bytes_ = 0;
  uint64_t raw_bytes_ = 0;
  bool elastic_ = false;
  bool joined_ = false;
  uint64_t start_step_ = 0;
  std::optional<uint64_t> changed_;
};

}  // namespace gwtrain
