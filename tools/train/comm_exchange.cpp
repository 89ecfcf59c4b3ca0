#include "comm_exchange.hpp"

#include <cstdlib>
#include <string>

namespace gwtrain {
namespace {

void check(gw_status status, const std::string& doing) {
  if (status < 0) throw GwError(status, doing + ": " + gw_last_error());
}

gw_tensor f32(float* data, size_t count) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_F32;
  t.data = data;
  t.count = count;
  return t;
}

}  // namespace

CommExchange::CommExchange(gw_runtime* runtime, bool eval_comm, bool elastic) : runtime_(runtime), elastic_(elastic) {
  gw_comm_options options = GW_COMM_OPTIONS_INIT;
  // A process `gradwire run --elastic` started again (GW_ELASTIC_JOIN=1) joins the running job here.
  const char* join = std::getenv("GW_ELASTIC_JOIN");
  joined_ = elastic && join && std::string(join) == "1";
  if (eval_comm && elastic)
    throw GwError(GW_ERR_UNSUPPORTED, "elastic mode does not work with a second (evaluation) communicator");
  check(gw_comm_create(runtime, &options, &comm_), "cannot join the other ranks (gw_comm_create)");
  if (eval_comm) {
    // The second communicator of this process meets on the same launcher variables (docs/bootstrap.md:
    // every rank creates its communicators in the same order).
    check(gw_comm_create(runtime, &options, &eval_comm_), "the evaluation communicator (gw_comm_create)");
  }
}

CommExchange::~CommExchange() {
  if (sync_) gw_sync_destroy(sync_);
  if (eval_comm_) gw_comm_destroy(eval_comm_);
  gw_comm_destroy(comm_);
}

uint64_t CommExchange::ring_allreduce_bytes(uint64_t bytes, uint32_t ranks) {
  return ranks <= 1 ? 0 : 2 * (ranks - 1) * bytes / ranks;
}

void CommExchange::attach(std::span<float> parameters, std::span<float> gradients,
                          const std::vector<TensorInfo>& tensors) {
  if (sync_) throw GwError(GW_ERR_STATE, "the model is already attached to the synchronizer");
  gw_sync_options o = GW_SYNC_OPTIONS_INIT;
  o.runtime = runtime_;
  check(gw_sync_create(comm_, &o, &sync_), "cannot create the synchronizer (gw_sync_create)");
  for (const auto& t : tensors) {
    const gw_tensor g = f32(gradients.data() + t.offset, t.count());
    const gw_tensor p = f32(parameters.data() + t.offset, t.count());
    check(gw_sync_register(sync_, t.name.c_str(), &g, &p), "gw_sync_register " + t.name);
    if (t.cols > 1) {  // weight matrices: their shape, for codecs that work on matrices (powersgd)
      const int64_t dims[2] = {int64_t(t.rows), int64_t(t.cols)};
      check(gw_sync_register_shape(sync_, t.name.c_str(), 2, dims), "gw_sync_register_shape " + t.name);
    }
  }
  check(gw_sync_finalize(sync_), "gw_sync_finalize");
  gradient_bytes_ = gradients.size_bytes();
  start_step_ = stats().steps;  // a joiner: the members' step (its finalize received their state)
}

bool CommExchange::synchronize() {
  if (!sync_) throw GwError(GW_ERR_STATE, "synchronize before attach");
  uint32_t flags = 0;
  changed_.reset();
  const gw_status st = gw_sync_step(sync_, &flags);
  if (st == GW_MEMBERSHIP_CHANGED) {  // the step was discarded: continue from the agreed one
    changed_ = stats().steps;
    return false;
  }
  check(st, "gw_sync_step");
  raw_bytes_ += ring_allreduce_bytes(gradient_bytes_, size());
  return (flags & GW_SYNC_APPLY) != 0;
}

gw_sync_stats CommExchange::stats() const {
  gw_sync_stats s = GW_SYNC_STATS_INIT;
  if (sync_) check(gw_sync_get_stats(sync_, GW_SYNC_ALL_BUCKETS, &s), "gw_sync_get_stats");
  return s;
}

uint64_t CommExchange::bytes_sent() const { return stats().wire_bytes; }

std::string CommExchange::describe_buckets() const {
  std::string out;
  uint32_t n = 0;
  if (!sync_) return out;
  check(gw_sync_bucket_count(sync_, &n), "gw_sync_bucket_count");
  for (uint32_t b = 0; b < n; ++b) {
    gw_sync_bucket_info info = GW_SYNC_BUCKET_INFO_INIT;
    check(gw_sync_get_bucket_info(sync_, b, &info), "gw_sync_get_bucket_info");
    out += (out.empty() ? "" : ", ") + std::string(info.codec) + " (" + std::to_string(info.num_tensors) + " tensors, " +
           std::to_string(info.count) + " f32)";
  }
  return out;
}

void CommExchange::share_state(std::span<float> state) {
  gw_tensor t = f32(state.data(), state.size());
  check(gw_broadcast(comm_, &t, 0), "sharing the optimizer state (gw_broadcast)");
}

void CommExchange::sum(std::span<double> values) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_F64;
  t.data = values.data();
  t.count = values.size();
  check(gw_allreduce(eval_comm_ ? eval_comm_ : comm_, &t, &t, GW_REDUCE_SUM), "evaluation allreduce");
}

}  // namespace gwtrain
