// The synchronizer behind gw_sync: registered tensors fused into buckets, each bucket with its codec and
// error feedback, and the runtime side of the schedule (gw_schedule_runtime) that averages gradients,
// accumulates micro-steps, averages parameters or exchanges in the background. docs/sync.md.
#pragma once

#include <gradwire/gradwire.h>
#include <gradwire/plugin.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "codec/codec.hpp"
#include "codec/device.hpp"
#include "collectives/compressed.hpp"
#include "comm/communicator.hpp"
#include "comm/elastic.hpp"
#include "core/error.hpp"
#include "ef/error_feedback.hpp"
#include "instance/runtime.hpp"
#include "sync/auto_codec.hpp"
#include "sync/schedule.hpp"

namespace gw::sync {

struct Rule {
  std::string match;
  uint64_t max_bytes = 0;  // 0: any size
  std::string codec;
};

struct TensorEntry {
  std::string name;
  gw_tensor gradient = GW_TENSOR_INIT;
  std::optional<gw_tensor> parameter;
  std::string codec;
  uint32_t bucket = 0;
  uint64_t offset = 0;  // in the bucket, elements
  // gw_sync_register_shape: the 2-D view rows x cols (dims[0] x the rest); none: a vector.
  std::optional<std::pair<uint64_t, uint64_t>> shape;
};

// `*` matches any run of characters, `?` one character.
bool glob_match(const std::string& pattern, const std::string& name);
// The codec of a tensor: the first rule whose glob and size match, else `fallback`.
std::string codec_for(const std::vector<Rule>& rules, const std::string& name, uint64_t bytes,
                      const std::string& fallback);
// Buckets in registration order: each codec has one open bucket that a tensor joins while the bucket is
// empty or stays within `bucket_bytes`; otherwise the tensor opens a new one. Sets each tensor's bucket
// and offset; returns the buckets' tensor indices.
std::vector<std::vector<uint32_t>> assign_buckets(std::vector<TensorEntry>& tensors, uint64_t bucket_bytes);

struct Accounting {
  uint64_t raw_bytes = 0;
  uint64_t wire_bytes = 0;
  double encode_seconds = 0;
  double transfer_seconds = 0;
  double decode_seconds = 0;
  uint64_t steps = 0;
  uint64_t syncs = 0;
};

// One bucket's averaging in flight (or finished and not yet applied).
struct Exchange {
  std::vector<float> data;  // a host exchange's elements; a device exchange's once a checkpoint fetched them
  // A device bucket's exchange (Synchronizer::place): its elements in the bucket's device memory.
  std::unique_ptr<device::Buffer> device_data;
  gw_request* request = nullptr;  // nullptr once finished
  // A bucket whose rounds share their collectives with other buckets ([bucket] rounds_batch): the batch's
  // first bucket holds the request, the others none; the results of all arrive with it. Shared by the
  // batch's exchanges, true once the first one finished (the others are finished after it).
  std::shared_ptr<bool> batch_done;
  coll::CompressedStats stats;
  std::chrono::steady_clock::time_point started;
};

class Synchronizer {
 public:
  Synchronizer(comm::Communicator& comm, const Runtime& runtime);
  ~Synchronizer();
  Synchronizer(const Synchronizer&) = delete;
  Synchronizer& operator=(const Synchronizer&) = delete;

  void register_tensor(const std::string& name, const gw_tensor& gradient, const gw_tensor* parameter);
  void register_shape(const std::string& name, const std::vector<int64_t>& dims);
  void finalize();

  uint32_t bucket_count() const;
  gw_sync_bucket_info bucket_info(uint32_t bucket) const;
  uint32_t tensor_bucket(const std::string& name) const;

  void bucket_ready(uint32_t bucket);
  uint32_t step();
  void skip_step();

  std::vector<unsigned char> save_state();
  void load_state(const unsigned char* data, uint64_t size);

  gw_sync_stats stats(uint32_t bucket) const;

  // Elastic mode (docs/elastic.md, sync/elastic.cpp). Set before finalize by gw_sync_create when the
  // communicator is elastic: finalize then requires every tensor's parameter.
  void set_elastic(bool on) { elastic_ = on; }
  bool elastic() const { return elastic_; }
  // At the start of each gw_sync_step: the parameters and the state, kept for this step and the last.
  void snapshot();
  // After a step failed with (status, message): agrees on the new membership over `handle`, moves to its
  // new communicator and puts back the snapshot of the agreed step. Throws the failure when the quorum
  // is lost.
  void recover(gw_comm& handle, gw_status status, const std::string& message);
  // At a step boundary: admits the processes waiting to join (comm/elastic.hpp) and sends them the
  // parameters and the state. True when the membership changed.
  bool admit(gw_comm& handle);
  // Set by gw_sync_create over a communicator this process joined with: finalize receives the state.
  void set_joined() { joined_ = true; }

 private:
  struct Snapshot {
    uint64_t steps = 0;
    std::vector<unsigned char> state;
    std::vector<std::vector<float>> parameters;  // by tensor
  };
  bool elastic_ = false;
  bool joined_ = false;
  // Rank 0 sends, every other rank receives: the state blob and the parameters; `receiving` ranks
  // (the joiners) take them, their own error-feedback residuals reset.
  void transfer_state(bool receiving);
  void reset_residuals();
  void after_agreement(gw_comm& handle, const comm::Agreed& agreed);
  std::vector<Snapshot> snapshots_;  // [0]: this step's start, [1]: the last step's

  // What a discarded early exchange changed, to undo it (gw_sync_skip_step).
  struct Rollback {
    std::optional<ErrorFeedback::Residuals> residuals;
    std::optional<std::vector<float>> velocity;
    uint64_t exchanges = 0;
  };
  struct Bucket {
    std::string codec_name;
    Codec* codec = nullptr;  // nullptr: "none", the dense allreduce
    std::unique_ptr<ErrorFeedback> ef;
    std::vector<uint32_t> tensors;
    uint64_t count = 0;
    std::vector<gw_tensor_shape> shapes;    // its tensors' 2-D views (those registered with a shape)
    std::vector<float> accumulator;         // accumulate schedule; empty until first used
    std::vector<float> velocity;            // [codec] momentum > 0: v = m v + g, what is exchanged
    // Compressed parameter averaging (sync_parameters through a codec, momentum.cpp): the parameters after
    // the last average, the same on every rank (empty until the first, dense, average), and the error
    // feedback on the parameter difference since then.
    // The outer loop (outer.cpp) keeps its anchor here too, and its error feedback in parameter_ef.
    std::vector<float> anchor;
    std::unique_ptr<ErrorFeedback> parameter_ef;
    std::vector<float> outer_velocity;      // the outer optimizer's momentum; empty until the first outer step
    // Exchanged in device memory (place): the gradients' device memory, and device buffers that earlier
    // exchanges gave back. nullptr: staged through the host.
    std::shared_ptr<coll::TensorMemory> device;
    int device_index = 0;
    void* stream = nullptr;
    std::vector<std::unique_ptr<device::Buffer>> device_spare;
    uint64_t exchanges = 0;                 // started so far: the codec context's step, alike on every rank
    std::unique_ptr<Exchange> early;        // started by bucket_ready in this step
    bool ready = false;                     // bucket_ready in this step, its batch not yet complete
    std::optional<Rollback> rollback;       // the state before this step's early start
    Accounting accounting;
    std::string codec_reason;  // why the auto codec chose codec_name; "" when configured
    // The auto codec: this bucket's codec is chosen by the cost model (finalize, and again on drift).
    bool is_auto = false;
    double predicted_seconds = 0;  // the chosen codec's predicted exchange time
    // What the next check compares the measured exchange time with: the prediction, or, once a
    // re-measurement confirmed the prediction, the time the exchanges took in place (ranks that compute
    // between exchanges take longer than the idle measurement says; that alone is not drift).
    double expected_seconds = 0;
    std::string chosen_reason;                // the last choice's reason (codec_reason may add to it)
    std::vector<AutoCandidate> candidates;    // that choice's candidates, for the drift check
    std::vector<double> recent;    // measured exchange times since the last check
  };
  // What the schedule will do this step, from a dry run of on_step on a copy of its state.
  struct Plan {
    bool sync_gradients = false;
    bool accumulate = false;
    bool sync_accumulated = false;
    std::optional<uint64_t> start_slot;
    // Any collective at all (gradients, accumulator, parameters, an exchange started or finished, an outer
    // step): elastic mode adds its per-step message to a step without one (sync/elastic.cpp).
    bool exchanges = false;
  };
  // An outer step in flight (outer.cpp): a fragment's buckets, each averaging its pseudo-gradient (or, the
  // first time, its parameters), and the parameters as they were sent.
  struct OuterFlight {
    uint64_t step = 0;  // the step that started it
    std::vector<uint32_t> buckets;
    std::vector<uint8_t> first;  // per bucket: no anchor yet, the parameters themselves are averaged
    std::vector<std::unique_ptr<Exchange>> exchanges;
    std::vector<std::vector<float>> sent;
  };
  // Callbacks of gw_schedule_runtime.
  struct StepContext {
    Synchronizer* self;
    uint32_t flags = 0;
    bool accumulated = false;
    bool synced_accumulated = false;
    std::optional<Error> error;
  };

  void require_finalized(const char* what) const;
  Bucket& bucket_at(uint32_t bucket);
  const Plan& plan();
  Plan dry_run();

  void pack_gradients(const Bucket& b, float* out) const;
  void unpack_gradients(const Bucket& b, const float* in);
  // Writes an exchange's average into the bucket's gradients, from the host or the device.
  void unpack(Bucket& b, Exchange& e);
  // Whether bucket b is exchanged in device memory: every gradient f32 in CUDA memory on one device and
  // stream, a codec with CUDA kernels, no momentum (its velocity is host memory) and the flat
  // algorithms. Sets b.device (or clears it); called when the bucket's codec or tensors are set.
  void place(Bucket& b);
  // Starts averaging bucket `bucket`: its gradients, or (accumulated) the accumulator plus, unless
  // already added (after_accumulate), this step's gradients, divided by the micro-steps.
  std::unique_ptr<Exchange> start_exchange(uint32_t bucket, bool accumulated, bool after_accumulate);
  // What start_exchange does before the collective: the exchange with its elements in place (at *x).
  std::unique_ptr<Exchange> prepare_exchange(uint32_t bucket, bool accumulated, bool after_accumulate, float** x);
  // The buckets whose rounds share one collective with bucket `bucket` ([bucket] rounds_batch), in bucket
  // order: the buckets of its codec, when that codec has rounds, cut into batches of rounds_batch in
  // bucket order. A rule of the codecs and the bucket order alone, so every rank batches alike, whatever
  // order the buckets become ready in. {bucket} when it is not batched.
  std::vector<uint32_t> batch_of(uint32_t bucket) const;
  // Starts the exchanges of a batch (batch_of) as one collective per round (coll::allreduce_rounds over
  // the buckets' buffers); returns them in the batch's order, the first holding the request.
  std::vector<std::unique_ptr<Exchange>> start_batch(const std::vector<uint32_t>& batch, bool accumulated,
                                                     bool after_accumulate);
  // The compressed allreduce's arguments for start_average and start_batch.
  coll::CompressedArgs compressed_args(uint32_t bucket, ErrorFeedback* ef, float* x, Exchange& e,
                                       std::shared_ptr<coll::TensorMemory> memory, uint64_t buffer_tag);
  // Starts the average over the ranks of `x` (bucket `bucket`'s elements) into e.request: through the
  // bucket's codec with error feedback `ef` when `compressed`, else dense; bytes booked into e.stats.
  // `buffer_tag` is or-ed into the codec context's buffer_id (the bucket's index): parameter exchanges
  // keep a codec's per-buffer state apart from the gradients' (kParameterBuffers).
  void start_average(uint32_t bucket, bool compressed, ErrorFeedback* ef, float* x, Exchange& e,
                     std::optional<uint32_t> seq, std::shared_ptr<coll::TensorMemory> memory = nullptr,
                     uint64_t buffer_tag = 0);
  static constexpr uint64_t kParameterBuffers = uint64_t{1} << 32;
  // The early exchange of this step, or a new one (with the rest of its batch, left in their `early`).
  std::unique_ptr<Exchange> early_or_start(uint32_t bucket, bool accumulated, bool after_accumulate);
  void start_early(uint32_t bucket, bool accumulated);
  // Waits for an exchange and books its cost (unless it is discarded).
  void finish(uint32_t bucket, Exchange& e, bool book = true);

  // gw_schedule_runtime callbacks, run inside on_step.
  void do_sync_gradients(StepContext& ctx);
  void do_accumulate(StepContext& ctx);
  void do_sync_accumulated(StepContext& ctx);
  void do_sync_parameters(StepContext& ctx);
  // momentum.cpp: v = m v + x in place of x (compress after momentum), and the parameter exchange of a
  // bucket (the difference from its anchor through the codec, or dense) with what completes it.
  void apply_momentum(Bucket& b, float* x);
  std::unique_ptr<Exchange> start_parameter_exchange(uint32_t bucket);
  void finish_parameter_exchange(uint32_t bucket, Exchange& e);
  // outer.cpp: the outer loop's steps, a fragment's buckets, and the check that every rank's schedule
  // starts alike (finalize).
  void do_start_outer(StepContext& ctx, const gw_outer_step* step);
  void do_finish_outer(StepContext& ctx, const gw_outer_step* step);
  std::vector<uint32_t> fragment_buckets(const gw_outer_step* step, const char* what) const;
  void check_schedules_alike();
  void do_start_exchange(StepContext& ctx, uint64_t slot);
  void do_finish_exchange(StepContext& ctx, uint64_t slot);
  gw_schedule_runtime runtime_for(StepContext& ctx);

  void end_step();
  // Gives bucket `b` codec `name` ("none": dense) with fresh error feedback where the codec keeps it
  // (keeps_error_feedback; another codec's residuals are dropped).
  void set_codec(Bucket& b, const std::string& name);
  Codec* codec_named(const std::string& name);
  // Every auto_recheck_steps steps: the auto buckets' measured exchange times against their predictions,
  // compared over the ranks; past auto_drift, every auto bucket is chosen again, measuring now.
  void recheck_auto();
  void progress_loop();
  void check_registrations();

  comm::Communicator* comm_;  // elastic mode moves it to the survivors' communicator
  const Runtime& runtime_;
  std::map<std::string, std::unique_ptr<Codec>> codecs_;
  std::unique_ptr<Schedule> schedule_;
  std::string default_codec_;
  uint64_t seed_ = 0;
  float momentum_ = 0;  // [codec] momentum
  uint64_t auto_recheck_steps_ = 0;  // [codec] auto_recheck_steps
  double auto_drift_ = 2;            // [codec] auto_drift
  std::vector<double> auto_machine_;  // memory's and codecs' numbers, measured once (choose_auto_codecs)
  uint64_t bucket_bytes_ = 0;
  uint64_t rounds_batch_ = 0;  // [bucket] rounds_batch
  std::vector<Rule> rules_;

  std::vector<TensorEntry> tensors_;
  std::vector<Bucket> buckets_;
  bool finalized_ = false;

  uint64_t steps_ = 0;        // steps counted (the schedule's view)
  uint64_t micro_steps_ = 0;  // accumulated since the last sync_accumulated
  uint32_t seq_base_ = 0;     // this step's reserved sequence numbers, one per bucket
  std::optional<Plan> plan_;
  std::map<uint64_t, std::vector<std::unique_ptr<Exchange>>> slots_;  // background exchanges, one per bucket
  std::map<uint32_t, OuterFlight> outer_;  // outer steps in flight, by fragment

  // Background progress for exchanges that outlive a step (async schedules).
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool progress_idle_ = false;  // the progress thread waits for a notify (nothing was in flight)
  std::thread progress_thread_;

  bool in_flight() const;


 public:
  std::mutex& mutex() { return mutex_; }
  // Asked by the C ABI with the mutex held, after each call: whether the progress thread sleeps while
  // an exchange is in flight, so that notify() must wake it. Waking it for nothing costs a rank whose
  // host has more ranks than cores its core in the middle of the call (the woken thread takes it).
  bool wants_progress() const { return progress_idle_ && in_flight(); }
  // Called by the C ABI after releasing the mutex, when wants_progress() said so.
  void notify() { wake_.notify_all(); }
};

}  // namespace gw::sync

struct gw_sync {
  std::unique_ptr<gw::sync::Synchronizer> impl;
  gw_comm* comm = nullptr;  // the handle it was created over (elastic mode replaces what it holds)
};
