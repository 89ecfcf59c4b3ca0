// The outer loop of DiLoCo (docs/diloco.md), driven by a schedule through start_outer_step and
// finish_outer_step (gw_schedule_runtime, ABI 1.4):
//
// - Each bucket keeps an anchor: its parameters at the last outer step, the same on every rank. The first
//   outer step of a bucket has none; it averages the parameters densely and makes that the anchor.
// - Later ones average the pseudo-gradient through the bucket's codec, with the parameter error feedback
//   (what the codec lost is added to the next one): d = parameters - anchor, averaged over the ranks to
//   d̄. The outer optimizer is SGD with momentum on g = -d̄:  v = m v + g;  anchor -= lr (g + m v) with
//   Nesterov's momentum, anchor -= lr v without. With lr 1 and m 0 it is plain model averaging.
// - The parameters become the new anchor plus what they moved locally since the exchange started, so an
//   exchange started in an earlier step (streaming: a fragment's exchange overlapped with the inner steps
//   that follow it) keeps those steps' work. Started and finished in one step, they are the anchor.
// - The buckets split into `fragments` contiguous runs (bucket b is in fragment b * F / B): a schedule
//   can sync them at staggered steps, with one fragment's exchange in flight while others compute.
#include <cmath>
#include <cstring>

#include "codec/staging.hpp"
#include "collectives/algorithms.hpp"
#include "sync/synchronizer.hpp"

namespace gw::sync {

namespace {

void run_blocking(comm::Communicator& comm, gw_request* r, const std::string& what) {
  const gw_status st = comm.wait(r, -1.0);
  const std::string error = r->error;
  comm.free(r);
  if (st != GW_OK) fail(st, what + ": " + error);
}

uint64_t fnv1a(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace

std::vector<uint32_t> Synchronizer::fragment_buckets(const gw_outer_step* step, const char* what) const {
  const std::string who = "schedule '" + schedule_->name() + "': " + what;
  if (step == nullptr) fail(GW_ERR_INVALID_ARGUMENT, who + ": the gw_outer_step is NULL");
  if (step->struct_size < sizeof(gw_outer_step))
    fail(GW_ERR_INVALID_ARGUMENT, who + ": gw_outer_step.struct_size is " + std::to_string(step->struct_size) +
                                      ", smaller than this gradwire's " + std::to_string(sizeof(gw_outer_step)));
  const uint32_t n = uint32_t(buckets_.size());
  if (step->fragments == 0 || step->fragments > n)
    fail(GW_ERR_INVALID_ARGUMENT,
         who + ": " + std::to_string(step->fragments) + " fragments, but the parameters fill " + std::to_string(n) +
             " bucket(s) and a fragment is at least one bucket; use at most " + std::to_string(n) +
             " fragments, or smaller buckets ([bucket] bytes)");
  if (step->fragment >= step->fragments)
    fail(GW_ERR_INVALID_ARGUMENT, who + ": fragment " + std::to_string(step->fragment) + " of " +
                                      std::to_string(step->fragments) + " does not exist");
  std::vector<uint32_t> out;
  for (uint32_t b = 0; b < n; ++b)
    if (uint64_t(b) * step->fragments / n == step->fragment) out.push_back(b);
  return out;
}

void Synchronizer::do_start_outer(StepContext&, const gw_outer_step* step) {
  const std::vector<uint32_t> list = fragment_buckets(step, "start_outer_step");
  for (const TensorEntry& t : tensors_)
    if (!t.parameter)
      fail(GW_ERR_STATE, "schedule '" + schedule_->name() + "' runs outer steps on the parameters, but tensor '" +
                             t.name + "' was registered without one; pass its parameter to gw_sync_register");
  if (outer_.count(step->fragment))
    fail(GW_ERR_STATE, "schedule '" + schedule_->name() + "' started the outer step of fragment " +
                           std::to_string(step->fragment) + " while the previous one is in flight; finish it first");
  OuterFlight f;
  f.step = steps_;
  f.buckets = list;
  for (uint32_t bucket : list) {
    Bucket& b = buckets_[bucket];
    auto e = std::make_unique<Exchange>();
    e->data.resize(b.count);
    float* x = e->data.data();
    for (uint32_t i : b.tensors) {
      const TensorEntry& t = tensors_[i];
      staging::read_f32(*t.parameter, x + t.offset);
    }
    f.sent.push_back(e->data);
    const bool first = b.anchor.empty();
    if (!first)
      for (uint64_t i = 0; i < b.count; ++i) x[i] -= b.anchor[i];
    e->started = std::chrono::steady_clock::now();
    const bool compressed = !first && b.codec != nullptr;
    start_average(bucket, compressed, compressed ? b.parameter_ef.get() : nullptr, x, *e, std::nullopt);
    if (compressed) ++b.exchanges;
    f.first.push_back(first ? 1 : 0);
    f.exchanges.push_back(std::move(e));
  }
  outer_.emplace(step->fragment, std::move(f));
}

void Synchronizer::do_finish_outer(StepContext& ctx, const gw_outer_step* step) {
  fragment_buckets(step, "finish_outer_step");
  auto it = outer_.find(step->fragment);
  if (it == outer_.end())
    fail(GW_ERR_STATE, "schedule '" + schedule_->name() + "' finished the outer step of fragment " +
                           std::to_string(step->fragment) + ", which is not in flight (start it first)");
  const std::string who = "schedule '" + schedule_->name() + "': finish_outer_step: ";
  if (!std::isfinite(step->lr) || step->lr < 0)
    fail(GW_ERR_INVALID_ARGUMENT, who + "the outer learning rate " + std::to_string(step->lr) + " is not >= 0");
  if (!(step->momentum >= 0 && step->momentum < 1))
    fail(GW_ERR_INVALID_ARGUMENT, who + "the outer momentum " + std::to_string(step->momentum) + " is not in [0, 1)");
  OuterFlight& f = it->second;
  const float lr = float(step->lr), m = float(step->momentum);
  const bool same_step = f.step == steps_;
  for (size_t k = 0; k < f.buckets.size(); ++k) {
    const uint32_t bucket = f.buckets[k];
    Bucket& b = buckets_[bucket];
    Exchange& e = *f.exchanges[k];
    finish(bucket, e);
    const float* d = e.data.data();
    if (f.first[k]) {
      b.anchor = e.data;  // the dense average of the parameters
    } else {
      b.outer_velocity.resize(b.count, 0.0f);
      float* v = b.outer_velocity.data();
      float* a = b.anchor.data();
      for (uint64_t i = 0; i < b.count; ++i) {
        const float g = -d[i];
        v[i] = m * v[i] + g;
        a[i] -= lr * (step->nesterov ? g + m * v[i] : v[i]);
      }
    }
    std::vector<float> out = b.anchor;
    if (!same_step) {
      // The local progress since the exchange started is kept on top of the new anchor.
      std::vector<float> now(b.count);
      for (uint32_t i : b.tensors) {
        const TensorEntry& t = tensors_[i];
        staging::read_f32(*t.parameter, now.data() + t.offset);
      }
      const float* s = f.sent[k].data();
      for (uint64_t i = 0; i < b.count; ++i) out[i] += now[i] - s[i];
    }
    for (uint32_t i : b.tensors) {
      const TensorEntry& t = tensors_[i];
      staging::write_f32(out.data() + t.offset, *t.parameter);
    }
  }
  outer_.erase(it);
  ctx.flags |= GW_SYNC_OUTER_STEP;
}

// Ranks that configured their schedule differently (another [schedule.diloco] inner_steps, say) would
// run different collectives at different steps: a hang, or a silent mix. Their states at the start are
// the schedule's configuration and zeroed counters: every rank compares a hash of its own with rank 0's.
void Synchronizer::check_schedules_alike() {
  const uint32_t n = comm_->size();
  if (n < 2) return;
  const std::vector<unsigned char> state = schedule_->save();
  std::vector<uint64_t> hashes(n);
  hashes[comm_->rank()] = fnv1a(state.data(), state.size());
  const coll::Blocks blocks = coll::blocks_of(std::vector<uint64_t>(n, 8), 1);
  void* buf = hashes.data();
  const comm::Signature s{comm::CollectiveKind::Allgather, GW_REDUCE_SUM, GW_DTYPE_U8, 8, 0, 0};
  run_blocking(*comm_, comm_->start_collective(s, [=](comm::Collective& c) { return coll::allgatherv_ring(c, buf, blocks); }),
               "gw_sync_finalize: comparing the ranks' schedules");
  for (uint32_t r = 1; r < n; ++r)
    if (hashes[r] != hashes[0])
      fail(GW_ERR_MISMATCH, "gw_sync_finalize: rank " + std::to_string(r) + " configured schedule '" +
                                schedule_->name() + "' differently from rank 0 (its [schedule." + schedule_->name() +
                                "] keys, or its state at the start); every rank must use the same schedule settings");
}

}  // namespace gw::sync
