#include "ps/ps.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "comm/allreduce_start.hpp"
#include "core/error.hpp"
#include "group/collective.hpp"

namespace gw::ps {
namespace {

using Clock = std::chrono::steady_clock;

// Tags of their own: the application's point-to-point space (bit 39) with bit 36 set, which the
// application's 32-bit tags never reach.
constexpr uint64_t kPsTags = comm::tags::kUser | (uint64_t{1} << 36);
constexpr uint64_t kPushTag = kPsTags | 1;
constexpr uint64_t kReplyTag = kPsTags | 2;
constexpr uint32_t kMagic = 0x53505747u;  // "GWPS"
constexpr uint64_t kTextLimit = 1024;     // failure texts are cut to this

enum PushKind : uint32_t { kPush = 1, kDone = 2, kAbort = 3 };
enum ReplyKind : uint32_t { kParams = 1, kDropped = 2, kFailed = 3 };

struct PushHeader {
  uint32_t magic = kMagic;
  uint32_t kind = kPush;
  uint64_t version = 0;  // the version of the shard the gradient was computed on
  uint64_t step = 0;     // the worker's pushes to this shard so far (the codec context's step)
  float lr = 0;
  uint32_t codec = 0;    // the codec's id; 0: raw f32
  uint64_t payload = 0;  // bytes after the header
};
struct ReplyHeader {
  uint32_t magic = kMagic;
  uint32_t kind = kParams;
  uint64_t version = 0;
  uint64_t payload = 0;  // bytes after the header: f32 x shard count, or a text
};

template <class T>
T read_header(const unsigned char* p, uint64_t bytes, const std::string& from) {
  T h;
  if (bytes < sizeof(T)) fail(GW_ERR_CORRUPT, "parameter server: a " + std::to_string(bytes) + "-byte message from " + from + " is shorter than its header");
  std::memcpy(&h, p, sizeof(T));
  if (h.magic != kMagic || h.payload != bytes - sizeof(T))
    fail(GW_ERR_CORRUPT, "parameter server: a message from " + from + " is not a parameter-server message (bad magic "
                         "or length); do all ranks run gw_ps with the same gradwire?");
  return h;
}

// Waits (driving the transport) until `op` completes; throws its error, or GW_ERR_TIMEOUT after `timeout_s`.
uint64_t wait_op(comm::PointToPoint& p2p, comm::PointToPoint::Op* op, double timeout_s, const std::string& what) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  uint64_t bytes = 0;
  try {
    while (!p2p.test(op, &bytes)) {
      p2p.progress();
      if (Clock::now() > deadline)
        fail(GW_ERR_TIMEOUT, what + " did not complete within [runtime] timeout_s = " + std::to_string(timeout_s) + " s");
      std::this_thread::yield();
    }
  } catch (...) {
    p2p.free(op);
    throw;
  }
  p2p.free(op);
  return bytes;
}

std::string rank_text(uint32_t r) { return "rank " + std::to_string(r); }

}  // namespace

std::vector<Shard> shards_of(uint64_t count, uint32_t servers) {
  std::vector<Shard> out(servers);
  for (uint32_t s = 0; s < servers; ++s) out[s] = {count * s / servers, count * (s + 1) / servers};
  return out;
}

// A worker's link to one server: its error feedback, the message buffers and the last version pulled.
struct ParameterServer::WorkerShard {
  std::unique_ptr<ErrorFeedback> ef;
  std::vector<unsigned char> out, in;
  comm::PointToPoint::Op* send = nullptr;
  comm::PointToPoint::Op* recv = nullptr;
  uint64_t version = 0;
  uint64_t step = 0;
};

// A server's link to one worker.
struct ParameterServer::Peer {
  uint32_t rank = 0;
  std::vector<unsigned char> in, out;
  comm::PointToPoint::Op* recv = nullptr;
  comm::PointToPoint::Op* send = nullptr;
  bool done = false, dead = false, pushed = false;  // pushed: in this synchronous round
  bool reply_waiting = false;                        // a reply is due once the previous send finished
  bool reply_dropped = false;
  Clock::time_point heard = Clock::now();
};

ParameterServer::ParameterServer(comm::Communicator& comm, const Runtime& runtime, const gw_ps_options& o,
                                 const gw_tensor& parameters)
    : comm_(comm), p2p_(comm.p2p()), rank_(comm.rank()), size_(comm.size()) {
  if (parameters.memory != GW_MEMORY_HOST || parameters.dtype != GW_DTYPE_F32)
    fail(GW_ERR_UNSUPPORTED, "gw_ps_create: the parameters must be an f32 tensor in host memory");
  if (parameters.count > 0 && parameters.data == nullptr)
    fail(GW_ERR_INVALID_ARGUMENT, "gw_ps_create: the parameters' data is NULL");
  if (o.servers == 0 || o.servers >= size_)
    fail(GW_ERR_INVALID_ARGUMENT, "gw_ps_create: options->servers is " + std::to_string(o.servers) + " with " +
                                      std::to_string(size_) + " ranks; give 1 .. " + std::to_string(size_ - 1) +
                                      " (the other ranks are the workers)");
  if (o.mode != GW_PS_SYNC && o.mode != GW_PS_ASYNC)
    fail(GW_ERR_INVALID_ARGUMENT, "gw_ps_create: options->mode must be GW_PS_SYNC or GW_PS_ASYNC");
  if (!(o.momentum >= 0.0f && o.momentum < 1.0f))
    fail(GW_ERR_INVALID_ARGUMENT, "gw_ps_create: options->momentum must be in [0, 1)");
  if (o.flags != 0) fail(GW_ERR_INVALID_ARGUMENT, "gw_ps_create: options->flags is reserved; pass 0");
  servers_ = o.servers;
  mode_ = o.mode;
  staleness_ = o.staleness;
  momentum_ = o.momentum;
  timeout_s_ = comm.settings().timeout_s;
  parameters_ = static_cast<float*>(parameters.data);
  count_ = parameters.count;
  if (count_ < servers_)
    fail(GW_ERR_INVALID_ARGUMENT, "gw_ps_create: " + std::to_string(count_) + " parameters cannot be sharded over " +
                                      std::to_string(servers_) + " servers");
  // Every rank must hold the same number of parameters: compare the largest and the smallest.
  {
    double extremes[2] = {double(count_), -double(count_)};
    gw_request* r = comm::start_allreduce_dense(comm_, extremes, 2, GW_DTYPE_F64, GW_REDUCE_MAX);
    const gw_status st = comm_.wait(r, -1.0);
    const std::string error = r->error;
    comm_.free(r);
    if (st != GW_OK) fail(st, "gw_ps_create: comparing the parameter counts: " + error);
    if (extremes[0] != -extremes[1])
      fail(GW_ERR_MISMATCH, "gw_ps_create: the ranks pass different parameter counts (from " +
                                std::to_string(uint64_t(-extremes[1])) + " to " + std::to_string(uint64_t(extremes[0])) +
                                "); every rank passes the whole model");
  }
  const config::Config& cfg = runtime.config();
  const std::string codec = cfg.get_string("codec", "name");
  if (codec != "none") codec_ = runtime.make_codec(codec);
  error_feedback_ = codec_ && cfg.get_bool("codec", "error_feedback") &&
                    !(codec_->properties().flags & GW_CODEC_LOSSLESS);
  seed_ = uint64_t(cfg.get_int("codec", "seed"));
  shards_ = shards_of(count_, servers_);

  // The initial pull: every server sends its shard of its own parameters to every worker.
  if (is_server()) {
    mine_ = shards_[rank_];
    shard_.assign(parameters_ + mine_.begin, parameters_ + mine_.end);
    velocity_.assign(mine_.count(), 0.0f);
    for (uint32_t w = 0; w < workers(); ++w) {
      auto p = std::make_unique<Peer>();
      p->rank = servers_ + w;
      const uint64_t payload = codec_ ? codec_->max_payload_size(GW_DTYPE_F32, mine_.count()) : 4 * mine_.count();
      p->in.resize(sizeof(PushHeader) + std::max(payload, kTextLimit));
      peers_.push_back(std::move(p));
    }
    for (auto& p : peers_) reply(p->rank - servers_, false);
    for (auto& p : peers_) {
      try {
        wait_op(p2p_, p->send, timeout_s_, "the initial parameters to worker " + rank_text(p->rank));
      } catch (const Error&) {
        p->dead = true;
      }
      p->send = nullptr;
    }
  } else {
    for (uint32_t s = 0; s < servers_; ++s) {
      auto ws = std::make_unique<WorkerShard>();
      const uint64_t n = shards_[s].count();
      if (error_feedback_) ws->ef = std::make_unique<ErrorFeedback>(*codec_);
      ws->out.resize(sizeof(PushHeader) + (codec_ ? codec_->max_payload_size(GW_DTYPE_F32, n) : 4 * n));
      ws->in.resize(sizeof(ReplyHeader) + std::max(4 * n, kTextLimit));
      worker_shards_.push_back(std::move(ws));
    }
    for (uint32_t s = 0; s < servers_; ++s) {
      WorkerShard& ws = *worker_shards_[s];
      try {
        const uint64_t bytes = wait_op(p2p_, p2p_.recv(s, kReplyTag, ws.in.data(), ws.in.size()), timeout_s_,
                                       "the initial parameters from server " + rank_text(s));
        const auto h = read_header<ReplyHeader>(ws.in.data(), bytes, "server " + rank_text(s));
        if (h.payload != 4 * shards_[s].count()) fail(GW_ERR_MISMATCH, "the shard sizes differ");
        std::memcpy(parameters_ + shards_[s].begin, ws.in.data() + sizeof(ReplyHeader), h.payload);
      } catch (const Error& e) {
        server_failed(s, e.what());
      }
    }
  }
}

ParameterServer::~ParameterServer() {
  leave();
  for (auto& ws : worker_shards_) {
    if (ws->send) p2p_.free(ws->send);
    if (ws->recv) p2p_.free(ws->recv);
  }
  for (auto& p : peers_) {
    if (p->send) p2p_.free(p->send);
    if (p->recv) p2p_.free(p->recv);
  }
}

[[noreturn]] void ParameterServer::server_failed(uint32_t server, const std::string& why) {
  const std::string message = "parameter server " + rank_text(server) + " (shard " + std::to_string(shards_[server].begin) +
                              ".." + std::to_string(shards_[server].end) + ") failed: " + why;
  // Tell the other servers, so they stop with the same message instead of waiting for this worker.
  std::string text = "worker " + rank_text(rank_) + " reports: " + message;
  text.resize(std::min<uint64_t>(text.size(), kTextLimit));
  PushHeader h;
  h.kind = kAbort;
  h.payload = text.size();
  std::vector<unsigned char> msg(sizeof h + text.size());
  std::memcpy(msg.data(), &h, sizeof h);
  std::memcpy(msg.data() + sizeof h, text.data(), text.size());
  for (uint32_t s = 0; s < servers_; ++s) {
    if (s == server) continue;
    try {
      wait_op(p2p_, p2p_.send(s, kPushTag, msg.data(), msg.size()), 2.0, "the failure notice");
    } catch (const Error&) {
    }
  }
  left_ = true;
  fail(GW_ERR_TRANSPORT, message);
}

void ParameterServer::push_pull(const gw_tensor& gradient, float lr) {
  if (is_server()) fail(GW_ERR_STATE, "gw_ps_push_pull on server " + rank_text(rank_) + "; servers call gw_ps_serve");
  if (left_) fail(GW_ERR_STATE, "gw_ps_push_pull after a failure; destroy the parameter server");
  if (gradient.memory != GW_MEMORY_HOST || gradient.dtype != GW_DTYPE_F32 || gradient.count != count_)
    fail(GW_ERR_INVALID_ARGUMENT, "gw_ps_push_pull: the gradient must be an f32 host tensor of " +
                                      std::to_string(count_) + " elements (the parameters' count)");
  if (!(std::isfinite(lr) && lr >= 0.0f)) fail(GW_ERR_INVALID_ARGUMENT, "gw_ps_push_pull: lr must be finite and >= 0");
  const float* g = static_cast<const float*>(gradient.data);
  for (uint32_t s = 0; s < servers_; ++s) {
    WorkerShard& ws = *worker_shards_[s];
    const Shard& sh = shards_[s];
    gw_tensor in = GW_TENSOR_INIT;
    in.dtype = GW_DTYPE_F32;
    in.data = const_cast<float*>(g + sh.begin);
    in.count = sh.count();
    PushHeader h;
    h.version = ws.version;
    h.step = ws.step;
    h.lr = lr;
    unsigned char* payload = ws.out.data() + sizeof h;
    const uint64_t capacity = ws.out.size() - sizeof h;
    if (codec_) {
      gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
      ctx.seed = seed_ + s;
      ctx.step = ws.step;
      h.codec = codec_->id();
      h.payload = ws.ef ? ws.ef->encode(0, ctx, in, payload, capacity) : codec_->encode(ctx, in, payload, capacity);
    } else {
      h.payload = 4 * sh.count();
      std::memcpy(payload, in.data, h.payload);
    }
    std::memcpy(ws.out.data(), &h, sizeof h);
    ++ws.step;
    stats_.wire_bytes += sizeof h + h.payload;
    try {
      ws.recv = p2p_.recv(s, kReplyTag, ws.in.data(), ws.in.size());
      ws.send = p2p_.send(s, kPushTag, ws.out.data(), sizeof h + h.payload);
    } catch (const Error& e) {
      server_failed(s, e.what());
    }
  }
  ++stats_.pushes;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s_);
  for (bool pending = true; pending;) {
    pending = false;
    bool moved = false;
    p2p_.progress();
    for (uint32_t s = 0; s < servers_; ++s) {
      WorkerShard& ws = *worker_shards_[s];
      uint64_t bytes = 0;
      try {
        if (ws.send && p2p_.test(ws.send, &bytes)) {
          p2p_.free(ws.send);
          ws.send = nullptr;
          moved = true;
        }
        if (ws.recv && p2p_.test(ws.recv, &bytes)) {
          p2p_.free(ws.recv);
          ws.recv = nullptr;
          moved = true;
          const auto h = read_header<ReplyHeader>(ws.in.data(), bytes, "server " + rank_text(s));
          if (h.kind == kFailed) {
            // The server stopped because of another failure, which its text names: pass it on as it is.
            for (auto& other : worker_shards_) {
              if (other->send) p2p_.free(other->send), other->send = nullptr;
              if (other->recv) p2p_.free(other->recv), other->recv = nullptr;
            }
            left_ = true;
            throw Error(GW_ERR_TRANSPORT, "parameter server " + rank_text(s) + " stopped: " +
                                              std::string(reinterpret_cast<const char*>(ws.in.data()) + sizeof h, h.payload));
          }
          if (h.payload != 4 * shards_[s].count()) fail(GW_ERR_CORRUPT, "a reply of the wrong size");
          std::memcpy(parameters_ + shards_[s].begin, ws.in.data() + sizeof h, h.payload);
          ws.version = h.version;
          stats_.version = std::max(stats_.version, h.version);
          if (h.kind == kDropped) ++stats_.dropped;
        }
      } catch (const Error& e) {
        if (left_) throw;  // a failure a server reported
        for (auto& other : worker_shards_) {
          if (other->send) p2p_.free(other->send), other->send = nullptr;
          if (other->recv) p2p_.free(other->recv), other->recv = nullptr;
        }
        server_failed(s, e.what());
      }
      pending = pending || ws.send || ws.recv;
      if ((ws.send || ws.recv) && Clock::now() > deadline) {
        for (auto& other : worker_shards_) {
          if (other->send) p2p_.free(other->send), other->send = nullptr;
          if (other->recv) p2p_.free(other->recv), other->recv = nullptr;
        }
        server_failed(s, "no answer within [runtime] timeout_s = " + std::to_string(timeout_s_) + " s");
      }
    }
    if (pending && !moved) std::this_thread::yield();
  }
}

void ParameterServer::leave() noexcept {
  if (is_server() || left_) return;
  left_ = true;
  PushHeader h;
  h.kind = kDone;
  for (uint32_t s = 0; s < servers_; ++s) {
    try {
      wait_op(p2p_, p2p_.send(s, kPushTag, &h, sizeof h), std::min(timeout_s_, 10.0), "the goodbye");
    } catch (const Error&) {
    }
  }
}

void ParameterServer::apply(std::vector<float>& g, float scale, float lr, float momentum) {
  float* v = velocity_.data();
  float* p = shard_.data();
  for (uint64_t i = 0; i < g.size(); ++i) {
    v[i] = momentum * v[i] + g[i] * scale;
    p[i] -= lr * v[i];
  }
}

void ParameterServer::decode_push(const unsigned char* message, uint64_t bytes, std::vector<float>& out,
                                  uint32_t worker) {
  const std::string from = "worker " + rank_text(servers_ + worker);
  const auto h = read_header<PushHeader>(message, bytes, from);
  const uint32_t want = codec_ ? codec_->id() : 0;
  if (h.codec != want)
    fail(GW_ERR_MISMATCH, "parameter server " + rank_text(rank_) + ": " + from + " pushed with codec id " +
                              std::to_string(h.codec) + ", this server decodes codec id " + std::to_string(want) +
                              "; every rank needs the same [codec] name");
  out.resize(mine_.count());
  if (codec_) {
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    ctx.seed = seed_ + rank_;
    ctx.step = h.step;
    gw_tensor t = GW_TENSOR_INIT;
    t.dtype = GW_DTYPE_F32;
    t.data = out.data();
    t.count = out.size();
    codec_->decode(ctx, message + sizeof h, h.payload, t, 0);
  } else {
    if (h.payload != 4 * out.size()) fail(GW_ERR_CORRUPT, from + " pushed a gradient of the wrong size");
    std::memcpy(out.data(), message + sizeof h, h.payload);
  }
}

// Sends this server's shard to `worker` (or marks it due, when the previous reply is still in flight).
void ParameterServer::reply(uint32_t worker, bool dropped) {
  Peer& p = *peers_[worker];
  if (p.dead) return;
  if (p.send) {
    p.reply_waiting = true;
    p.reply_dropped = dropped;
    return;
  }
  ReplyHeader h;
  h.kind = dropped ? kDropped : kParams;
  h.version = version_;
  h.payload = 4 * shard_.size();
  p.out.resize(sizeof h + h.payload);
  std::memcpy(p.out.data(), &h, sizeof h);
  if (mode_ == GW_PS_ASYNC) {
    // The look-ahead pull (serve() explains it): p - lookahead_ v.
    auto* out = reinterpret_cast<float*>(p.out.data() + sizeof h);
    for (size_t i = 0; i < shard_.size(); ++i) out[i] = shard_[i] - lookahead_ * velocity_[i];
  } else {
    std::memcpy(p.out.data() + sizeof h, shard_.data(), h.payload);
  }
  stats_.wire_bytes += p.out.size();
  try {
    p.send = p2p_.send(p.rank, kReplyTag, p.out.data(), p.out.size());
  } catch (const Error&) {
    p.dead = true;
  }
}

void ParameterServer::serve() {
  if (!is_server()) fail(GW_ERR_STATE, "gw_ps_serve on worker " + rank_text(rank_) + "; workers call gw_ps_push_pull");
  // Asynchronous: a push is 1/W of a round. The momentum decays per push as m^(1/W), so it spans as many
  // rounds as in synchronous mode, and the step is lr / W: W pushes then move the parameters as far as
  // one synchronous step (v tends to g / (1 - m) in both).
  const float scale_async = 1.0f / float(workers());
  const float momentum_async = std::pow(momentum_, scale_async);
  // The look-ahead pull: a reply carries where the shard will be once the other W - 1 workers pushed
  // once more, if their pushes only carried the velocity on: p - (lr / W) (b + b^2 + ... + b^(W-1)) v,
  // b = momentum_async, lr that of the last push applied. The worker's next gradient is applied about
  // W - 1 pushes after the reply, so computing it there instead of at p takes most of its staleness away
  // (as DANA does for asynchronous SGD with momentum). docs/ps.md has the measurements.
  float ahead_sum = 0, bk = 1;
  for (uint32_t k = 1; k < workers(); ++k) ahead_sum += (bk *= momentum_async);
  std::vector<float> sum(mine_.count(), 0.0f), g;
  float round_lr = 0;
  uint32_t arrived = 0;
  const auto mark_dead = [&](Peer& p) {
    if (p.dead) return;
    p.dead = true;
    ++stats_.dead_workers;
    if (p.recv) p2p_.free(p.recv), p.recv = nullptr;
    if (p.send) p2p_.free(p.send), p.send = nullptr;
    if (p.pushed) {
      // Its push of this round stays in the sum: it was computed like the others'.
      p.pushed = false;
    }
  };
  const auto abort_all = [&](const std::string& text) {
    ReplyHeader h;
    h.kind = kFailed;
    const std::string t = text.substr(0, kTextLimit);
    h.payload = t.size();
    std::vector<unsigned char> msg(sizeof h + t.size());
    std::memcpy(msg.data(), &h, sizeof h);
    std::memcpy(msg.data() + sizeof h, t.data(), t.size());
    for (auto& p : peers_) {
      if (p->dead || p->done) continue;
      if (p->send) p2p_.free(p->send), p->send = nullptr;
      try {
        wait_op(p2p_, p2p_.send(p->rank, kReplyTag, msg.data(), msg.size()), 2.0, "the failure notice");
      } catch (const Error&) {
      }
    }
  };
  for (auto& p : peers_)
    if (!p->dead) p->recv = p2p_.recv(p->rank, kPushTag, p->in.data(), p->in.size());
  for (;;) {
    bool active = false, moved = false;
    for (auto& p : peers_) active = active || (!p->done && !p->dead);
    if (!active) break;
    p2p_.progress();
    const auto now = Clock::now();
    for (uint32_t w = 0; w < peers_.size(); ++w) {
      Peer& p = *peers_[w];
      if (p.dead) continue;
      uint64_t bytes = 0;
      try {
        if (p.send && p2p_.test(p.send, &bytes)) {
          p2p_.free(p.send);
          p.send = nullptr;
          moved = true;
          if (p.reply_waiting) {
            p.reply_waiting = false;
            reply(w, p.reply_dropped);
          }
        }
      } catch (const Error&) {
        mark_dead(p);
        continue;
      }
      if (!p.recv) continue;
      bool got = false;
      try {
        got = p2p_.test(p.recv, &bytes);
      } catch (const Error&) {
        mark_dead(p);
        continue;
      }
      if (!got) {
        // A worker silent for timeout_s is taken for dead (a transport that cannot see a peer die).
        if (!p.pushed && now - p.heard > std::chrono::duration<double>(timeout_s_)) mark_dead(p);
        continue;
      }
      moved = true;
      p2p_.free(p.recv);
      p.recv = nullptr;
      p.heard = now;
      PushHeader h;
      try {
        h = read_header<PushHeader>(p.in.data(), bytes, "worker " + rank_text(p.rank));
      } catch (const Error&) {
        mark_dead(p);
        continue;
      }
      if (h.kind == kDone) {
        p.done = true;
        continue;
      }
      if (h.kind == kAbort) {
        const std::string text(reinterpret_cast<const char*>(p.in.data()) + sizeof h, h.payload);
        abort_all(text);
        fail(GW_ERR_TRANSPORT, text);
      }
      try {
        decode_push(p.in.data(), bytes, g, w);
      } catch (const Error& e) {
        abort_all(e.what());
        throw;
      }
      if (mode_ == GW_PS_SYNC) {
        if (p.pushed)
          fail(GW_ERR_STATE, "parameter server " + rank_text(rank_) + ": worker " + rank_text(p.rank) +
                                 " pushed twice in one synchronous round");
        for (uint64_t i = 0; i < g.size(); ++i) sum[i] += g[i];
        p.pushed = true;
        round_lr = h.lr;
        ++arrived;
      } else {
        const uint64_t stale = version_ - std::min(version_, h.version);
        if (stale > staleness_) {
          ++stats_.dropped;
          reply(w, true);
        } else {
          apply(g, scale_async, h.lr * scale_async, momentum_async);
          lookahead_ = h.lr * scale_async * ahead_sum;
          ++version_;
          ++stats_.pushes;
          reply(w, false);
        }
      }
      p.recv = p2p_.recv(p.rank, kPushTag, p.in.data(), p.in.size());
    }
    if (mode_ == GW_PS_SYNC && arrived > 0) {
      bool complete = true;
      for (auto& p : peers_) complete = complete && (p->dead || p->done || p->pushed);
      if (complete) {
        apply(sum, 1.0f / float(arrived), round_lr, momentum_);
        ++version_;
        stats_.pushes += arrived;
        std::fill(sum.begin(), sum.end(), 0.0f);
        arrived = 0;
        for (uint32_t w = 0; w < peers_.size(); ++w)
          if (peers_[w]->pushed) {
            peers_[w]->pushed = false;
            reply(w, false);
          }
      }
    }
    if (!moved) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  // The last replies in flight.
  for (auto& p : peers_)
    if (p->send && !p->dead) {
      try {
        wait_op(p2p_, p->send, 10.0, "the last reply");
      } catch (const Error&) {
      }
      p->send = nullptr;
    }
  stats_.version = version_;
  // The shard's final values go back into the caller's tensor: a server holds the trained model (its
  // shard of it) once every worker finished.
  std::copy(shard_.begin(), shard_.end(), parameters_ + mine_.begin);
}

}  // namespace gw::ps
