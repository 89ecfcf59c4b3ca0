// The parameter server behind gw_ps (docs/ps.md): ranks 0 .. S-1 serve contiguous shards of the
// parameters and apply SGD with momentum; the other ranks are workers that push gradients through the
// runtime's codec (error feedback per shard) and pull parameters. Messages go over the communicator's
// point-to-point transport on tags of their own, so workers and servers never take part in a collective
// after creation and a worker never waits for another in asynchronous mode.
#pragma once

#include <gradwire/gradwire.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codec/codec.hpp"
#include "comm/communicator.hpp"
#include "ef/error_feedback.hpp"
#include "instance/runtime.hpp"

namespace gw::ps {

// The shard of server s: elements [begin, end) of the parameters.
struct Shard {
  uint64_t begin = 0, end = 0;
  uint64_t count() const { return end - begin; }
};
std::vector<Shard> shards_of(uint64_t count, uint32_t servers);

class ParameterServer {
 public:
  ParameterServer(comm::Communicator& comm, const Runtime& runtime, const gw_ps_options& options,
                  const gw_tensor& parameters);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  bool is_server() const { return rank_ < servers_; }
  uint32_t worker_index() const { return is_server() ? 0 : rank_ - servers_; }
  uint32_t workers() const { return size_ - servers_; }

  void push_pull(const gw_tensor& gradient, float lr);
  void serve();
  gw_ps_stats stats() const { return stats_; }
  // Worker: tells every server it finished (best effort). Called by gw_ps_destroy.
  void leave() noexcept;

 private:
  struct WorkerShard;  // a worker's state for one server
  struct Peer;         // a server's state for one worker

  [[noreturn]] void server_failed(uint32_t server, const std::string& why);
  void apply(std::vector<float>& gradient_sum, float scale, float lr, float momentum);
  void decode_push(const unsigned char* message, uint64_t bytes, std::vector<float>& out, uint32_t worker);
  void reply(uint32_t worker, bool dropped);

  comm::Communicator& comm_;
  comm::PointToPoint& p2p_;
  uint32_t rank_ = 0, size_ = 0, servers_ = 1;
  gw_ps_mode mode_ = GW_PS_SYNC;
  uint32_t staleness_ = 8;
  float momentum_ = 0.9f;
  double timeout_s_ = 300;
  float* parameters_ = nullptr;
  uint64_t count_ = 0;
  std::vector<Shard> shards_;
  std::unique_ptr<Codec> codec_;  // nullptr: "none", raw f32
  bool error_feedback_ = false;
  uint64_t seed_ = 0;
  gw_ps_stats stats_ = GW_PS_STATS_INIT;
  bool left_ = false;

  // worker
  std::vector<std::unique_ptr<WorkerShard>> worker_shards_;
  // server
  Shard mine_;
  std::vector<float> shard_, velocity_;
  uint64_t version_ = 0;
  float lookahead_ = 0;  // asynchronous: replies carry p - lookahead_ v (serve())
  std::vector<std::unique_ptr<Peer>> peers_;
};

}  // namespace gw::ps

struct gw_ps {
  std::unique_ptr<gw::ps::ParameterServer> impl;
};
