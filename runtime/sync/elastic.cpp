// The synchronizer's part of elastic mode (docs/elastic.md): a snapshot of the parameters and of the
// state at the start of each step (the last two kept), and the recovery after a failed step.
#include "codec/staging.hpp"
#include "collectives/algorithms.hpp"
#include "comm/elastic.hpp"
#include "core/error.hpp"
#include "sync/synchronizer.hpp"

namespace gw::sync {

void Synchronizer::snapshot() {
  require_finalized("gw_sync_step");
  if (!slots_.empty() || !outer_.empty())
    fail(GW_ERR_UNSUPPORTED, "[elastic] enabled: the schedule keeps exchanges in flight across steps (async, "
                             "streaming outer steps); elastic mode supports schedules whose exchanges finish within "
                             "the step (every_step, accumulate, local_sgd): docs/elastic.md");
  for (const Bucket& b : buckets_)
    if (b.early)
      fail(GW_ERR_UNSUPPORTED, "[elastic] enabled: gw_sync_bucket_ready is not supported in elastic mode (the "
                               "step's snapshot is taken when gw_sync_step begins); call gw_sync_step alone");
  Snapshot s;
  if (snapshots_.size() == 2) {  // reuse the oldest one's memory
    s = std::move(snapshots_[1]);
    snapshots_.pop_back();
  }
  s.steps = steps_;
  s.state = save_state();
  s.parameters.resize(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const gw_tensor& p = *tensors_[i].parameter;
    s.parameters[i].resize(p.count);
    staging::read_f32(p, s.parameters[i].data());
  }
  snapshots_.insert(snapshots_.begin(), std::move(s));
}

void Synchronizer::recover(gw_comm& handle, gw_status status, const std::string& message) {
  if (snapshots_.empty()) fail(status, message);
  // The failed step's exchanges: their collectives failed with the communicator.
  for (Bucket& b : buckets_)
    if (b.early) {
      if (b.early->request) comm_->free(b.early->request);
      b.early.reset();
    }
  for (auto& [slot, exchanges] : slots_)
    for (auto& e : exchanges)
      if (e && e->request) comm_->free(e->request), e->request = nullptr;
  // DiLoCo's outer exchange of the failed step (delay 0: started and finished within it) too: its requests
  // belong to the failed communicator, which the agreement replaces.
  for (auto& [fragment, flight] : outer_)
    for (auto& e : flight.exchanges)
      if (e && e->request) comm_->free(e->request), e->request = nullptr;
  const comm::Agreed agreed = comm::agree(handle, runtime_, snapshots_.front().steps, status, message);
  after_agreement(handle, agreed);
}

namespace {

void broadcast_bytes(comm::Communicator& c, void* buf, uint64_t bytes) {
  if (bytes == 0) return;
  const comm::Signature s{comm::CollectiveKind::Broadcast, GW_REDUCE_SUM, GW_DTYPE_U8, bytes, 0, 0};
  gw_request* r = c.start_collective(s, [=](comm::Collective& col) { return coll::broadcast_binomial(col, buf, bytes, 0); });
  const gw_status st = c.wait(r, -1.0);
  const std::string error = r->error;
  c.free(r);
  if (st != GW_OK) fail(st, "elastic: sending the state to the joiners failed: " + error);
}

}  // namespace

void Synchronizer::transfer_state(bool receiving) {
  std::vector<unsigned char> blob;
  if (comm_->rank() == 0) blob = save_state();
  uint64_t size = blob.size();
  broadcast_bytes(*comm_, &size, 8);
  blob.resize(size);
  broadcast_bytes(*comm_, blob.data(), size);
  std::vector<float> values;
  for (const TensorEntry& t : tensors_) {
    const gw_tensor& p = *t.parameter;
    values.resize(p.count);
    if (comm_->rank() == 0) staging::read_f32(p, values.data());
    broadcast_bytes(*comm_, values.data(), 4 * p.count);
    if (receiving) staging::write_f32(values.data(), p);
  }
  if (!receiving) return;
  load_state(blob.data(), blob.size());
  // Another rank's residual is that rank's unsent gradient: counted twice if copied. Start from zero.
  reset_residuals();
}

// The compressed allreduce keys a bucket's residuals by the pieces this rank encodes, and the pieces
// depend on the number of ranks: after a membership change the old residuals fit no piece. Every member
// starts from zero (docs/elastic.md).
void Synchronizer::reset_residuals() {
  for (Bucket& b : buckets_) {
    if (b.ef) b.ef->reset();
    if (b.parameter_ef) b.parameter_ef->reset();
  }
}

bool Synchronizer::admit(gw_comm& handle) {
  std::vector<bootstrap::Joiner> joiners;
  if (comm::announce_joiners(handle, runtime_, plan().exchanges, &joiners) == 0) return false;
  // A member may have failed meanwhile: the agreement is the same as after a failure, with the joiners.
  const comm::Agreed agreed = comm::agree(handle, runtime_, snapshots_.front().steps, GW_ERR_TRANSPORT,
                                          "elastic: admitting joiners", std::move(joiners));
  after_agreement(handle, agreed);
  return true;
}

// Every member, whatever brought it to the agreement (its step failed, or joiners were announced), does
// the same from here, and a joiner's gw_sync_finalize the same collectives in the same order.
void Synchronizer::after_agreement(gw_comm& handle, const comm::Agreed& agreed) {
  comm_ = handle.impl.get();
  plan_.reset();
  const Snapshot* chosen = nullptr;
  for (const Snapshot& s : snapshots_)
    if (s.steps == agreed.steps) chosen = &s;
  if (chosen == nullptr)
    fail(GW_ERR_STATE, "elastic: the members agreed to continue from step " + std::to_string(agreed.steps) +
                           " but this rank kept only the snapshots of steps " + std::to_string(snapshots_.front().steps) +
                           (snapshots_.size() > 1 ? " and " + std::to_string(snapshots_.back().steps) : std::string()) +
                           " (a member more than one step behind: please report it)");
  load_state(chosen->state.data(), chosen->state.size());
  for (size_t i = 0; i < tensors_.size(); ++i) staging::write_f32(chosen->parameters[i].data(), *tensors_[i].parameter);
  Snapshot keep = std::move(const_cast<Snapshot&>(*chosen));
  snapshots_.clear();
  snapshots_.push_back(std::move(keep));
  reset_residuals();
  if (agreed.joiners > 0) check_registrations();
  seq_base_ = comm_->reserve_sequence(uint32_t(buckets_.size()));
  if (agreed.joiners > 0) transfer_state(false);
}

}  // namespace gw::sync
