#include "sync/synchronizer.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "codec/staging.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/two_level.hpp"
#include "comm/allreduce_start.hpp"
#include "core/error.hpp"
#include "sync/auto_codec.hpp"
#include "core/tensor.hpp"

namespace gw::sync {

namespace {

using Clock = std::chrono::steady_clock;

// Runs a collective to completion on the calling thread.
void run_blocking(comm::Communicator& comm, gw_request* r, const std::string& what) {
  const gw_status st = comm.wait(r, -1.0);
  const std::string error = r->error;
  comm.free(r);
  if (st != GW_OK) fail(st, what + ": " + error);
}

// The registration list as bytes every rank can compare: name, NUL, dtype, count, has-parameter.
std::string serialize(const std::vector<TensorEntry>& tensors) {
  std::string s;
  for (const TensorEntry& t : tensors) {
    s += t.name;
    s.push_back('\0');
    s += std::to_string(int(t.gradient.dtype)) + "," + std::to_string(t.gradient.count) + "," +
         (t.parameter ? "1" : "0");
    if (t.shape) s += "," + std::to_string(t.shape->first) + "x" + std::to_string(t.shape->second);
    s.push_back('\0');
  }
  return s;
}

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == '\0') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

std::string entry_text(const std::vector<std::string>& fields, size_t tensor) {
  if (2 * tensor + 1 >= fields.size()) return "nothing";
  const std::string& meta = fields[2 * tensor + 1];
  const size_t a = meta.find(','), b = meta.find(',', a + 1), x = meta.find(',', b + 1);
  const gw_dtype dtype = gw_dtype(std::stoi(meta.substr(0, a)));
  return "'" + fields[2 * tensor] + "' (" + gw_dtype_name(dtype) + ", " + meta.substr(a + 1, b - a - 1) +
         " elements" + (meta.substr(b + 1, x == std::string::npos ? std::string::npos : x - b - 1) == "1" ? ", with parameter" : "") +
         (x != std::string::npos ? ", shape " + meta.substr(x + 1) : std::string()) + ")";
}

}  // namespace

Synchronizer::Synchronizer(comm::Communicator& comm, const Runtime& runtime) : comm_(&comm), runtime_(runtime) {
  const config::Config& cfg = runtime.config();
  default_codec_ = cfg.get_string("codec", "name");
  seed_ = uint64_t(cfg.get_int("codec", "seed"));
  momentum_ = float(cfg.get_float("codec", "momentum"));
  auto_recheck_steps_ = uint64_t(cfg.get_int("codec", "auto_recheck_steps"));
  auto_drift_ = cfg.get_float("codec", "auto_drift");
  bucket_bytes_ = uint64_t(cfg.get_int("bucket", "bytes"));
  rounds_batch_ = uint64_t(cfg.get_int("bucket", "rounds_batch"));
  for (const auto& node : cfg.rules()) {
    const toml::table& t = *node.as_table();
    rules_.push_back(Rule{*t.get("match")->value<std::string>(), uint64_t(*t.get("max_bytes")->value<int64_t>()),
                          *t.get("codec")->value<std::string>()});
  }
  schedule_ = std::make_unique<Schedule>(
      runtime.registry().find(GW_COMPONENT_SCHEDULE, cfg.get_string("schedule", "name")), cfg);
  progress_thread_ = std::thread([this] { progress_loop(); });
}

Synchronizer::~Synchronizer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  progress_thread_.join();
  // Exchanges still in flight are collectives the other ranks take part in: finish them.
  for (auto& b : buckets_)
    if (b.early && b.early->request) comm_->wait(b.early->request, -1.0), comm_->free(b.early->request);
  for (auto& [slot, exchanges] : slots_)
    for (auto& e : exchanges)
      if (e->request) comm_->wait(e->request, -1.0), comm_->free(e->request);
  for (auto& [fragment, flight] : outer_)
    for (auto& e : flight.exchanges)
      if (e->request) comm_->wait(e->request, -1.0), comm_->free(e->request);
}

bool Synchronizer::in_flight() const {
  for (const auto& [slot, exchanges] : slots_)
    for (const auto& e : exchanges)
      if (e->request && e->request->status == GW_IN_PROGRESS) return true;
  for (const auto& [fragment, flight] : outer_)
    for (const auto& e : flight.exchanges)
      if (e->request && e->request->status == GW_IN_PROGRESS) return true;
  return false;
}

void Synchronizer::progress_loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!in_flight()) {
      progress_idle_ = true;
      wake_.wait(lock);
      progress_idle_ = false;
      continue;
    }
    try {
      comm_->progress();
    } catch (const Error&) {
      // A transport failure surfaces when the exchange is waited for.
    }
    wake_.wait_for(lock, std::chrono::microseconds(200));
  }
}

void Synchronizer::require_finalized(const char* what) const {
  if (!finalized_)
    fail(GW_ERR_STATE, std::string(what) + " needs gw_sync_finalize first (register every tensor, then finalize)");
}

void Synchronizer::register_tensor(const std::string& name, const gw_tensor& gradient, const gw_tensor* parameter) {
  if (finalized_)
    fail(GW_ERR_STATE, "gw_sync_register('" + name + "') after gw_sync_finalize; register every tensor before");
  if (name.empty()) fail(GW_ERR_INVALID_ARGUMENT, "the tensor name is empty; give every tensor a unique name");
  for (const TensorEntry& t : tensors_)
    if (t.name == name) fail(GW_ERR_INVALID_ARGUMENT, "tensor '" + name + "' is registered twice; names must be unique");
  // The tensors were read and checked where they entered (gw::read_tensor); here what the synchronizer takes.
  auto check = [&](const gw_tensor& t, const char* what) {
    // Host or CUDA memory, f32, f16 or bf16: the buckets stage them through f32 (codec/staging.hpp).
    if (t.memory != GW_MEMORY_HOST && t.memory != GW_MEMORY_CUDA)
      fail(GW_ERR_INVALID_ARGUMENT, "tensor '" + name + "': the " + what + "'s memory " +
                                        std::to_string(int(t.memory)) + " is not a gw_memory_kind");
    if (!staging::supported(t.dtype))
      fail(GW_ERR_UNSUPPORTED, "tensor '" + name + "': the " + what + " is " +
                                   (gw_dtype_name(t.dtype) ? gw_dtype_name(t.dtype) : "not a gw_dtype") +
                                   "; the synchronizer takes f32, f16 and bf16 tensors");
    if (t.count > 0 && t.data == nullptr)
      fail(GW_ERR_INVALID_ARGUMENT, "tensor '" + name + "': the " + what + "'s data is NULL");
  };
  check(gradient, "gradient");
  TensorEntry e;
  e.name = name;
  e.gradient = gradient;
  if (parameter) {
    check(*parameter, "parameter");
    if (parameter->count != gradient.count)
      fail(GW_ERR_INVALID_ARGUMENT, "tensor '" + name + "': the parameter has " + std::to_string(parameter->count) +
                                        " elements and the gradient " + std::to_string(gradient.count) +
                                        "; they must match");
    e.parameter = *parameter;
  }
  tensors_.push_back(std::move(e));
}

void Synchronizer::register_shape(const std::string& name, const std::vector<int64_t>& dims) {
  if (finalized_)
    fail(GW_ERR_STATE, "gw_sync_register_shape('" + name + "') after gw_sync_finalize; give shapes before");
  TensorEntry* t = nullptr;
  for (TensorEntry& e : tensors_)
    if (e.name == name) t = &e;
  if (t == nullptr)
    fail(GW_ERR_NOT_FOUND, "gw_sync_register_shape: no tensor named '" + name + "' is registered; gw_sync_register it first");
  uint64_t product = 1;
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i) {
    text += (i ? " x " : "") + std::to_string(dims[i]);
    if (dims[i] < 0) fail(GW_ERR_INVALID_ARGUMENT, "tensor '" + name + "': shape " + text + " has a negative size");
    product *= uint64_t(dims[i]);
  }
  if (dims.empty()) text = "scalar";
  if (product != t->gradient.count)
    fail(GW_ERR_INVALID_ARGUMENT, "tensor '" + name + "': the shape " + text + " holds " + std::to_string(product) +
                                      " elements but the tensor has " + std::to_string(t->gradient.count) +
                                      "; pass the tensor's own sizes");
  // Matrix codecs see dims[0] x the rest (a vector n x 1, a scalar 1 x 1), as PyTorch's PowerSGD views a
  // gradient.
  const uint64_t rows = dims.empty() ? 1 : uint64_t(dims[0]);
  t->shape = std::make_pair(rows, rows == 0 ? 0 : product / rows);
}

void Synchronizer::finalize() {
  if (finalized_) fail(GW_ERR_STATE, "gw_sync_finalize was already called");
  if (tensors_.empty()) fail(GW_ERR_STATE, "gw_sync_finalize: no tensor is registered; gw_sync_register them first");
  if (elastic_)
    for (const TensorEntry& t : tensors_)
      if (!t.parameter)
        fail(GW_ERR_INVALID_ARGUMENT, "gw_sync_finalize: tensor '" + t.name + "' has no parameter, but [elastic] enabled "
                                      "needs every tensor's parameter (gw_sync_register's last argument): after a failed "
                                      "rank the survivors put the parameters back to the last step all of them completed "
                                      "(docs/elastic.md)");
  for (TensorEntry& t : tensors_) t.codec = codec_for(rules_, t.name, 4 * t.gradient.count, default_codec_);
  const auto lists = assign_buckets(tensors_, bucket_bytes_);
  // Buckets whose codec is "auto" get theirs from the cost model; collective, and alike on every rank.
  std::vector<uint64_t> auto_counts;
  for (const auto& list : lists)
    if (tensors_[list.front()].codec == "auto") {
      uint64_t count = 0;
      for (uint32_t i : list) count += tensors_[i].gradient.count;
      auto_counts.push_back(count);
    }
  const std::vector<AutoChoice> chosen =
      auto_counts.empty() ? std::vector<AutoChoice>{} : choose_auto_codecs(*comm_, runtime_, auto_counts, false, &auto_machine_);
  size_t next_auto = 0;
  for (const auto& list : lists) {
    Bucket b;
    std::string codec = tensors_[list.front()].codec;
    if (codec == "auto") {
      b.is_auto = true;
      b.codec_reason = chosen[next_auto].reason;
      b.predicted_seconds = b.expected_seconds = chosen[next_auto].predicted;
      b.chosen_reason = chosen[next_auto].reason;
      b.candidates = chosen[next_auto].candidates;
      codec = chosen[next_auto++].codec;
    }
    set_codec(b, codec);
    b.tensors = list;
    for (uint32_t i : list) {
      const TensorEntry& t = tensors_[i];
      if (t.shape && t.gradient.count > 0) b.shapes.push_back(gw_tensor_shape{t.offset, t.shape->first, t.shape->second});
      b.count += t.gradient.count;
    }
    place(b);
    buckets_.push_back(std::move(b));
  }
  check_registrations();
  if (!joined_) check_schedules_alike();  // a joiner's schedule state comes with the members' below
  seq_base_ = comm_->reserve_sequence(uint32_t(buckets_.size()));
  finalized_ = true;
  if (joined_) transfer_state(true);
}

// Every rank gathers every rank's registration list and compares it with rank 0's, so every rank
// reports the same first difference.
void Synchronizer::check_registrations() {
  const uint32_t n = comm_->size();
  const std::string mine = serialize(tensors_);
  std::vector<uint64_t> lengths(n);
  lengths[comm_->rank()] = mine.size();
  {
    const coll::Blocks blocks = coll::blocks_of(std::vector<uint64_t>(n, 8), 1);
    void* buf = lengths.data();
    const comm::Signature s{comm::CollectiveKind::Allgather, GW_REDUCE_SUM, GW_DTYPE_U8, 8, 0, 0};
    run_blocking(*comm_, comm_->start_collective(s, [=](comm::Collective& c) { return coll::allgatherv_ring(c, buf, blocks); }),
                 "gw_sync_finalize: gathering the registrations");
  }
  uint64_t total = 0;
  for (uint64_t l : lengths) total += l;
  std::string all(total, '\0');
  const coll::Blocks blocks = coll::blocks_of(lengths, 1);
  if (!mine.empty()) std::memcpy(blocks.at(all.data(), comm_->rank()), mine.data(), mine.size());
  {
    void* buf = all.data();
    const comm::Signature s{comm::CollectiveKind::Allgatherv, GW_REDUCE_SUM, GW_DTYPE_U8, total, 0, 0};
    run_blocking(*comm_, comm_->start_collective(s, [=](comm::Collective& c) { return coll::allgatherv_ring(c, buf, blocks); }),
                 "gw_sync_finalize: gathering the registrations");
  }
  const auto reference = split_nul(all.substr(0, lengths[0]));
  for (uint32_t r = 1; r < n; ++r) {
    const auto theirs = split_nul(all.substr(blocks.offset[r], lengths[r]));
    if (theirs == reference) continue;
    size_t i = 0;
    while (2 * i + 1 < reference.size() && 2 * i + 1 < theirs.size() && reference[2 * i] == theirs[2 * i] &&
           reference[2 * i + 1] == theirs[2 * i + 1])
      ++i;
    fail(GW_ERR_MISMATCH, "gw_sync_finalize: the ranks registered different tensors. Tensor #" + std::to_string(i) +
                              ": rank 0 registered " + entry_text(reference, i) + ", rank " + std::to_string(r) +
                              " registered " + entry_text(theirs, i) + " (rank 0 has " +
                              std::to_string(reference.size() / 2) + " tensors, rank " + std::to_string(r) + " " +
                              std::to_string(theirs.size() / 2) +
                              "). Every rank must register the same names, counts and dtypes in the same order.");
  }
}

uint32_t Synchronizer::bucket_count() const {
  require_finalized("gw_sync_bucket_count");
  return uint32_t(buckets_.size());
}

Synchronizer::Bucket& Synchronizer::bucket_at(uint32_t bucket) {
  if (bucket >= buckets_.size())
    fail(GW_ERR_INVALID_ARGUMENT, "bucket " + std::to_string(bucket) + " does not exist (there are " +
                                      std::to_string(buckets_.size()) + ")");
  return buckets_[bucket];
}

gw_sync_bucket_info Synchronizer::bucket_info(uint32_t bucket) const {
  require_finalized("gw_sync_bucket_info");
  const Bucket& b = const_cast<Synchronizer*>(this)->bucket_at(bucket);
  gw_sync_bucket_info info = GW_SYNC_BUCKET_INFO_INIT;
  info.codec = b.codec_name.c_str();
  info.count = b.count;
  info.num_tensors = uint32_t(b.tensors.size());
  return info;
}

uint32_t Synchronizer::tensor_bucket(const std::string& name) const {
  require_finalized("gw_sync_tensor_bucket");
  for (const TensorEntry& t : tensors_)
    if (t.name == name) return t.bucket;
  fail(GW_ERR_NOT_FOUND, "no tensor named '" + name + "' is registered");
}

// ---- the plan of a step -------------------------------------------------------------------------

Synchronizer::Plan Synchronizer::dry_run() {
  // The schedule decides from its counters alone, so running on_step with recording callbacks and
  // restoring the counters tells what the real call will do, before the gradients are final.
  Plan plan;
  gw_schedule_runtime rt{};
  rt.struct_size = sizeof rt;
  rt.ctx = &plan;
  rt.step = steps_;
  rt.world_size = comm_->size();
  static constexpr auto exchanges = [](void* p) { static_cast<Plan*>(p)->exchanges = true; };
  rt.sync_gradients = [](void* p) { static_cast<Plan*>(p)->sync_gradients = true; exchanges(p); return GW_OK; };
  rt.accumulate_gradients = [](void* p) { static_cast<Plan*>(p)->accumulate = true; return GW_OK; };
  rt.sync_accumulated = [](void* p) { static_cast<Plan*>(p)->sync_accumulated = true; exchanges(p); return GW_OK; };
  rt.sync_parameters = [](void* p) { exchanges(p); return GW_OK; };
  rt.start_gradient_exchange = [](void* p, uint64_t slot) {
    static_cast<Plan*>(p)->start_slot = slot;
    exchanges(p);
    return GW_OK;
  };
  rt.finish_gradient_exchange = [](void* p, uint64_t) { exchanges(p); return GW_OK; };
  rt.keep_local = [](void*) { return GW_OK; };
  rt.start_outer_step = [](void* p, const gw_outer_step*) { exchanges(p); return GW_OK; };
  rt.finish_outer_step = [](void* p, const gw_outer_step*) { exchanges(p); return GW_OK; };
  const std::vector<unsigned char> saved = schedule_->save();
  schedule_->on_step(rt);
  schedule_->load(saved.data(), saved.size());
  return plan;
}

const Synchronizer::Plan& Synchronizer::plan() {
  if (!plan_) plan_ = dry_run();
  return *plan_;
}

// ---- exchanges ----------------------------------------------------------------------------------

void Synchronizer::pack_gradients(const Bucket& b, float* out) const {
  for (uint32_t i : b.tensors) {
    const TensorEntry& t = tensors_[i];
    staging::read_f32(t.gradient, out + t.offset);
  }
}

void Synchronizer::unpack_gradients(const Bucket& b, const float* in) {
  for (uint32_t i : b.tensors) {
    const TensorEntry& t = tensors_[i];
    staging::write_f32(in + t.offset, t.gradient);
  }
}

void Synchronizer::unpack(Bucket& b, Exchange& e) {
  if (!e.device_data) {
    unpack_gradients(b, e.data.data());
    return;
  }
  device::use_device(b.device_index);
  const auto* x = static_cast<const float*>(e.device_data->data());
  for (uint32_t i : b.tensors) {
    const TensorEntry& t = tensors_[i];
    b.device->copy(static_cast<float*>(t.gradient.data), x + t.offset, t.gradient.count);
  }
  device::synchronize(b.stream);  // gw_sync_step returns with the averages in place, as on the host
  b.device_spare.push_back(std::move(e.device_data));
}

void Synchronizer::place(Bucket& b) {
  b.device.reset();
  b.device_spare.clear();
  if (b.tensors.empty() || momentum_ > 0 || !b.codec || !(b.codec->properties().flags & GW_CODEC_CUDA) ||
      coll::use_two_level(comm_->topology(), comm_->settings().two_level))
    return;
  const gw_tensor& first = tensors_[b.tensors.front()].gradient;
  for (uint32_t i : b.tensors) {
    const gw_tensor& g = tensors_[i].gradient;
    if (g.memory != GW_MEMORY_CUDA || g.dtype != GW_DTYPE_F32 || g.device != first.device || g.stream != first.stream)
      return;
  }
  b.device_index = first.device;
  b.stream = first.stream;
  b.device = coll::cuda_memory(first.device, first.stream);
}

std::unique_ptr<Exchange> Synchronizer::start_exchange(uint32_t bucket, bool accumulated, bool after_accumulate) {
  Bucket& b = buckets_[bucket];
  float* x = nullptr;
  auto e = prepare_exchange(bucket, accumulated, after_accumulate, &x);
  const uint32_t seq = seq_base_ + bucket;
  start_average(bucket, b.codec != nullptr, b.ef.get(), x, *e, seq, e->device_data ? b.device : nullptr);
  ++b.exchanges;
  return e;
}

std::unique_ptr<Exchange> Synchronizer::prepare_exchange(uint32_t bucket, bool accumulated, bool after_accumulate,
                                                         float** out) {
  Bucket& b = buckets_[bucket];
  // The pieces of one exchange are encoded as the data flows, so two exchanges of a bucket in flight
  // at once would update its error-feedback residuals in an order that depends on timing. The next one
  // starts after the previous one finished: the same bits on every run.
  if (b.ef)
    for (auto& [slot, exchanges] : slots_) finish(bucket, *exchanges[bucket]);
  auto e = std::make_unique<Exchange>();
  float* x = nullptr;
  if (b.device && !accumulated) {
    // In device memory: the gradients copied into a device bucket, encoded there (an accumulator is
    // host memory: accumulated exchanges are staged; momentum keeps a bucket on the host, place()).
    device::use_device(b.device_index);
    if (b.device_spare.empty()) {
      e->device_data = std::make_unique<device::Buffer>();
    } else {
      e->device_data = std::move(b.device_spare.back());
      b.device_spare.pop_back();
    }
    x = static_cast<float*>(e->device_data->reserve(4 * b.count));
    for (uint32_t i : b.tensors) {
      const TensorEntry& t = tensors_[i];
      b.device->copy(x + t.offset, static_cast<const float*>(t.gradient.data), t.gradient.count);
    }
  } else {
    e->data.resize(b.count);
    x = e->data.data();
    if (accumulated) {
      // The same float operations whether or not this step's gradients were already added, so an
      // exchange started early by bucket_ready averages exactly what sync_accumulated would.
      b.accumulator.resize(b.count, 0.0f);
      const float m = float(after_accumulate ? micro_steps_ : micro_steps_ + 1);
      if (after_accumulate) {
        for (uint64_t i = 0; i < b.count; ++i) x[i] = b.accumulator[i] / m;
      } else {
        pack_gradients(b, x);
        for (uint64_t i = 0; i < b.count; ++i) x[i] = (b.accumulator[i] + x[i]) / m;
      }
    } else {
      pack_gradients(b, x);
    }
    if (momentum_ > 0) apply_momentum(b, x);
  }
  e->started = Clock::now();
  *out = x;
  return e;
}

std::vector<uint32_t> Synchronizer::batch_of(uint32_t bucket) const {
  const Bucket& b = buckets_[bucket];
  if (rounds_batch_ == 1 || b.codec == nullptr || !b.codec->has_rounds()) return {bucket};
  std::vector<uint32_t> same;  // the buckets of this codec, in bucket order
  for (uint32_t i = 0; i < buckets_.size(); ++i)
    if (buckets_[i].codec == b.codec) same.push_back(i);
  const uint64_t k = uint64_t(std::find(same.begin(), same.end(), bucket) - same.begin());
  const uint64_t size = rounds_batch_ == 0 ? same.size() : rounds_batch_;
  const uint64_t begin = k / size * size, end = std::min<uint64_t>(same.size(), begin + size);
  return std::vector<uint32_t>(same.begin() + begin, same.begin() + end);
}

std::vector<std::unique_ptr<Exchange>> Synchronizer::start_batch(const std::vector<uint32_t>& batch, bool accumulated,
                                                                 bool after_accumulate) {
  std::vector<std::unique_ptr<Exchange>> exchanges;
  std::vector<coll::CompressedArgs> buffers;
  const auto done = std::make_shared<bool>(false);
  for (uint32_t bucket : batch) {
    Bucket& b = buckets_[bucket];
    float* x = nullptr;
    exchanges.push_back(prepare_exchange(bucket, accumulated, after_accumulate, &x));
    Exchange& e = *exchanges.back();
    e.batch_done = done;
    buffers.push_back(compressed_args(bucket, b.ef.get(), x, e, e.device_data ? b.device : nullptr, 0));
    ++b.exchanges;
  }
  // The batch's collective takes the first bucket's sequence number (the others' stay unused): every
  // rank batches the same buckets, so every rank starts it with the same number.
  exchanges.front()->request = comm::start_allreduce_rounds(*comm_, std::move(buffers), seq_base_ + batch.front());
  return exchanges;
}

void Synchronizer::start_average(uint32_t bucket, bool compressed, ErrorFeedback* ef, float* x, Exchange& e,
                                 std::optional<uint32_t> seq, std::shared_ptr<coll::TensorMemory> memory,
                                 uint64_t buffer_tag) {
  const Bucket& b = buckets_[bucket];
  if (!compressed) {
    e.request = comm::start_allreduce_dense(*comm_, x, b.count, GW_DTYPE_F32, GW_REDUCE_AVG, seq, &e.stats);
    return;
  }
  e.request = comm::start_allreduce_compressed(*comm_, compressed_args(bucket, ef, x, e, std::move(memory), buffer_tag), seq);
}

coll::CompressedArgs Synchronizer::compressed_args(uint32_t bucket, ErrorFeedback* ef, float* x, Exchange& e,
                                                   std::shared_ptr<coll::TensorMemory> memory, uint64_t buffer_tag) {
  const Bucket& b = buckets_[bucket];
  coll::CompressedArgs a;
  a.codec = b.codec;
  a.ef = ef;
  a.ctx.seed = seed_ + bucket;
  a.ctx.step = b.exchanges;
  a.ctx.buffer_id = buffer_tag | bucket;
  a.shapes = b.shapes;
  a.buf = x;
  a.count = b.count;
  a.op = GW_REDUCE_AVG;
  a.stats = &e.stats;
  a.memory = std::move(memory);
  return a;
}

std::unique_ptr<Exchange> Synchronizer::early_or_start(uint32_t bucket, bool accumulated, bool after_accumulate) {
  Bucket& b = buckets_[bucket];
  b.rollback.reset();
  if (b.early) return std::move(b.early);
  const std::vector<uint32_t> batch = batch_of(bucket);
  if (batch.size() == 1) return start_exchange(bucket, accumulated, after_accumulate);
  // The callers go through the buckets in order: this is the batch's first bucket (a batch starts whole),
  // and the rest of it waits in their `early` for their turn in the same loop.
  auto exchanges = start_batch(batch, accumulated, after_accumulate);
  std::unique_ptr<Exchange> mine;
  for (size_t k = 0; k < batch.size(); ++k) {
    if (batch[k] == bucket) mine = std::move(exchanges[k]);
    else buckets_[batch[k]].early = std::move(exchanges[k]);
  }
  return mine;
}

void Synchronizer::start_early(uint32_t bucket, bool accumulated) {
  // A batched bucket starts with its whole batch (none of which started yet: a batch starts whole).
  const std::vector<uint32_t> batch = batch_of(bucket);
  for (uint32_t i : batch) {
    Bucket& b = buckets_[i];
    Rollback rb;
    rb.exchanges = b.exchanges;
    if (b.ef) rb.residuals = b.ef->residuals();
    if (momentum_ > 0) rb.velocity = b.velocity;
    b.rollback = std::move(rb);
    b.ready = false;
  }
  if (batch.size() == 1) {
    buckets_[bucket].early = start_exchange(bucket, accumulated, false);
    return;
  }
  auto exchanges = start_batch(batch, accumulated, false);
  for (size_t k = 0; k < batch.size(); ++k) buckets_[batch[k]].early = std::move(exchanges[k]);
}

Codec* Synchronizer::codec_named(const std::string& name) {
  if (name == "none") return nullptr;
  auto it = codecs_.find(name);
  if (it == codecs_.end()) it = codecs_.emplace(name, runtime_.make_codec(name)).first;
  return it->second.get();
}

void Synchronizer::set_codec(Bucket& b, const std::string& name) {
  Codec* codec = codec_named(name);
  std::unique_ptr<ErrorFeedback> grad_ef, param_ef;
  if (keeps_error_feedback(runtime_.config(), codec)) {
    // Fresh: residuals are kept per piece of the codec's algorithm (a scatter-reduce block, a sparse
    // gather's piece), so another codec's residuals do not fit; the last uncorrected error is dropped.
    grad_ef = std::make_unique<ErrorFeedback>(*codec);
    param_ef = std::make_unique<ErrorFeedback>(*codec);
  }
  b.codec_name = name;
  b.codec = codec;
  b.ef = std::move(grad_ef);
  b.parameter_ef = std::move(param_ef);
  place(b);
}

void Synchronizer::recheck_auto() {
  std::vector<uint32_t> autos;
  for (uint32_t i = 0; i < buckets_.size(); ++i)
    if (buckets_[i].is_auto) autos.push_back(i);
  if (autos.empty()) return;
  std::vector<double> ratios;
  bool unpredicted = false;  // a codec taken from a checkpoint: alike on every rank
  for (uint32_t i : autos) {
    std::vector<double>& r = buckets_[i].recent;
    double ratio = 1.0;
    if (!r.empty() && buckets_[i].expected_seconds > 0) {
      std::nth_element(r.begin(), r.begin() + r.size() / 2, r.end());
      ratio = std::max(1e-9, r[r.size() / 2] / buckets_[i].expected_seconds);
    }
    unpredicted = unpredicted || buckets_[i].expected_seconds <= 0;
    ratios.push_back(ratio);
    r.clear();
  }
  const std::vector<double> shared = auto_drift(*comm_, ratios);  // alike on every rank
  double drift = 1.0, worst = 1.0;
  for (double r : shared)
    if (std::max(r, 1.0 / r) > drift) drift = std::max(r, 1.0 / r), worst = r;
  if (drift <= auto_drift_ && !unpredicted) return;
  if (!unpredicted && drift <= auto_drift_ * auto_drift_) {
    // Measuring again costs (about a second behind a slow link): first ask whether the measured times
    // can change the choice at all. Rescaled to them — the gap put on the link, or on the work — does
    // every bucket's codec stay the fastest? Then keep it and expect what was measured. Only a moderate
    // drift is extrapolated this way: past auto_drift squared the model's numbers are far off (a file
    // made for another network), and they are measured again.
    bool all_stay = true;
    for (size_t k = 0; k < autos.size(); ++k) {
      const Bucket& b = buckets_[autos[k]];
      all_stay = all_stay && choice_under_drift(b.candidates, b.codec_name, shared[k] * b.expected_seconds,
                                                kAutoMargin) == b.codec_name;
    }
    if (all_stay) {
      for (size_t k = 0; k < autos.size(); ++k) {
        Bucket& b = buckets_[autos[k]];
        const double in_place = shared[k] * b.expected_seconds;
        std::ostringstream kept;
        kept.precision(3);
        kept << "kept at step " << steps_ << ": an exchange took " << shared[k] << " x what was expected ("
             << in_place * 1e3 << " ms, on the rank that waited least); rescaled to that, on the link or on the "
             << "work, " << b.codec_name << " stays the fastest, so nothing was measured again; " << b.chosen_reason;
        b.codec_reason = kept.str();
        b.expected_seconds = in_place;
        runtime_.logger().info("sync", "auto codec: bucket " + std::to_string(autos[k]) + ": " + b.codec_reason);
      }
      return;
    }
  }
  std::vector<uint64_t> counts;
  for (uint32_t i : autos) counts.push_back(buckets_[i].count);
  const auto t0 = Clock::now();
  const std::vector<AutoChoice> chosen = choose_auto_codecs(*comm_, runtime_, counts, true, &auto_machine_);
  std::ostringstream why;
  why.precision(3);
  why << "chosen again at step " << steps_ << " (measuring took "
      << std::chrono::duration<double>(Clock::now() - t0).count() * 1e3 << " ms): ";
  if (drift > auto_drift_)
    why << "an exchange took " << worst << " x what was expected (median since the last check, on the rank "
        << "that waited least; [codec] auto_drift = " << auto_drift_ << "): ";
  else
    why << "the codec came from a checkpoint, without a prediction: ";
  for (size_t k = 0; k < autos.size(); ++k) {
    Bucket& b = buckets_[autos[k]];
    const std::string before = b.codec_name;
    // Measured again, the same codec and about the same prediction: the link is what it was, and the
    // exchanges take what they took in place (ranks that compute between them arrive apart and share
    // cores). Expect that from now on, so the same gap does not make every check measure again.
    const double in_place = shared[k] * b.expected_seconds;
    const bool confirmed = in_place > 0 && remeasure_confirms(before, b.predicted_seconds, chosen[k], auto_drift_);
    if (chosen[k].codec != before) set_codec(b, chosen[k].codec);
    std::ostringstream reason;
    reason.precision(3);
    reason << why.str() << chosen[k].reason;
    if (confirmed)
      reason << "; the measurement confirms the earlier one: " << in_place * 1e3
             << " ms per exchange, as measured in place, is expected from now on";
    b.codec_reason = reason.str();
    b.chosen_reason = chosen[k].reason;
    b.candidates = chosen[k].candidates;
    b.predicted_seconds = chosen[k].predicted;
    b.expected_seconds = confirmed ? in_place : chosen[k].predicted;
    runtime_.logger().info("sync", "auto codec: bucket " + std::to_string(autos[k]) + ": " + before + " -> " +
                                       b.codec_name + ": " + b.codec_reason);
  }
}

void Synchronizer::finish(uint32_t bucket, Exchange& e, bool book) {
  Bucket& b = buckets_[bucket];
  if (e.request == nullptr) {
    if (!e.batch_done) return;  // finished before (a restored checkpoint, or save_state)
    // Batched: its results came with the batch's first exchange, finished before this one.
    if (!*e.batch_done)
      fail(GW_ERR_INTERNAL, "bucket " + std::to_string(bucket) + " is finished before the first bucket of its "
                            "batch of rounds");
    e.batch_done.reset();
  } else {
    const gw_status st = comm_->wait(e.request, -1.0);
    const std::string error = e.request->error;
    comm_->free(e.request);
    e.request = nullptr;
    if (st != GW_OK)
      fail(st, "bucket " + std::to_string(bucket) + " (" + b.codec_name + ", " + std::to_string(b.count) +
                   " elements): " + error);
    if (e.batch_done) *e.batch_done = true, e.batch_done.reset();
  }
  if (!book) return;
  Accounting& a = b.accounting;
  const double wall = std::chrono::duration<double>(Clock::now() - e.started).count();
  a.raw_bytes += e.stats.raw_bytes;
  a.wire_bytes += e.stats.wire_bytes;
  a.encode_seconds += e.stats.encode_seconds;
  a.decode_seconds += e.stats.decode_seconds;
  a.transfer_seconds += std::max(0.0, wall - e.stats.encode_seconds - e.stats.decode_seconds);
  ++a.syncs;
  // Kept for the next check only, and never more than a check's worth (a schedule that keeps exchanges in
  // flight is never checked).
  if (b.is_auto && b.recent.size() < auto_recheck_steps_) b.recent.push_back(wall);
}

// ---- the schedule's callbacks ------------------------------------------------------------------

void Synchronizer::do_sync_gradients(StepContext& ctx) {
  std::vector<std::unique_ptr<Exchange>> running;
  for (uint32_t b = 0; b < buckets_.size(); ++b) running.push_back(early_or_start(b, false, false));
  for (uint32_t b = 0; b < buckets_.size(); ++b) {
    finish(b, *running[b]);
    unpack(buckets_[b], *running[b]);
  }
  ctx.flags |= GW_SYNC_GRADIENTS_AVERAGED;
}

void Synchronizer::do_accumulate(StepContext& ctx) {
  for (Bucket& b : buckets_) {
    b.accumulator.resize(b.count, 0.0f);
    for (uint32_t i : b.tensors) {
      const TensorEntry& t = tensors_[i];
      staging::add_f32(t.gradient, b.accumulator.data() + t.offset);
    }
  }
  ++micro_steps_;
  ctx.accumulated = true;
}

void Synchronizer::do_sync_accumulated(StepContext& ctx) {
  if (micro_steps_ == 0 && !ctx.accumulated)
    fail(GW_ERR_STATE, "schedule '" + schedule_->name() + "' synchronized the accumulator before accumulating anything");
  std::vector<std::unique_ptr<Exchange>> running;
  for (uint32_t b = 0; b < buckets_.size(); ++b) running.push_back(early_or_start(b, true, ctx.accumulated));
  for (uint32_t b = 0; b < buckets_.size(); ++b) {
    finish(b, *running[b]);
    unpack_gradients(buckets_[b], running[b]->data.data());
    std::fill(buckets_[b].accumulator.begin(), buckets_[b].accumulator.end(), 0.0f);
  }
  micro_steps_ = 0;
  ctx.synced_accumulated = true;
  ctx.flags |= GW_SYNC_GRADIENTS_AVERAGED;
}

void Synchronizer::do_sync_parameters(StepContext& ctx) {
  for (const TensorEntry& t : tensors_)
    if (!t.parameter)
      fail(GW_ERR_STATE, "schedule '" + schedule_->name() + "' averages parameters but tensor '" + t.name +
                             "' was registered without one; pass its parameter to gw_sync_register");
  std::vector<std::unique_ptr<Exchange>> running;
  for (uint32_t b = 0; b < buckets_.size(); ++b) running.push_back(start_parameter_exchange(b));
  for (uint32_t b = 0; b < buckets_.size(); ++b) finish_parameter_exchange(b, *running[b]);
  ctx.flags |= GW_SYNC_PARAMETERS_AVERAGED;
}

void Synchronizer::do_start_exchange(StepContext&, uint64_t slot) {
  if (slots_.count(slot))
    fail(GW_ERR_STATE, "schedule '" + schedule_->name() + "' started exchange " + std::to_string(slot) + " twice");
  std::vector<std::unique_ptr<Exchange>> running;
  for (uint32_t b = 0; b < buckets_.size(); ++b) running.push_back(early_or_start(b, false, false));
  slots_[slot] = std::move(running);
}

void Synchronizer::do_finish_exchange(StepContext& ctx, uint64_t slot) {
  auto it = slots_.find(slot);
  if (it == slots_.end())
    fail(GW_ERR_STATE, "schedule '" + schedule_->name() + "' finished exchange " + std::to_string(slot) +
                           ", which was never started (or was finished already)");
  for (uint32_t b = 0; b < buckets_.size(); ++b) {
    finish(b, *it->second[b]);
    unpack(buckets_[b], *it->second[b]);
  }
  slots_.erase(it);
  ctx.flags |= GW_SYNC_GRADIENTS_AVERAGED;
}

gw_schedule_runtime Synchronizer::runtime_for(StepContext& ctx) {
  // C callbacks: an error is kept in the context and its status returned through the plugin.
  static constexpr auto call = [](void* p, auto fn, auto... args) -> gw_status {
    auto& c = *static_cast<StepContext*>(p);
    try {
      (c.self->*fn)(c, args...);
      return GW_OK;
    } catch (const Error& e) {
      c.error = e;
      return e.status();
    } catch (const std::exception& e) {
      c.error = Error(GW_ERR_INTERNAL, std::string("internal error: ") + e.what());
      return GW_ERR_INTERNAL;
    }
  };
  gw_schedule_runtime rt{};
  rt.struct_size = sizeof rt;
  rt.ctx = &ctx;
  rt.step = steps_;
  rt.world_size = comm_->size();
  rt.sync_gradients = [](void* p) { return call(p, &Synchronizer::do_sync_gradients); };
  rt.accumulate_gradients = [](void* p) { return call(p, &Synchronizer::do_accumulate); };
  rt.sync_accumulated = [](void* p) { return call(p, &Synchronizer::do_sync_accumulated); };
  rt.sync_parameters = [](void* p) { return call(p, &Synchronizer::do_sync_parameters); };
  rt.start_gradient_exchange = [](void* p, uint64_t slot) {
    return call(p, &Synchronizer::do_start_exchange, slot);
  };
  rt.finish_gradient_exchange = [](void* p, uint64_t slot) {
    return call(p, &Synchronizer::do_finish_exchange, slot);
  };
  rt.keep_local = [](void*) { return GW_OK; };
  rt.start_outer_step = [](void* p, const gw_outer_step* step) {
    return call(p, &Synchronizer::do_start_outer, step);
  };
  rt.finish_outer_step = [](void* p, const gw_outer_step* step) {
    return call(p, &Synchronizer::do_finish_outer, step);
  };
  return rt;
}

// ---- steps --------------------------------------------------------------------------------------

void Synchronizer::bucket_ready(uint32_t bucket) {
  require_finalized("gw_sync_bucket_ready");
  Bucket& b = bucket_at(bucket);
  if (b.early) return;  // already started this step
  const Plan& p = plan();
  // A step that sends no gradients (a micro-step, a local step): nothing to start.
  if (!(p.sync_gradients || p.start_slot || p.sync_accumulated)) return;
  // A batched bucket waits for the rest of its batch (the same batch on every rank, whatever the order
  // the buckets become ready in); the last one starts them all.
  b.ready = true;
  for (uint32_t i : batch_of(bucket))
    if (!buckets_[i].ready) return;
  start_early(bucket, !(p.sync_gradients || p.start_slot));
}

void Synchronizer::end_step() {
  plan_.reset();
  for (Bucket& b : buckets_) b.ready = false;
  seq_base_ = comm_->reserve_sequence(uint32_t(buckets_.size()));
}

uint32_t Synchronizer::step() {
  require_finalized("gw_sync_step");
  plan();
  StepContext ctx{this};
  const gw_schedule_runtime rt = runtime_for(ctx);
  try {
    schedule_->on_step(rt);
  } catch (const Error&) {
    if (ctx.error) throw *ctx.error;
    throw;
  }
  for (uint32_t b = 0; b < buckets_.size(); ++b)
    if (buckets_[b].early)
      fail(GW_ERR_INTERNAL, "schedule '" + schedule_->name() + "' did not use the exchange of bucket " +
                                std::to_string(b) + " its dry run announced; its on_step must depend on its saved "
                                "state only");
  if (!(ctx.accumulated && !ctx.synced_accumulated)) ctx.flags |= GW_SYNC_APPLY;
  ++steps_;
  for (Bucket& b : buckets_) ++b.accounting.steps;
  end_step();
  // Only between exchanges: one in flight holds its bucket's codec and error feedback. Whether one is
  // depends on the schedule and the step count alone, so every rank takes the same branch.
  if (auto_recheck_steps_ > 0 && steps_ % auto_recheck_steps_ == 0 && slots_.empty() && outer_.empty() &&
      comm_->size() > 1)
    recheck_auto();
  return ctx.flags;
}

void Synchronizer::skip_step() {
  require_finalized("gw_sync_skip_step");
  bool started = false;
  for (const Bucket& b : buckets_) started = started || b.early != nullptr;
  if (started) {
    // The other ranks started the same buckets: start the rest alike, so every rank completes the same
    // collectives, then drop the results and undo what the encodings changed.
    const Plan& p = plan();
    for (uint32_t b = 0; b < buckets_.size(); ++b)
      if (!buckets_[b].early) start_early(b, !(p.sync_gradients || p.start_slot));
    for (uint32_t b = 0; b < buckets_.size(); ++b) {
      Bucket& bk = buckets_[b];
      finish(b, *bk.early, false);
      bk.early.reset();
      bk.exchanges = bk.rollback->exchanges;
      if (bk.ef && bk.rollback->residuals) bk.ef->restore(std::move(*bk.rollback->residuals));
      if (bk.rollback->velocity) bk.velocity = std::move(*bk.rollback->velocity);
      bk.rollback.reset();
    }
  }
  schedule_->step_skipped();
  end_step();
}

gw_sync_stats Synchronizer::stats(uint32_t bucket) const {
  require_finalized("gw_sync_get_stats");
  Accounting total;
  const auto add = [&](const Accounting& a) {
    total.raw_bytes += a.raw_bytes;
    total.wire_bytes += a.wire_bytes;
    total.encode_seconds += a.encode_seconds;
    total.transfer_seconds += a.transfer_seconds;
    total.decode_seconds += a.decode_seconds;
    total.syncs += a.syncs;
  };
  if (bucket == GW_SYNC_ALL_BUCKETS) {
    for (const Bucket& b : buckets_) add(b.accounting);
    total.steps = steps_;
  } else {
    const Bucket& b = const_cast<Synchronizer*>(this)->bucket_at(bucket);
    add(b.accounting);
    total.steps = b.accounting.steps;
  }
  gw_sync_stats s = GW_SYNC_STATS_INIT;
  s.raw_bytes = total.raw_bytes;
  s.wire_bytes = total.wire_bytes;
  const uint32_t n = comm_->size();
  const double dense = n > 1 ? 2.0 * double(n - 1) / double(n) * double(total.raw_bytes) : 0.0;
  s.compression_ratio = total.wire_bytes > 0 ? dense / double(total.wire_bytes) : 1.0;
  s.encode_seconds = total.encode_seconds;
  s.transfer_seconds = total.transfer_seconds;
  s.decode_seconds = total.decode_seconds;
  s.steps = total.steps;
  s.syncs = total.syncs;
  static const char* const kMixed = "mixed";
  if (bucket == GW_SYNC_ALL_BUCKETS) {
    s.codec = buckets_.empty() ? "" : buckets_.front().codec_name.c_str();
    s.codec_reason = "";
    for (const Bucket& b : buckets_)
      if (b.codec_name != buckets_.front().codec_name) s.codec = kMixed;
  } else {
    const Bucket& b = const_cast<Synchronizer*>(this)->bucket_at(bucket);
    s.codec = b.codec_name.c_str();
    s.codec_reason = b.codec_reason.c_str();
  }
  return s;
}

}  // namespace gw::sync
