#include "group/collective.hpp"

#include <gradwire/gradwire.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "core/buffer.hpp"
#include "core/bytes.hpp"
#include "core/error.hpp"

namespace gw::comm {
namespace {

constexpr uint32_t kMagic = 0x43574747u;  // "GGWC": a gradwire collective message
constexpr uint8_t kPacked = 1;

// Scratch buffers of finished collectives, kept for the next ones on this thread (a communicator is used
// by one thread at a time). At most kPoolBuffers buffers.
constexpr size_t kPoolBuffers = 4;
thread_local std::vector<std::pair<Buffer, uint64_t>> t_scratch_pool;

std::pair<Buffer, uint64_t> take_scratch(uint64_t bytes) {
  size_t best = t_scratch_pool.size();
  for (size_t i = 0; i < t_scratch_pool.size(); ++i)
    if (t_scratch_pool[i].second >= bytes && (best == t_scratch_pool.size() || t_scratch_pool[i].second < t_scratch_pool[best].second))
      best = i;
  if (best == t_scratch_pool.size()) return {allocate_buffer(bytes), bytes};
  auto found = std::move(t_scratch_pool[best]);
  t_scratch_pool.erase(t_scratch_pool.begin() + long(best));
  return found;
}

void give_back_scratch(Buffer data, uint64_t size) {
  if (!data) return;
  t_scratch_pool.emplace_back(std::move(data), size);
  if (t_scratch_pool.size() > kPoolBuffers) {  // drop the smallest
    auto smallest = std::min_element(t_scratch_pool.begin(), t_scratch_pool.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
    t_scratch_pool.erase(smallest);
  }
}


std::string dtype_text(uint32_t dtype) {
  const char* name = gw_dtype_name(gw_dtype(dtype));
  return name ? name : "?";
}

}  // namespace

const char* kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::Allreduce: return "allreduce";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::Allgather: return "allgather";
    case CollectiveKind::Allgatherv: return "allgatherv";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Barrier: return "barrier";
    case CollectiveKind::Alltoallv: return "alltoallv";
  }
  return "unknown collective";
}

const char* op_name(gw_reduce_op op) {
  switch (op) {
    case GW_REDUCE_SUM: return "sum";
    case GW_REDUCE_AVG: return "avg";
    case GW_REDUCE_MIN: return "min";
    case GW_REDUCE_MAX: return "max";
    default: return "?";
  }
}

std::string Signature::describe() const {
  std::string s = kind_name(kind);
  s += "(";
  if (kind == CollectiveKind::Allreduce || kind == CollectiveKind::ReduceScatter) s += std::string(op_name(op)) + ", ";
  if (kind != CollectiveKind::Barrier) s += dtype_text(dtype) + ", " + std::to_string(count) + " elements";
  if (kind == CollectiveKind::Broadcast) s += ", root " + std::to_string(root);
  if (codec_id != 0) s += ", codec id " + std::to_string(codec_id);
  return s + ")";
}

void write_message_header(unsigned char* out, const MessageHeader& h) {
  using bytes::put_le;
  put_le(out + 0, h.magic, 4);
  put_le(out + 4, h.seq, 4);
  out[8] = h.kind;
  out[9] = h.op;
  out[10] = h.dtype;
  out[11] = h.flags;
  put_le(out + 12, h.root, 4);
  put_le(out + 16, h.codec_id, 4);
  put_le(out + 20, h.step, 4);
  put_le(out + 24, h.count, 8);
  put_le(out + 32, h.bytes, 8);
}

MessageHeader read_message_header(const unsigned char* in) {
  using bytes::get_le;
  MessageHeader h;
  h.magic = uint32_t(get_le(in + 0, 4));
  h.seq = uint32_t(get_le(in + 4, 4));
  h.kind = in[8];
  h.op = in[9];
  h.dtype = in[10];
  h.flags = in[11];
  h.root = uint32_t(get_le(in + 12, 4));
  h.codec_id = uint32_t(get_le(in + 16, 4));
  h.step = uint32_t(get_le(in + 20, 4));
  h.count = get_le(in + 24, 8);
  h.bytes = get_le(in + 32, 8);
  return h;
}

struct Collective::Message {
  uint32_t id = 0;
  bool is_recv = false;
  bool exact = true;  // false: recv_upto, the size comes from the sender's header
  uint32_t peer = 0;
  uint32_t step = 0;
  void* data = nullptr;
  uint64_t bytes = 0;
  std::vector<unsigned char> staging;  // header, and the payload when packed
  PointToPoint::Op* head = nullptr;    // the header (and packed payload)
  PointToPoint::Op* body = nullptr;    // the payload of a large message
  bool head_done = false;
  bool body_done = false;
  const char* native = nullptr;  // adopt(): a transport's own operation, no header
  PointToPoint* via = nullptr;   // adopt(): the transport that owns `head`, when not p2p_
};

Collective::Collective(PointToPoint& p2p, uint32_t seq, const Signature& signature, double timeout_s,
                       std::string timeout_source)
    : p2p_(p2p),
      rank_(p2p.rank()),
      size_(p2p.size()),
      seq_(seq),
      signature_(signature),
      timeout_s_(timeout_s),
      timeout_source_(std::move(timeout_source)) {}

Collective::~Collective() {
  for (auto& m : pending_) {
    (m->via ? *m->via : p2p_).free(m->head);
    p2p_.free(m->body);
  }
  // The coroutine frames reference this object; destroy them before the members they use.
  task_ = Task();
  for (auto& s : scratch_) give_back_scratch(std::move(s.data), s.size);
}

Collective::AllAwaiter Collective::all() {
  wait_started_ = std::chrono::steady_clock::now();
  return AllAwaiter{*this};
}

unsigned char* Collective::scratch(unsigned slot, uint64_t bytes) {
  if (scratch_.size() <= slot) scratch_.resize(slot + 1);
  Scratch& s = scratch_[slot];
  if (s.size < bytes || !s.data) {
    auto [data, size] = take_scratch(std::max<uint64_t>(bytes, 1));
    if (s.data && s.size > 0) std::memcpy(data.get(), s.data.get(), s.size);  // keep what was there
    give_back_scratch(std::move(s.data), s.size);
    s.data = std::move(data);
    s.size = size;
  }
  return s.data.get();
}

void Collective::set_group(std::vector<uint32_t> members, uint32_t step_base) {
  group_rank_ = 0;
  bool found = members.empty();
  for (uint32_t i = 0; i < members.size(); ++i) {
    if (members[i] >= size_) fail(GW_ERR_INTERNAL, "collective group names rank " + std::to_string(members[i]));
    if (members[i] == rank_) {
      group_rank_ = i;
      found = true;
    }
  }
  if (!found) fail(GW_ERR_INTERNAL, "collective group without rank " + std::to_string(rank_));
  group_ = std::move(members);
  step_base_ = group_.empty() ? 0 : step_base;
}

uint32_t Collective::send(uint32_t peer, uint32_t step, const void* data, uint64_t bytes) {
  if (!group_.empty()) {
    peer = group_.at(peer);
    step += step_base_;
  }
  auto m = std::make_unique<Message>();
  m->id = uint32_t(received_.size());
  received_.push_back(0);
  bytes_sent_ += bytes;
  m->peer = peer;
  m->step = step;
  m->data = const_cast<void*>(data);
  m->bytes = bytes;
  const bool packed = bytes <= kPackedLimit;
  MessageHeader h{};
  h.magic = kMagic;
  h.seq = seq_;
  h.kind = uint8_t(signature_.kind);
  h.op = uint8_t(signature_.op);
  h.dtype = uint8_t(signature_.dtype);
  h.flags = packed ? kPacked : 0;
  h.root = signature_.root;
  h.codec_id = signature_.codec_id;
  h.step = step;
  h.count = signature_.count;
  h.bytes = bytes;
  m->staging.resize(kMessageHeaderBytes + (packed ? bytes : 0));
  write_message_header(m->staging.data(), h);
  if (packed && bytes > 0) std::memcpy(m->staging.data() + kMessageHeaderBytes, data, bytes);
  const uint64_t tag = tags::collective(seq_, step);
  m->head = p2p_.send(peer, tag, m->staging.data(), m->staging.size());
  if (!packed) m->body = p2p_.send(peer, tag | tags::kPayload, data, bytes);
  m->body_done = packed;
  const uint32_t id = m->id;
  pending_.push_back(std::move(m));
  return id;
}

uint32_t Collective::recv(uint32_t peer, uint32_t step, void* data, uint64_t bytes) {
  return start_recv(peer, step, data, bytes, true);
}

uint32_t Collective::recv_upto(uint32_t peer, uint32_t step, void* data, uint64_t capacity) {
  return start_recv(peer, step, data, capacity, false);
}

uint32_t Collective::start_recv(uint32_t peer, uint32_t step, void* data, uint64_t bytes, bool exact) {
  if (!group_.empty()) {
    peer = group_.at(peer);
    step += step_base_;
  }
  auto m = std::make_unique<Message>();
  m->id = uint32_t(received_.size());
  received_.push_back(0);
  m->is_recv = true;
  m->exact = exact;
  m->peer = peer;
  m->step = step;
  m->data = data;
  m->bytes = bytes;
  // Room for a packed payload even when this rank expects a large one: a sender that disagrees about
  // the size must still deliver its header so the difference can be reported.
  m->staging.resize(kMessageHeaderBytes + std::max(bytes <= kPackedLimit ? bytes : 0, kPackedLimit));
  const uint64_t tag = tags::collective(seq_, step);
  m->head = p2p_.recv(peer, tag, m->staging.data(), m->staging.size());
  // A receive of unknown size posts its payload receive once the header said how large it is.
  if (exact && bytes > kPackedLimit) m->body = p2p_.recv(peer, tag | tags::kPayload, data, bytes);
  m->body_done = !exact || bytes <= kPackedLimit;
  const uint32_t id = m->id;
  pending_.push_back(std::move(m));
  return id;
}

uint32_t Collective::adopt(PointToPoint::Op* op, const char* what, PointToPoint* via) {
  auto m = std::make_unique<Message>();
  m->id = uint32_t(received_.size());
  received_.push_back(0);
  m->peer = rank_;
  m->native = what;
  m->via = via;
  m->head = op;
  m->body_done = true;
  const uint32_t id = m->id;
  pending_.push_back(std::move(m));
  return id;
}

std::vector<std::string> signature_differences(const Signature& theirs, const Signature& mine) {
  std::vector<std::string> diffs;
  if (theirs.kind != mine.kind)
    diffs.push_back(std::string("collective: ") + kind_name(theirs.kind) + " vs " + kind_name(mine.kind));
  if (theirs.op != mine.op) diffs.push_back(std::string("op: ") + op_name(theirs.op) + " vs " + op_name(mine.op));
  if (theirs.dtype != mine.dtype) diffs.push_back("dtype: " + dtype_text(theirs.dtype) + " vs " + dtype_text(mine.dtype));
  if (theirs.count != mine.count)
    diffs.push_back("count: " + std::to_string(theirs.count) + " vs " + std::to_string(mine.count));
  if (theirs.root != mine.root) diffs.push_back("root: " + std::to_string(theirs.root) + " vs " + std::to_string(mine.root));
  if (theirs.codec_id != mine.codec_id)
    diffs.push_back("codec id: " + std::to_string(theirs.codec_id) + " vs " + std::to_string(mine.codec_id));
  return diffs;
}

std::string mismatch_message(uint32_t seq, uint32_t their_rank, const Signature& theirs, uint32_t my_rank,
                             const Signature& mine, const std::vector<std::string>& differences) {
  const std::string who = "rank " + std::to_string(their_rank);
  std::string text = "collective #" + std::to_string(seq) + ": ranks disagree. " + who + " called " + theirs.describe() +
                     ", rank " + std::to_string(my_rank) + " called " + mine.describe() + ". Differences (" + who +
                     " vs rank " + std::to_string(my_rank) + "): ";
  for (size_t i = 0; i < differences.size(); ++i) text += (i ? "; " : "") + differences[i];
  return text + ". Every rank must call the same collectives in the same order with the same count, dtype and op.";
}

void Collective::check_header(const Message& m, uint64_t received) const {
  const std::string who = "rank " + std::to_string(m.peer);
  if (received < kMessageHeaderBytes)
    fail(GW_ERR_CORRUPT, "collective #" + std::to_string(seq_) + ": " + who + " sent a " + std::to_string(received) +
                             "-byte message, shorter than a message header (is it running another gradwire "
                             "version?)");
  const MessageHeader h = read_message_header(m.staging.data());
  if (h.magic != kMagic)
    fail(GW_ERR_CORRUPT, "collective #" + std::to_string(seq_) + ": " + who +
                             " sent a message without the collective header magic (another gradwire version, "
                             "or memory corruption)");
  Signature theirs;
  theirs.kind = CollectiveKind(h.kind);
  theirs.op = gw_reduce_op(h.op);
  theirs.dtype = gw_dtype(h.dtype);
  theirs.count = h.count;
  theirs.root = h.root;
  theirs.codec_id = h.codec_id;
  std::vector<std::string> diffs;
  if (h.seq != seq_)
    diffs.push_back("collective number: " + who + " is at #" + std::to_string(h.seq) + ", this rank at #" +
                    std::to_string(seq_));
  for (auto& d : signature_differences(theirs, signature_)) diffs.push_back(std::move(d));
  if (diffs.empty() && (h.step != m.step || (m.exact ? h.bytes != m.bytes : h.bytes > m.bytes)))
    diffs.push_back("message " + std::to_string(h.step) + " of " + std::to_string(h.bytes) + " bytes vs message " +
                    std::to_string(m.step) + " of " + (m.exact ? "" : "at most ") + std::to_string(m.bytes) +
                    " bytes (the ranks chose different algorithms, block sizes or codec settings)");
  if (diffs.empty() && (h.flags & kPacked) && received != kMessageHeaderBytes + h.bytes)
    fail(GW_ERR_CORRUPT, "collective #" + std::to_string(seq_) + ": " + who + " sent " + std::to_string(received) +
                             " bytes where its header announces " + std::to_string(kMessageHeaderBytes + h.bytes));
  if (!diffs.empty()) fail(GW_ERR_MISMATCH, mismatch_message(seq_, m.peer, theirs, rank_, signature_, diffs));
}

bool Collective::poll_message(Message& m) {
  uint64_t received = 0;
  if (!m.head_done) {
    PointToPoint& owner = m.via ? *m.via : p2p_;
    if (!owner.test(m.head, &received)) return false;
    m.head_done = true;
    owner.free(m.head);
    m.head = nullptr;
    if (m.is_recv) {
      check_header(m, received);
      if (!m.exact) {
        m.bytes = read_message_header(m.staging.data()).bytes;
        if (!(read_message_header(m.staging.data()).flags & kPacked)) {
          m.body = p2p_.recv(m.peer, tags::collective(seq_, m.step) | tags::kPayload, m.data, m.bytes);
          m.body_done = false;
        }
      }
      if (m.body == nullptr && m.bytes > 0)
        std::memcpy(m.data, m.staging.data() + kMessageHeaderBytes, m.bytes);
      received_[m.id] = m.bytes;
    }
  }
  if (!m.body_done) {
    if (!p2p_.test(m.body, &received)) return false;
    m.body_done = true;
    p2p_.free(m.body);
    m.body = nullptr;
    if (m.is_recv && received != m.bytes)
      fail(GW_ERR_CORRUPT, "collective #" + std::to_string(seq_) + ": rank " + std::to_string(m.peer) + " sent " +
                               std::to_string(received) + " payload bytes, its header announced " +
                               std::to_string(m.bytes));
  }
  return true;
}

double Collective::waited() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_started_).count();
}

void Collective::fail_timeout(const std::string& detail) const {
  std::set<std::string> seen;
  std::string peers;
  for (const auto& m : pending_) {
    const std::string what = m->native ? std::string("the transport's ") + m->native
                                       : std::string(m->is_recv ? "from" : "to") + " rank " + std::to_string(m->peer);
    if (seen.insert(what).second) peers += (peers.empty() ? "" : ", ") + what;
  }
  fail(GW_ERR_TIMEOUT, "collective #" + std::to_string(seq_) + " " + signature_.describe() + ": rank " +
                           std::to_string(rank_) + " waited " + std::to_string(int(waited())) +
                           " s for messages (" + peers +
                           ") without progress; that rank is stuck, gone, or called a different collective "
                           "(" + timeout_source_ + ")" + detail);
}

void Collective::start(Task algorithm) {
  task_ = std::move(algorithm);
  resume_point_ = task_.handle();
  wait_started_ = std::chrono::steady_clock::now();
}

bool Collective::poll_pending() {
  size_t kept = 0, i = 0;
  try {
    for (; i < pending_.size(); ++i) {
      if (poll_message(*pending_[i])) {
        completed_.push_back(pending_[i]->id);
      } else {
        pending_[kept++] = std::move(pending_[i]);
      }
    }
  } catch (...) {
    // A message failed (a peer died): keep it and those not reached yet, without the holes the moves
    // above left, so that the destructor frees every operation still in flight.
    for (; i < pending_.size(); ++i) pending_[kept++] = std::move(pending_[i]);
    pending_.resize(kept);
    throw;
  }
  pending_.resize(kept);
  return pending_.empty();
}

void Collective::check() {
  p2p_.progress();
  poll_pending();
}

std::vector<uint32_t> Collective::take_completed() { return std::exchange(completed_, {}); }

Collective::AnyAwaiter Collective::any() {
  wait_started_ = std::chrono::steady_clock::now();
  return AnyAwaiter{*this};
}

bool Collective::poll() {
  for (;;) {
    if (task_.done()) {
      task_.rethrow_error();
      return true;
    }
    const bool all_done = poll_pending();
    if (waiting_any_ ? completed_.empty() : !all_done) return false;
    if (!waiting_any_) completed_.clear();  // an all() algorithm never asks which completed
    auto h = std::exchange(resume_point_, {});
    if (!h) fail(GW_ERR_INTERNAL, "collective #" + std::to_string(seq_) + " has nothing to resume");
    h.resume();
  }
}

}  // namespace gw::comm
