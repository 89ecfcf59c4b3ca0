#include "comm_exchange.hpp"

namespace gwtrain {
namespace {

void check(gw_status status, const char* doing) {
  if (status < 0) throw GwError(status, std::string(doing) + ": " + gw_last_error());
}

}  // namespace

CommExchange::CommExchange(gw_runtime* runtime) {
  gw_comm_options options = GW_COMM_OPTIONS_INIT;
  check(gw_comm_create(runtime, &options, &comm_), "cannot join the other ranks (gw_comm_create)");
}

CommExchange::~CommExchange() { gw_comm_destroy(comm_); }

uint64_t CommExchange::ring_allreduce_bytes(uint64_t bytes, uint32_t ranks) {
  return ranks <= 1 ? 0 : 2 * (ranks - 1) * bytes / ranks;
}

void CommExchange::average_gradients(std::span<float> gradients, const std::vector<TensorInfo>&, uint64_t) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_F32;
  t.data = gradients.data();
  t.count = gradients.size();
  check(gw_allreduce(comm_, &t, &t, GW_REDUCE_AVG), "gradient allreduce");
  const uint64_t volume = ring_allreduce_bytes(gradients.size_bytes(), size());
  bytes_sent_ += volume;
  raw_bytes_ += volume;
}

void CommExchange::sum(std::span<double> values) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_F64;
  t.data = values.data();
  t.count = values.size();
  check(gw_allreduce(comm_, &t, &t, GW_REDUCE_SUM), "evaluation allreduce");
}

}  // namespace gwtrain
