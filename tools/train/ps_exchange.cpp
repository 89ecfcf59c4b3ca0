#include "ps_exchange.hpp"

namespace gwtrain {
namespace {

void check(gw_status status, const std::string& doing) {
  if (status < 0) throw GwError(status, doing + ": " + gw_last_error());
}

}  // namespace

PsExchange::PsExchange(gw_runtime* runtime, gw_ps_options options) : options_(options) {
  options_.runtime = runtime;
  gw_comm_options co = GW_COMM_OPTIONS_INIT;
  check(gw_comm_create(runtime, &co, &comm_), "cannot join the other ranks (gw_comm_create)");
  server_ = gw_comm_rank(comm_) < options_.servers;
}

PsExchange::~PsExchange() {
  if (ps_) gw_ps_destroy(ps_);
  gw_comm_destroy(comm_);
}

void PsExchange::attach(std::span<float> parameters, std::span<float> gradients, const std::vector<TensorInfo>&) {
  if (ps_) throw GwError(GW_ERR_STATE, "the model is already attached to the parameter server");
  gw_tensor p = GW_TENSOR_INIT;
  p.dtype = GW_DTYPE_F32;
  p.data = parameters.data();
  p.count = parameters.size();
  check(gw_ps_create(comm_, &options_, &p, &ps_), "gw_ps_create");
  gradients_ = gradients;
  if (server_) check(gw_ps_serve(ps_), "gw_ps_serve");
}

bool PsExchange::synchronize() {
  gw_tensor g = GW_TENSOR_INIT;
  g.dtype = GW_DTYPE_F32;
  g.data = gradients_.data();
  g.count = gradients_.size();
  check(gw_ps_push_pull(ps_, &g, lr_), "gw_ps_push_pull");
  raw_bytes_ += CommExchange::ring_allreduce_bytes(gradients_.size_bytes(), size());
  return false;  // the servers applied the update; the pulled parameters are in place
}

gw_ps_stats PsExchange::stats() const {
  gw_ps_stats s = GW_PS_STATS_INIT;
  if (ps_) check(gw_ps_get_stats(ps_, &s), "gw_ps_get_stats");
  return s;
}

uint64_t PsExchange::bytes_sent() const { return stats().wire_bytes; }

}  // namespace gwtrain
