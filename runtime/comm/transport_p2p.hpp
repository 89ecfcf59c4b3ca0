// A transport plugin instance seen through the PointToPoint interface: creates the instance from its
// [transport.<name>] section, hands out its address blob, connects to the gathered blobs, and turns
// the plugin's statuses and messages into gw::Error.
#pragma once

#include <gradwire/plugin.h>

#include <string>

#include "config/config.hpp"
#include "group/p2p.hpp"
#include "loader/registry.hpp"

namespace gw::comm {

class TransportP2P final : public PointToPoint {
 public:
  TransportP2P(ComponentRef ref, const config::Config& config, const gw_transport_init& init);
  ~TransportP2P() override;
  TransportP2P(const TransportP2P&) = delete;
  TransportP2P& operator=(const TransportP2P&) = delete;

  const std::string& name() const { return name_; }
  const gw_transport_vtable& vtable() const { return *vtable_; }
  void* instance() const { return instance_; }

  std::string local_address() const;
  // Connects to every rank's blob (index = rank), driving progress until the transport is ready or
  // `timeout_s` passes.
  void connect(const std::vector<std::string>& blobs, double timeout_s,
               const std::string& timeout_source = "[runtime] timeout_s");

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }
  Op* send(uint32_t peer, uint64_t tag, const void* data, uint64_t bytes) override;
  Op* recv(uint32_t peer, uint64_t tag, void* data, uint64_t bytes) override;
  bool test(Op* op, uint64_t* bytes) override;
  void free(Op* op) noexcept override;
  void progress() override;
  void abort() noexcept override;

 private:
  ComponentRef ref_;
  const gw_transport_vtable* vtable_;
  void* instance_ = nullptr;
  std::string name_;
  uint32_t rank_;
  uint32_t size_;
};

}  // namespace gw::comm
