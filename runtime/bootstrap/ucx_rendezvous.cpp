// The rendezvous over UCX's sockaddr connection manager. Rank 0 listens at the root port; every other
// rank connects (retrying while the root is not up yet), sends [header | record] on a UCP stream and
// receives [length | status | payload]: the packed records of all ranks, or the root's error text,
// and acknowledges it. The root closes a member's endpoint only after that acknowledgement (or the
// member's own failure): a close that overtook the reply would reach a slow member as "connection reset"
// with the reply still unread, and that member would then time out instead of reporting the verdict.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "bootstrap/rendezvous.hpp"
#include "core/bytes.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace gw::bootstrap {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMagic = 0x42574747u;  // "GGWB"

// The root's answer to a member that came for another communicator of this process: try again.
constexpr int32_t kRetry = GW_IN_PROGRESS;

// What a member sends once it has read the whole reply.
constexpr uint32_t kAck = 0x4b434157u;  // "WACK"

// How long the root waits for the acknowledgements after sending its replies: as long as a connected
// member waits for the reply past the rendezvous deadline.
constexpr auto kReplyGrace = std::chrono::seconds(10);

// Rendezvous of this process so far, and one at a time (threads creating communicators at once are
// served in turn; see docs/bootstrap.md).
std::mutex g_rendezvous_mutex;
uint32_t g_rendezvous_count = 0;

void check(ucs_status_t st, const std::string& what) {
  if (st != UCS_OK) fail(GW_ERR_TRANSPORT, "bootstrap: " + what + " failed: " + ucs_status_string(st));
}

std::string where(const LaunchInfo& l) { return l.root_address + ":" + std::to_string(l.root_port); }

sockaddr_in resolve(const LaunchInfo& l) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(l.root_address.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr)
    fail(GW_ERR_CONFIG, "bootstrap: cannot resolve the root address '" + l.root_address + "': " + gai_strerror(rc) +
                            " (GW_ROOT_ADDR / MASTER_ADDR)");
  sockaddr_in a;
  std::memcpy(&a, found->ai_addr, sizeof(a));
  freeaddrinfo(found);
  a.sin_port = htons(uint16_t(l.root_port));
  return a;
}

// One UCP context and worker used only for the rendezvous; it always uses TCP, whatever UCX_TLS says
// for the data transport.
struct Worker {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;

  Worker() {
    // The root's port is listened on again by the next communicator of this process while connections
    // of the last one are still in TIME-WAIT: the listener needs SO_REUSEADDR. UCX reads that setting of
    // its TCP connection manager only from the environment (ucp_config_modify refuses it); a value the
    // user set stays.
    static std::once_flag reuse_address;
    std::call_once(reuse_address, [] { setenv("UCX_TCP_CM_REUSEADDR", "y", 0); });
    ucp_config_t* config = nullptr;
    check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
    ucp_config_modify(config, "TLS", "tcp");
    ucp_params_t p{};
    p.field_mask = UCP_PARAM_FIELD_FEATURES;
    p.features = UCP_FEATURE_STREAM;
    const ucs_status_t st = ucp_init(&p, config, &context);
    ucp_config_release(config);
    check(st, "ucp_init");
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    check(ucp_worker_create(context, &wp, &worker), "ucp_worker_create");
  }
  ~Worker() {
    if (worker) ucp_worker_destroy(worker);
    if (context) ucp_cleanup(context);
  }
  void progress() const {
    while (ucp_worker_progress(worker) != 0) {
    }
  }
};

// A stream endpoint with its failure flag; closes itself (bounded) when destroyed.
struct Endpoint {
  const Worker& w;
  ucp_ep_h ep = nullptr;
  bool failed = false;
  ucs_status_t failure = UCS_OK;

  explicit Endpoint(const Worker& worker) : w(worker) {}
  ~Endpoint() {
    if (ep == nullptr) return;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = failed ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &p);
    if (UCS_PTR_IS_PTR(req)) {
      const auto deadline = Clock::now() + std::chrono::seconds(2);
      while (ucp_request_check_status(req) == UCS_INPROGRESS && Clock::now() < deadline) w.progress();
      ucp_request_free(req);
    }
  }
  static void on_error(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* self = static_cast<Endpoint*>(arg);
    self->failed = true;
    self->failure = status;
  }
  void fill_error_handler(ucp_ep_params_t& p) {
    p.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    p.err_handler.cb = &Endpoint::on_error;
    p.err_handler.arg = this;
  }
};

// A stream operation in flight.
struct StreamOp {
  void* request = nullptr;
  bool is_recv = false;
  bool done = false;
  ucs_status_t status = UCS_OK;

  ~StreamOp() {
    if (request != nullptr) ucp_request_free(request);
  }
  // True once complete; status says how.
  bool poll() {
    if (done) return true;
    size_t length = 0;
    const ucs_status_t st = is_recv ? ucp_stream_recv_request_test(request, &length) : ucp_request_check_status(request);
    if (st == UCS_INPROGRESS) return false;
    status = st;
    done = true;
    ucp_request_free(request);
    request = nullptr;
    return true;
  }
};

std::unique_ptr<StreamOp> start_send(Endpoint& e, const void* data, size_t bytes) {
  auto op = std::make_unique<StreamOp>();
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
  p.datatype = ucp_dt_make_contig(1);
  ucs_status_ptr_t r = ucp_stream_send_nbx(e.ep, data, bytes, &p);
  if (UCS_PTR_IS_ERR(r)) {
    op->done = true;
    op->status = UCS_PTR_STATUS(r);
  } else if (r == nullptr) {
    op->done = true;
  } else {
    op->request = r;
  }
  return op;
}

std::unique_ptr<StreamOp> start_recv(Endpoint& e, void* data, size_t bytes) {
  auto op = std::make_unique<StreamOp>();
  op->is_recv = true;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_FLAGS;
  p.datatype = ucp_dt_make_contig(1);
  p.flags = UCP_STREAM_RECV_FLAG_WAITALL;
  size_t length = 0;
  ucs_status_ptr_t r = ucp_stream_recv_nbx(e.ep, data, bytes, &length, &p);
  if (UCS_PTR_IS_ERR(r)) {
    op->done = true;
    op->status = UCS_PTR_STATUS(r);
  } else if (r == nullptr) {
    op->done = true;
  } else {
    op->request = r;
  }
  return op;
}


// ---- the root -----------------------------------------------------------------------------------

struct Client {
  std::unique_ptr<Endpoint> endpoint;
  unsigned char header_bytes[kRecordHeaderBytes] = {};
  RecordHeader header{};
  std::string record;
  std::unique_ptr<StreamOp> recv;
  bool header_done = false;
  bool record_done = false;
  bool retry = false;  // the member came for another communicator of this process
  std::string reply;
  std::unique_ptr<StreamOp> send;
  unsigned char ack_bytes[4] = {};
  std::unique_ptr<StreamOp> ack;  // the member's acknowledgement of `reply`

  void start_reply(std::string bytes) {
    reply = std::move(bytes);
    send = start_send(*endpoint, reply.data(), reply.size());
    ack = start_recv(*endpoint, ack_bytes, sizeof(ack_bytes));
  }
  // The member has the reply (it acknowledged it), or can no longer get it.
  bool reply_settled() {
    if (endpoint->failed) return true;
    if (send) send->poll();
    return ack && ack->poll();
  }
};

struct Listener {
  Worker& w;
  ucp_listener_h listener = nullptr;
  std::vector<ucp_conn_request_h> incoming;

  static void on_connection(ucp_conn_request_h request, void* arg) {
    static_cast<Listener*>(arg)->incoming.push_back(request);
  }
  Listener(Worker& worker, const LaunchInfo& launch) : w(worker) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    any.sin_port = htons(uint16_t(launch.root_port));
    ucp_listener_params_t p{};
    p.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&any);
    p.sockaddr.addrlen = sizeof(any);
    p.conn_handler.cb = &Listener::on_connection;
    p.conn_handler.arg = this;
    const ucs_status_t st = ucp_listener_create(w.worker, &p, &listener);
    if (st != UCS_OK)
      fail(st == UCS_ERR_BUSY ? GW_ERR_CONFIG : GW_ERR_TRANSPORT,
           "bootstrap: rank 0 cannot listen on port " + std::to_string(launch.root_port) + ": " +
               ucs_status_string(st) + " (is the port in use? pick another GW_ROOT_PORT / MASTER_PORT)");
  }
  ~Listener() {
    for (ucp_conn_request_h r : incoming) ucp_listener_reject(listener, r);
    if (listener) ucp_listener_destroy(listener);
  }
};

std::vector<std::string> gather_as_root(const LaunchInfo& launch, const std::string& mine, double timeout_s,
                                        const std::string& timeout_source, uint32_t communicator) {
  Worker w;
  Listener listener(w, launch);
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::string> records(launch.world_size);
  std::vector<bool> arrived(launch.world_size, false);
  records[0] = mine;
  arrived[0] = true;
  uint32_t missing = launch.world_size - 1;
  std::string error;
  gw_status error_status = GW_OK;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  uint32_t refused = 0;  // connection requests UCX could not turn into an endpoint
  std::string last_refusal;

  while (missing > 0 && error.empty()) {
    w.progress();
    for (ucp_conn_request_h request : listener.incoming) {
      auto c = std::make_unique<Client>();
      c->endpoint = std::make_unique<Endpoint>(w);
      ucp_ep_params_t p{};
      p.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST;
      p.conn_request = request;
      c->endpoint->fill_error_handler(p);
      const ucs_status_t accepted = ucp_ep_create(w.worker, &p, &c->endpoint->ep);
      if (accepted != UCS_OK) {
        // Counted, and said in the timeout message if ranks stay missing (UCX owns the request after a
        // failed ucp_ep_create: it is not rejected a second time here).
        ++refused;
        last_refusal = ucs_status_string(accepted);
        continue;
      }
      c->recv = start_recv(*c->endpoint, c->header_bytes, sizeof(c->header_bytes));
      clients.push_back(std::move(c));
    }
    listener.incoming.clear();
    for (auto& c : clients) {
      if (c->record_done || c->endpoint->failed || !c->recv->poll()) continue;
      if (c->recv->status != UCS_OK) {
        c->endpoint->failed = true;
        continue;
      }
      if (!c->header_done) {
        c->header_done = true;
        c->header = decode_record_header(c->header_bytes);
        const RecordHeader& h = c->header;
        if (h.magic != kMagic || h.length > (uint64_t{1} << 30)) {
          c->endpoint->failed = true;  // not a gradwire rank; ignore it
          continue;
        }
        if (h.communicator != communicator) {
          // A member already at its next communicator (or one created out of order): once its record is
          // read (so that its acknowledgement is the next thing on the stream), it is told to retry.
          c->retry = true;
        } else if (h.world_size != launch.world_size) {
          error_status = GW_ERR_MISMATCH;
          error = "rank " + std::to_string(h.rank) + " was started with world size " + std::to_string(h.world_size) +
                  ", rank 0 with " + std::to_string(launch.world_size) + "; every rank must have the same world size";
        } else if (h.rank == 0 || h.rank >= launch.world_size || arrived[h.rank]) {
          error_status = GW_ERR_CONFIG;
          error = "two processes claim rank " + std::to_string(h.rank) +
                  " (or it is out of range); check the launcher's rank variables";
        }
        c->record.resize(h.length);
        c->recv = start_recv(*c->endpoint, c->record.data(), c->record.size());
        continue;
      }
      c->record_done = true;
      if (c->retry) {
        c->start_reply(encode_reply(kRetry, "rank 0 is creating its communicator #" + std::to_string(communicator) +
                                                ", rank " + std::to_string(c->header.rank) + " its #" +
                                                std::to_string(c->header.communicator)));
        continue;
      }
      records[c->header.rank] = c->record;
      arrived[c->header.rank] = true;
      --missing;
    }
    if (missing > 0 && Clock::now() > deadline) {
      std::vector<uint32_t> absent;
      for (uint32_t r = 0; r < launch.world_size; ++r)
        if (!arrived[r]) absent.push_back(r);
      error_status = GW_ERR_TIMEOUT;
      error = gw::rank_list(absent, 32) +
              " did not arrive at the rendezvous (root " + where(launch) + ") within " + std::to_string(int(timeout_s)) +
              " s (" + timeout_source + "); " + std::to_string(launch.world_size - absent.size()) + " of " +
              std::to_string(launch.world_size) + " ranks arrived. Did those ranks start, and with the same root?" +
              (refused ? " (" + std::to_string(refused) + " connection request" + (refused == 1 ? "" : "s") +
                             " could not be accepted: " + last_refusal + ")"
                       : std::string());
    }
    if (missing > 0 && error.empty()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }

  // Tell every connected rank the outcome, then wait (bounded) until each has acknowledged its reply or
  // is gone: only then are the endpoints closed.
  const std::string payload = error.empty() ? pack_records(records) : error;
  for (auto& c : clients) {
    if (!c->header_done || c->endpoint->failed || c->send) continue;
    c->start_reply(encode_reply(error.empty() ? GW_OK : int32_t(error_status), payload));
  }
  const auto settle_deadline = Clock::now() + kReplyGrace;
  for (;;) {
    w.progress();
    bool pending = false;
    for (auto& c : clients)
      if (c->send && !c->reply_settled()) pending = true;
    if (!pending || Clock::now() > settle_deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (!error.empty()) fail(error_status, "bootstrap: " + error);
  return records;
}

// ---- the other ranks ----------------------------------------------------------------------------

std::vector<std::string> gather_as_member(const LaunchInfo& launch, const std::string& mine, double timeout_s,
                                          const std::string& timeout_source, uint32_t communicator) {
  Worker w;
  const sockaddr_in root = resolve(launch);
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  const std::string header =
      encode_record_header(RecordHeader{kMagic, launch.rank, launch.world_size, communicator, uint64_t(mine.size())});
  std::string last_failure = "no answer";

  while (Clock::now() < deadline) {
    Endpoint e(w);
    ucp_ep_params_t p{};
    p.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
    p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&root);
    p.sockaddr.addrlen = sizeof(root);
    e.fill_error_handler(p);
    const ucs_status_t st = ucp_ep_create(w.worker, &p, &e.ep);
    if (st != UCS_OK) {
      last_failure = ucs_status_string(st);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    auto send_header = start_send(e, header.data(), header.size());
    auto send_record = start_send(e, mine.data(), mine.size());
    unsigned char length_bytes[8] = {};
    auto recv_length = start_recv(e, length_bytes, sizeof(length_bytes));
    // Once connected, wait a little longer than the root does, so that its verdict (which ranks are
    // missing) arrives before this rank gives up on its own. A reply that arrived counts even when the
    // endpoint failed in the same progress call.
    const auto reply_deadline = deadline + kReplyGrace;
    while (!e.failed && !recv_length->poll() && Clock::now() < reply_deadline) {
      w.progress();
      send_header->poll();
      send_record->poll();
    }
    recv_length->poll();
    if (!recv_length->done || recv_length->status != UCS_OK) {
      // Most often the root is not listening yet: try again until the deadline.
      last_failure = e.failed ? ucs_status_string(e.failure) : "no answer";
      if (recv_length->done && recv_length->status != UCS_OK) last_failure = ucs_status_string(recv_length->status);
      e.failed = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    const uint64_t length = bytes::get_le(length_bytes, 8);
    if (length < sizeof(int32_t) || length > (uint64_t{1} << 34))
      fail(GW_ERR_CORRUPT, "bootstrap: the root at " + where(launch) + " sent a malformed reply");
    std::string body(length, '\0');
    auto recv_body = start_recv(e, body.data(), body.size());
    while (!e.failed && !recv_body->poll() && Clock::now() < reply_deadline) w.progress();
    recv_body->poll();
    if (!recv_body->done || recv_body->status != UCS_OK)
      fail(GW_ERR_TRANSPORT, "bootstrap: the root at " + where(launch) + " went away during the rendezvous");
    // Acknowledge the reply: the root keeps the endpoint open until then (bounded: a root that is gone
    // fails the endpoint).
    unsigned char ack[4];
    bytes::put_le(ack, kAck, 4);
    auto send_ack = start_send(e, ack, sizeof(ack));
    const auto ack_deadline = Clock::now() + std::chrono::seconds(2);
    while (!e.failed && !send_ack->poll() && Clock::now() < ack_deadline) w.progress();
    const auto status = int32_t(uint32_t(bytes::get_le(reinterpret_cast<const unsigned char*>(body.data()), 4)));
    const std::string payload = body.substr(sizeof(status));
    if (status == kRetry) {
      // The root is still at another communicator of its process (or already past it): try again.
      last_failure = payload;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (status != GW_OK) fail(status < 0 ? gw_status(status) : GW_ERR_INTERNAL, "bootstrap (reported by rank 0): " + payload);
    return unpack_records(payload, launch.world_size);
  }
  fail(GW_ERR_TIMEOUT, "bootstrap: rank 0 (the root at " + where(launch) + ") did not answer rank " +
                           std::to_string(launch.rank) + " within " + std::to_string(int(timeout_s)) +
                           " s (" + timeout_source + "; last failure: " + last_failure +
                           "). Is rank 0 running, and do GW_ROOT_ADDR / GW_ROOT_PORT point at it?");
}

}  // namespace

std::vector<std::string> ucx_allgather(const LaunchInfo& launch, const std::string& mine, double timeout_s,
                                       const std::string& timeout_source) {
  if (launch.world_size == 1) return {mine};
  if (launch.root_address.empty() || launch.root_port < 0)
    fail(GW_ERR_CONFIG, "bootstrap: " + std::to_string(launch.world_size) + " ranks (from " + launch.source +
                            ") but no root address: set GW_ROOT_ADDR and GW_ROOT_PORT (or MASTER_ADDR and "
                            "MASTER_PORT), or pass gw_comm_options.allgather");
  std::lock_guard<std::mutex> one_at_a_time(g_rendezvous_mutex);
  const uint32_t communicator = ++g_rendezvous_count;
  return launch.rank == 0 ? gather_as_root(launch, mine, timeout_s, timeout_source, communicator)
                          : gather_as_member(launch, mine, timeout_s, timeout_source, communicator);
}

}  // namespace gw::bootstrap
