// The UCX transport: nonblocking tagged point-to-point over UCP.
//
// One UCP context and one worker per transport. Endpoints are created from the peers' worker addresses
// (gathered by the bootstrap) with peer-failure handling, so a dead peer fails the requests that involve
// it instead of hanging them. The sender's rank is encoded into the UCP tag, next to the runtime's tag,
// so a receive matches only the peer it names. Large messages use UCP's rendezvous protocol, which
// moves them without extra copies. Nothing here blocks, except destroy's bounded wait for endpoints to
// close. See docs/collectives.md (transport section).
#include <gradwire/plugin.h>
#include <dlfcn.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr const char* kComponent = "transport.ucx";
// UCP tag layout: [ sender rank : 24 ][ runtime tag : 40 ].
constexpr unsigned kTagBits = 40;
constexpr uint64_t kTagMask = (uint64_t{1} << kTagBits) - 1;
constexpr uint32_t kMaxRanks = 1u << 24;
constexpr const char* kTcpRxSegment = "512K";  // [transport.ucx] tcp_rx_segment's default
// UCX_TCP_RX_SEG_SIZE as ucp_config_modify names it: a transport's key without its prefix (UCP applies
// it to every transport that has it: TCP alone in UCX 1.13); "TCP_RX_SEG_SIZE" matches none.
constexpr const char* kTcpRxSegmentKey = "RX_SEG_SIZE";

const gw_config_key kConfigKeys[] = {
    {sizeof(gw_config_key), "tls", GW_CONFIG_STRING, "\"\"",
     "UCX transports to use, in UCX_TLS syntax (\"shm\", \"tcp\", \"rc,sm\"); empty: the UCX_TLS "
     "environment variable, else UCX's own choice.",
     1.0, 0.0, nullptr},
    {sizeof(gw_config_key), "net_devices", GW_CONFIG_STRING, "\"\"",
     "Network devices UCX may use, in UCX_NET_DEVICES syntax (\"mlx5_0:1\", \"eth0\"); empty: the "
     "environment or all.",
     1.0, 0.0, nullptr},
    {sizeof(gw_config_key), "rndv_threshold", GW_CONFIG_STRING, "\"\"",
     "Message size from which UCX switches to the zero-copy rendezvous protocol, in UCX_RNDV_THRESH "
     "syntax (\"8k\", \"inf\", \"auto\"); empty: the environment, else \"inf\" (eager for every size) when "
     "tls is TCP only (up to 2x faster on slow links, docs/collectives.md), else UCX's automatic choice.",
     1.0, 0.0, nullptr},
    {sizeof(gw_config_key), "tcp_rx_segment", GW_CONFIG_STRING, "\"\"",
     "Size of the buffers UCX's TCP transport receives into, in UCX_TCP_RX_SEG_SIZE syntax (\"64k\", "
     "\"512k\"); empty: the environment, else \"512k\" (fewer receive calls per byte where the cores "
     "pace the exchange, 10-20 % faster at 10 Gbit/s, docs/collectives.md).",
     1.0, 0.0, nullptr},
    {sizeof(gw_config_key), "local_peer_failure_detection", GW_CONFIG_BOOL, "false",
     "Create endpoints to ranks on this host with UCX's peer-failure handling too; UCX then cannot use "
     "shared memory between them (TCP only), otherwise a crashed local rank is found by [runtime] "
     "timeout_s and the other ranks' failure notices.",
     1.0, 0.0, nullptr},
    {sizeof(gw_config_key), "close_timeout_s", GW_CONFIG_FLOAT, "5",
     "Seconds destroy waits for endpoints to flush and close before closing them by force.", 0.0,
     3600.0, nullptr},
};

// The same keys for ucx_shm, the component meant for [transport] intra, whose tls defaults to shared memory.
const std::array<gw_config_key, sizeof(kConfigKeys) / sizeof(kConfigKeys[0])> kShmConfigKeys = [] {
  std::array<gw_config_key, sizeof(kConfigKeys) / sizeof(kConfigKeys[0])> keys{};
  std::copy(std::begin(kConfigKeys), std::end(kConfigKeys), keys.begin());
  keys[0].default_value = "\"sm,self\"";
  keys[0].help = "UCX transports between the ranks of one host, in UCX_TLS syntax (\"sm,self\", \"posix,cma\"); "
                 "empty: the UCX_TLS environment variable, else UCX's own choice.";
  return keys;
}();

uint32_t dtype_size(gw_dtype dtype) {
  switch (dtype) {
    case GW_DTYPE_F32: return 4;
    case GW_DTYPE_F64: return 8;
    case GW_DTYPE_F16: return 2;
    case GW_DTYPE_BF16: return 2;
    case GW_DTYPE_I32: return 4;
    case GW_DTYPE_I64: return 8;
    case GW_DTYPE_U8: return 1;
    default: return 0;
  }
}

// A failure inside the plugin: the status to return and the message for host->set_error.
struct Failure {
  gw_status status;
  std::string message;
};

struct Transport;

struct Peer {
  Transport* transport = nullptr;
  uint32_t rank = 0;
  ucp_ep_h ep = nullptr;
  std::atomic<bool> failed{false};
  ucs_status_t failure = UCS_OK;
};

}  // namespace

struct gw_transport_request {
  Transport* transport = nullptr;
  void* ucx = nullptr;  // the UCP request while it is in flight
  uint32_t peer = 0;
  bool is_recv = false;
  bool done = false;
  ucs_status_t status = UCS_OK;
  uint64_t bytes = 0;
  uint64_t expected_bytes = 0;
  ucp_tag_recv_info_t recv_info{};
};

namespace {

struct Transport {
  const gw_host* host = nullptr;
  uint32_t rank = 0;
  uint32_t world_size = 1;
  double close_timeout_s = 5.0;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_address_t* address = nullptr;
  size_t address_length = 0;
  std::vector<std::unique_ptr<Peer>> peers;
  std::atomic<bool> aborted{false};
  // UCX's shared-memory transports have no peer-failure handler, and an endpoint that asks for one
  // cannot use them (UCX falls back to TCP even between processes of one host); over TCP it gets one
  // lane plus keepalive instead of striping over every interface. So endpoints to ranks on this host
  // ask for it only when local_peer_failure_detection says so; a dead local rank then shows up as a
  // transport error (a reset connection), the runtime's timeout and the failure notices.
  bool detect_peer_failure = true;
  bool local_peer_failure_detection = false;
  std::string host_name;
  std::string blob;  // host name, NUL, UCP worker address
  // Requests the runtime freed while UCX still had them (a send, or a receive already matched to a
  // rendezvous, which UCX cannot cancel): kept so that their callbacks find them, released at destroy.
  std::vector<gw_transport_request*> orphans;
  // Set by the first orphan to a live peer: the runtime may release its buffer as soon as
  // request_free returns, and UCX would still read it (a send) or write it (a receive) whenever the
  // worker is driven. So the worker is never driven again: progress does nothing, pending requests
  // fail, destroy does not flush. Orphans appear only when a collective failed or the application
  // freed an unfinished operation; in both cases the communicator is to be destroyed.
  bool stalled = false;

  ~Transport();
};

[[noreturn]] void fail(gw_status status, std::string message) { throw Failure{status, std::move(message)}; }

void check_ucs(ucs_status_t status, const char* what) {
  if (status != UCS_OK)
    fail(GW_ERR_TRANSPORT, std::string(what) + " failed: " + ucs_status_string(status) +
                               " (check UCX_TLS / [transport.ucx] tls and that the devices exist: "
                               "ucx_info -d)");
}

// Runs a vtable body, turning any exception into a status and the host's error message.
template <class F>
gw_status guarded(const gw_host* host, F&& body) noexcept {
  try {
    return body();
  } catch (const Failure& f) {
    if (host != nullptr && host->set_error != nullptr) host->set_error(host->ctx, f.message.c_str());
    return f.status;
  } catch (const std::bad_alloc&) {
    if (host != nullptr && host->set_error != nullptr) host->set_error(host->ctx, "ucx transport: out of memory");
    return GW_ERR_NO_MEMORY;
  } catch (const std::exception& e) {
    if (host != nullptr && host->set_error != nullptr)
      host->set_error(host->ctx, (std::string("ucx transport: internal error: ") + e.what()).c_str());
    return GW_ERR_INTERNAL;
  } catch (...) {
    if (host != nullptr && host->set_error != nullptr) host->set_error(host->ctx, "ucx transport: internal error");
    return GW_ERR_INTERNAL;
  }
}

void log(const Transport& t, gw_log_level level, const std::string& message) {
  if (t.host != nullptr && t.host->log != nullptr) t.host->log(t.host->ctx, level, kComponent, message.c_str());
}

std::string config_string(const gw_host* host, const gw_config* config, const char* key) {
  const char* value = nullptr;
  if (config == nullptr || host->config_get_string == nullptr) return "";
  if (host->config_get_string(config, key, &value) != GW_OK || value == nullptr) return "";
  return value;
}

double config_float(const gw_host* host, const gw_config* config, const char* key, double fallback) {
  double value = fallback;
  if (config == nullptr || host->config_get_float == nullptr) return fallback;
  if (host->config_get_float(config, key, &value) != GW_OK) return fallback;
  return value;
}

// True when every name of a UCX_TLS list is one of `names`; false for an empty list (UCX's own
// choice) and for an exclusion list ("^tcp").
bool tls_list_within(const std::string& tls, std::initializer_list<const char*> names) {
  if (tls.empty() || tls[0] == '^') return false;
  size_t start = 0;
  while (start <= tls.size()) {
    const size_t end = std::min(tls.find(',', start), tls.size());
    const std::string name = tls.substr(start, end - start);
    bool known = false;
    for (const char* k : names) known = known || name == k;
    if (!known) return false;
    start = end + 1;
  }
  return true;
}

// A UCX_TLS list of shared-memory transports only ("shm", "sm,self", "posix,cma", ...).
bool shared_memory_only(const std::string& tls) {
  return tls_list_within(tls, {"shm", "sm", "posix", "sysv", "cma", "knem", "xpmem", "self"});
}

// A size in UCX's memory units: digits, then optionally k, m or g, then optionally b ("64k", "1mb", "4096").
bool is_size(const std::string& v) {
  size_t i = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i;
  if (i == 0 || i > 12) return false;
  if (i < v.size() && std::strchr("kKmMgG", v[i]) != nullptr) ++i;
  if (i < v.size() && (v[i] == 'b' || v[i] == 'B')) ++i;
  return i == v.size();
}

// A UCX_TLS list that reaches other processes over TCP only ("tcp", "tcp,self").
bool tcp_only(const std::string& tls) { return tls_list_within(tls, {"tcp", "self"}); }

void on_peer_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  peer->failure = status;
  peer->failed.store(true);
}

void on_send_done(void* ucx, ucs_status_t status, void* user) {
  auto* r = static_cast<gw_transport_request*>(user);
  r->done = true;
  r->status = status;
  r->ucx = nullptr;
  ucp_request_free(ucx);
}

void on_recv_done(void* ucx, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  auto* r = static_cast<gw_transport_request*>(user);
  r->done = true;
  r->status = status;
  if (status == UCS_OK && info != nullptr) r->bytes = info->length;
  r->ucx = nullptr;
  ucp_request_free(ucx);
}

// Receives and discards the small messages that arrived and that no receive matched (a collective that
// failed on a mismatch leaves some; UCX would warn about each). Larger ones are left alone: taking a
// rendezvous message makes its sender read the buffer it named, which the sender's application may have
// released after the failure. Bounded by `deadline`.
constexpr size_t kDrainMaxBytes = 4096;

void drain_unexpected(ucp_worker_h worker, std::chrono::steady_clock::time_point deadline) {
  struct Drained {
    std::vector<char> buffer;
    void* request = nullptr;
  };
  std::vector<Drained> drained;
  for (;;) {
    while (ucp_worker_progress(worker) != 0) {
    }
    ucp_tag_recv_info_t info{};
    ucp_tag_message_h message = ucp_tag_probe_nb(worker, 0, 0, 0, &info);
    if (message != nullptr && info.length > kDrainMaxBytes) message = nullptr;  // the oldest is large: leave it
    if (message != nullptr) message = ucp_tag_probe_nb(worker, 0, 0, 1, &info);  // take it out of the queue
    if (message != nullptr) {
      Drained d;
      d.buffer.resize(std::max<size_t>(info.length, 1));
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
      param.datatype = ucp_dt_make_contig(1);
      const ucs_status_ptr_t sp = ucp_tag_msg_recv_nbx(worker, d.buffer.data(), info.length, message, &param);
      if (UCS_PTR_IS_PTR(sp)) {
        d.request = sp;
        drained.push_back(std::move(d));
      }
      continue;
    }
    std::erase_if(drained, [](Drained& d) {
      if (ucp_request_check_status(d.request) == UCS_INPROGRESS) return false;
      ucp_request_free(d.request);
      return true;
    });
    if (drained.empty() || std::chrono::steady_clock::now() > deadline) break;
  }
  for (Drained& d : drained) {
    ucp_request_cancel(worker, d.request);
    ucp_request_free(d.request);
  }
}

// The UCX state of stalled transports: never driven again and never destroyed. UCX 1.13 cannot
// destroy an endpoint with an operation in flight without driving it (over shared memory it asserts
// on the endpoint's pending queue), and driving it would touch released buffers. Kept reachable until
// the process exits; its connections stay open meanwhile (the peers learn of the failure from the
// runtime's notices, their timeout, or this process's exit).
struct Parked {
  ucp_context_h context;
  ucp_worker_h worker;
  std::vector<gw_transport_request*> orphans;
};
std::mutex parked_mutex;
std::vector<Parked>* parked = nullptr;  // allocated by the first, never freed

// Keeps this plugin mapped until the process exits, so that what is parked stays reachable (the
// runtime unloads plugins at gw_runtime_destroy) and UCX's callbacks still point at code.
void pin_this_plugin() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&pin_this_plugin), &info) != 0 && info.dli_fname != nullptr)
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

Transport::~Transport() {
  if (worker != nullptr && stalled) {
    log(*this, GW_LOG_WARN,
        std::to_string(orphans.size()) +
            " operation(s) were freed before they completed (a failed or aborted collective); UCX cannot cancel "
            "them, so this communicator's UCX worker is left as it is, not driven, until the process exits");
    if (address != nullptr) ucp_worker_release_address(worker, address);
    pin_this_plugin();
    const std::lock_guard<std::mutex> lock(parked_mutex);
    if (parked == nullptr) parked = new std::vector<Parked>;
    parked->push_back(Parked{context, worker, std::move(orphans)});
    return;
  }
  if (worker != nullptr) {
    // Messages no receive matched are taken and dropped, bounded by a second (or close_timeout_s,
    // when shorter); then the endpoints close with a flush (a force close for a failed peer).
    drain_unexpected(worker, std::chrono::steady_clock::now() +
                                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(std::min(close_timeout_s, 1.0))));
    // What is left are requests to peers UCX declared failed (nothing moves for them any more).
    for (gw_transport_request* r : orphans) {
      if (r->ucx != nullptr) ucp_request_free(r->ucx);  // no callback runs after this
      delete r;
    }
    orphans.clear();
    std::vector<void*> closing;
    for (auto& peer : peers) {
      if (peer == nullptr || peer->ep == nullptr) continue;
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = peer->failed.load() ? UCP_EP_CLOSE_FLAG_FORCE : 0;
      ucs_status_ptr_t req = ucp_ep_close_nbx(peer->ep, &param);
      if (UCS_PTR_IS_PTR(req)) closing.push_back(req);
      peer->ep = nullptr;
    }
    // Bounded wait: a peer that is gone must not keep this rank from shutting down.
    const auto close_deadline = std::chrono::steady_clock::now() +
                                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(close_timeout_s));
    for (auto& req : closing) {
      while (ucp_request_check_status(req) == UCS_INPROGRESS && std::chrono::steady_clock::now() < close_deadline)
        ucp_worker_progress(worker);
      if (ucp_request_check_status(req) == UCS_INPROGRESS)
        log(*this, GW_LOG_WARN, "an endpoint did not close within close_timeout_s; releasing it");
      ucp_request_free(req);
    }
    if (address != nullptr) ucp_worker_release_address(worker, address);
    ucp_worker_destroy(worker);
  }
  if (context != nullptr) ucp_cleanup(context);
}

Transport& as_transport(void* t) {
  if (t == nullptr) fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: transport handle is NULL");
  return *static_cast<Transport*>(t);
}

gw_status create(void*, const gw_host* host, const gw_config* config, const gw_transport_init* init,
                 void** out) {
  return guarded(host, [&] {
    if (out == nullptr || init == nullptr || !GW_STRUCT_HAS(init, gw_transport_init, timeout_s))
      fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: create needs a transport pointer and a gw_transport_init");
    if (init->world_size == 0 || init->world_size > kMaxRanks || init->rank >= init->world_size)
      fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: rank " + std::to_string(init->rank) + " of " +
                                        std::to_string(init->world_size) +
                                        " is out of range (at most 2^24 ranks)");
    auto t = std::make_unique<Transport>();
    t->host = host;
    t->rank = init->rank;
    t->world_size = init->world_size;
    t->close_timeout_s = config_float(host, config, "close_timeout_s", 5.0);

    ucp_config_t* ucx_config = nullptr;
    check_ucs(ucp_config_read(nullptr, nullptr, &ucx_config), "ucp_config_read");
    // UCP takes a transport's setting without checking it (a bad one is only warned about when the
    // worker starts), so the size is checked here.
    if (const std::string seg = config_string(host, config, "tcp_rx_segment"); !seg.empty() && !is_size(seg)) {
      ucp_config_release(ucx_config);
      fail(GW_ERR_CONFIG, "[transport.ucx] tcp_rx_segment = \"" + seg +
                              "\" is not a size; give bytes with an optional k, m or g (\"64k\", \"512k\", \"1m\"), "
                              "or \"\" for the default");
    }
    std::string tls = config_string(host, config, "tls");
    if (tls.empty() && std::getenv("UCX_TLS") != nullptr) tls = std::getenv("UCX_TLS");
    // A key of [transport.ucx] and the UCX setting it sets; some have a value of gradwire's where neither
    // the key nor UCX's environment variable gives one and the transports in use want it:
    // - rndv_threshold "inf" over TCP only: UCX 1.13's rendezvous copies through the socket like the
    //   eager protocol but sends its handshake behind the bulk data, and two ranks exchanging both ways
    //   take turns (2 ranks behind 1 Gbit/s links reached half the link with it, all of it without);
    // - tcp_rx_segment "512K" unless only shared memory is in use: UCX's TCP transport reads a socket
    //   into 64 KiB buffers by default and copies out of them, and with 512 KiB a rank makes an eighth
    //   of the receive calls, which pace an exchange where the cores and not the link are the limit
    //   (P5 at 10 Gbit/s, 2 to 8 ranks on 2 cores: 10-20 % faster).
    // docs/collectives.md has the measurements.
    struct Setting {
      const char* key;
      const char* ucx_name;               // as ucp_config_modify names it
      const char* env = nullptr;          // UCX's environment variable, which wins over `fallback`
      const char* fallback = nullptr;     // gradwire's value, where `wanted` says the transports want it
      bool (*wanted)(const std::string& tls) = nullptr;
    };
    std::string rx_segment;  // the receive segment asked for, for the log
    for (const Setting s :
         {Setting{"tls", "TLS"}, Setting{"net_devices", "NET_DEVICES"},
          Setting{"rndv_threshold", "RNDV_THRESH", "UCX_RNDV_THRESH", "inf", tcp_only},
          Setting{"tcp_rx_segment", kTcpRxSegmentKey, "UCX_TCP_RX_SEG_SIZE", kTcpRxSegment,
                  [](const std::string& l) { return !shared_memory_only(l); }}}) {
      std::string value = config_string(host, config, s.key);
      const bool fallback = value.empty() && s.fallback != nullptr && std::getenv(s.env) == nullptr && s.wanted(tls);
      if (fallback) value = s.fallback;
      if (value.empty()) continue;
      if (std::strcmp(s.key, "tcp_rx_segment") == 0) rx_segment = value;
      const ucs_status_t st = ucp_config_modify(ucx_config, s.ucx_name, value.c_str());
      if (st != UCS_OK) {
        ucp_config_release(ucx_config);
        if (fallback) check_ucs(st, ("ucp_config_modify(" + std::string(s.ucx_name) + "=" + value + ")").c_str());
        fail(GW_ERR_CONFIG, std::string("[transport.ucx] ") + s.key + " = \"" + value +
                                "\" is not accepted by UCX (" + ucs_status_string(st) +
                                "); see `ucx_info -c` for the syntax of UCX_" + s.ucx_name);
      }
    }
    if (!rx_segment.empty())
      log(*t, GW_LOG_INFO, "TCP receive segments of " + rx_segment + " ([transport.ucx] tcp_rx_segment)");
    t->detect_peer_failure = !shared_memory_only(tls);
    int32_t local_detection = 0;
    if (config != nullptr && host->config_get_bool != nullptr &&
        host->config_get_bool(config, "local_peer_failure_detection", &local_detection) == GW_OK)
      t->local_peer_failure_detection = local_detection != 0;
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    t->host_name = name;
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_TAG;
    params.mt_workers_shared = 0;
    const ucs_status_t init_status = ucp_init(&params, ucx_config, &t->context);
    ucp_config_release(ucx_config);
    check_ucs(init_status, "ucp_init");

    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    check_ucs(ucp_worker_create(t->context, &wp, &t->worker), "ucp_worker_create");
    check_ucs(ucp_worker_get_address(t->worker, &t->address, &t->address_length), "ucp_worker_get_address");
    t->blob = t->host_name + std::string(1, '\0') +
              std::string(reinterpret_cast<const char*>(t->address), t->address_length);
    *out = t.release();
    return GW_OK;
  });
}

void destroy(void* transport) {
  try {
    delete static_cast<Transport*>(transport);
  } catch (...) {
  }
}

gw_status local_address(void* transport, const void** blob, uint64_t* size) {
  Transport* t = static_cast<Transport*>(transport);
  return guarded(t ? t->host : nullptr, [&] {
    Transport& self = as_transport(transport);
    if (blob == nullptr || size == nullptr) fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: blob or size is NULL");
    *blob = self.blob.data();
    *size = self.blob.size();
    return GW_OK;
  });
}

gw_status connect(void* transport, const void* const* blobs, const uint64_t* sizes) {
  Transport* tp = static_cast<Transport*>(transport);
  return guarded(tp ? tp->host : nullptr, [&] {
    Transport& t = as_transport(transport);
    if (blobs == nullptr || sizes == nullptr) fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: blobs or sizes is NULL");
    if (!t.peers.empty()) return GW_OK;
    t.peers.resize(t.world_size);
    for (uint32_t r = 0; r < t.world_size; ++r) {
      auto peer = std::make_unique<Peer>();
      peer->transport = &t;
      peer->rank = r;
      if (blobs[r] == nullptr || sizes[r] == 0)
        fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: rank " + std::to_string(r) + "'s address is empty");
      const char* bytes = static_cast<const char*>(blobs[r]);
      const void* nul = std::memchr(bytes, '\0', sizes[r]);
      if (nul == nullptr)
        fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: rank " + std::to_string(r) + "'s address is malformed");
      const std::string peer_host(bytes, static_cast<const char*>(nul));
      const bool same_host = peer_host == t.host_name;
      const bool detect = t.detect_peer_failure && (!same_host || t.local_peer_failure_detection);
      ucp_ep_params_t ep{};
      ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.address = reinterpret_cast<const ucp_address_t*>(static_cast<const char*>(nul) + 1);
      ep.err_mode = detect ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
      ep.err_handler.cb = on_peer_error;
      ep.err_handler.arg = peer.get();
      ucs_status_t st = ucp_ep_create(t.worker, &ep, &peer->ep);
      if (st != UCS_OK && detect) {
        t.detect_peer_failure = false;
        log(t, GW_LOG_WARN, "the UCX transports in use cannot detect a dead peer; a crashed rank is noticed "
                            "after [runtime] timeout_s instead");
        ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
        st = ucp_ep_create(t.worker, &ep, &peer->ep);
      }
      if (st != UCS_OK) {
        // Reaching oneself needs UCX's "self" (or a shared-memory) transport; collectives never do.
        if (r == t.rank) {
          peer->ep = nullptr;
        } else {
          fail(GW_ERR_TRANSPORT, "ucx transport: cannot reach rank " + std::to_string(r) + ": " +
                                     ucs_status_string(st) +
                                     " (no UCX transport in UCX_TLS / [transport.ucx] tls connects "
                                     "these two processes)");
        }
      }
      t.peers[r] = std::move(peer);
    }
    return GW_OK;
  });
}

[[noreturn]] void fail_stalled() {
  fail(GW_ERR_STATE,
       "ucx transport: an operation was freed before it completed, and UCX cannot cancel it; this transport "
       "moves nothing more, so that UCX does not touch the released buffer (destroy the communicator)");
}

Peer& checked_peer(Transport& t, uint32_t peer, uint64_t tag) {
  if (t.aborted.load()) fail(GW_ERR_ABORTED, "ucx transport: the communicator was aborted");
  if (t.stalled) fail_stalled();
  if (t.peers.empty()) fail(GW_ERR_STATE, "ucx transport: send/recv before connect");
  if (peer >= t.world_size)
    fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: peer " + std::to_string(peer) + " is not a rank (world size " +
                                      std::to_string(t.world_size) + ")");
  if (tag > kTagMask)
    fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: tag " + std::to_string(tag) + " exceeds 40 bits");
  Peer& p = *t.peers[peer];
  if (p.ep == nullptr)
    fail(GW_ERR_UNSUPPORTED, "ucx transport: rank " + std::to_string(peer) +
                                 " cannot send to itself with these UCX transports (add \"self\" to UCX_TLS)");
  return p;
}

uint64_t checked_bytes(const gw_tensor* buf) {
  if (buf == nullptr || !GW_STRUCT_HAS(buf, gw_tensor, stream))
    fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: the buffer is NULL or not initialized with GW_TENSOR_INIT");
  if (buf->memory != GW_MEMORY_HOST)
    fail(GW_ERR_UNSUPPORTED, "ucx transport: only host memory is supported");
  const uint32_t size = dtype_size(buf->dtype);
  if (size == 0) fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: unknown dtype " + std::to_string(buf->dtype));
  if (buf->count != 0 && buf->data == nullptr) fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: buffer data is NULL");
  return buf->count * size;
}

// Takes ownership of the UCP status pointer of a just-started operation.
void track(gw_transport_request& r, ucs_status_ptr_t sp) {
  if (UCS_PTR_IS_ERR(sp)) {
    r.done = true;
    r.status = UCS_PTR_STATUS(sp);
  } else if (sp == nullptr) {
    r.done = true;
    r.status = UCS_OK;
    if (r.is_recv) r.bytes = r.recv_info.length;
    else r.bytes = r.expected_bytes;
  } else if (!r.done) {  // the callback may already have run (and released the UCP request)
    r.ucx = sp;
  }
}

gw_status send_start(void* transport, uint32_t peer, uint64_t tag, const gw_tensor* buf,
                     gw_transport_request** request) {
  Transport* tp = static_cast<Transport*>(transport);
  return guarded(tp ? tp->host : nullptr, [&] {
    Transport& t = as_transport(transport);
    if (request == nullptr) fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: request is NULL");
    Peer& p = checked_peer(t, peer, tag);
    const uint64_t bytes = checked_bytes(buf);
    auto r = std::make_unique<gw_transport_request>();
    r->transport = &t;
    r->peer = peer;
    r->expected_bytes = bytes;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
    param.cb.send = on_send_done;
    param.user_data = r.get();
    param.datatype = ucp_dt_make_contig(1);
    const uint64_t ucp_tag = (uint64_t{t.rank} << kTagBits) | tag;
    track(*r, ucp_tag_send_nbx(p.ep, buf->data, bytes, ucp_tag, &param));
    *request = r.release();
    return GW_OK;
  });
}

gw_status recv_start(void* transport, uint32_t peer, uint64_t tag, gw_tensor* buf,
                     gw_transport_request** request) {
  Transport* tp = static_cast<Transport*>(transport);
  return guarded(tp ? tp->host : nullptr, [&] {
    Transport& t = as_transport(transport);
    if (request == nullptr) fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: request is NULL");
    checked_peer(t, peer, tag);
    const uint64_t bytes = checked_bytes(buf);
    auto r = std::make_unique<gw_transport_request>();
    r->transport = &t;
    r->peer = peer;
    r->is_recv = true;
    r->expected_bytes = bytes;
    ucp_request_param_t param{};
    // UCX 1.13 does not fill recv_info when a receive completes inside the call, so the length of
    // the message would be lost: always complete through the callback.
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = on_recv_done;
    param.user_data = r.get();
    param.datatype = ucp_dt_make_contig(1);
    param.recv_info.tag_info = &r->recv_info;
    const uint64_t ucp_tag = (uint64_t{peer} << kTagBits) | tag;
    track(*r, ucp_tag_recv_nbx(t.worker, buf->data, bytes, ucp_tag, ~uint64_t{0}, &param));
    *request = r.release();
    return GW_OK;
  });
}

std::string peer_text(const gw_transport_request& r) { return "rank " + std::to_string(r.peer); }

gw_status test(void* transport, gw_transport_request* request, uint64_t* bytes) {
  Transport* tp = static_cast<Transport*>(transport);
  return guarded(tp ? tp->host : nullptr, [&] {
    Transport& t = as_transport(transport);
    if (request == nullptr) fail(GW_ERR_INVALID_ARGUMENT, "ucx transport: request is NULL");
    gw_transport_request& r = *request;
    if (r.done) {
      if (r.status == UCS_OK) {
        if (bytes != nullptr) *bytes = r.bytes;
        return GW_OK;
      }
      if (r.status == UCS_ERR_MESSAGE_TRUNCATED)
        fail(GW_ERR_MISMATCH, "ucx transport: a message from " + peer_text(r) + " is larger than the " +
                                  std::to_string(r.expected_bytes) +
                                  "-byte receive buffer (the ranks disagree on the size)");
      if (r.status == UCS_ERR_CANCELED) fail(GW_ERR_ABORTED, "ucx transport: the request was cancelled");
      fail(GW_ERR_TRANSPORT, "ucx transport: " + std::string(r.is_recv ? "receive from " : "send to ") +
                                 peer_text(r) + " failed: " + ucs_status_string(r.status) +
                                 " (the peer process probably exited or crashed)");
    }
    if (t.aborted.load()) fail(GW_ERR_ABORTED, "ucx transport: the communicator was aborted");
    if (t.stalled) fail_stalled();
    const Peer& p = *t.peers[r.peer];
    if (p.failed.load())
      fail(GW_ERR_TRANSPORT, "ucx transport: " + peer_text(r) + " failed: " + ucs_status_string(p.failure) +
                                 " (the peer process probably exited or crashed)");
    return GW_IN_PROGRESS;
  });
}

void request_free(void* transport, gw_transport_request* request) {
  if (request == nullptr) return;
  Transport* t = static_cast<Transport*>(transport);
  if (request->ucx != nullptr && t != nullptr) {
    // Cancelling completes a receive nothing matched yet at once (its callback releases the UCP
    // request). A send, or a receive already taking a message, cannot be cancelled: its buffer is the
    // caller's again after this call, so the transport stalls (see Transport::stalled).
    ucp_request_cancel(t->worker, request->ucx);
    if (request->ucx != nullptr) {
      // From a peer UCX already declared failed nothing arrives any more, and nothing leaves for it:
      // keep the request for its callback, without stalling the rest.
      const bool peer_failed = request->peer < t->peers.size() && t->peers[request->peer] != nullptr &&
                               t->peers[request->peer]->failed.load();
      if (peer_failed) {
        t->orphans.push_back(request);
        return;
      }
      if (!t->stalled)
        log(*t, GW_LOG_DEBUG, std::string("a ") + (request->is_recv ? "receive from" : "send to") + " rank " +
                                  std::to_string(request->peer) +
                                  " was freed before it completed; the transport stops driving UCX");
      t->stalled = true;
      t->orphans.push_back(request);
      return;
    }
  }
  delete request;
}

gw_status progress(void* transport) {
  Transport* tp = static_cast<Transport*>(transport);
  return guarded(tp ? tp->host : nullptr, [&] {
    Transport& t = as_transport(transport);
    if (t.stalled || t.aborted.load()) return GW_OK;  // nothing moves after an abort or an orphan
    while (ucp_worker_progress(t.worker) != 0) {
    }
    return GW_OK;
  });
}

gw_status abort_transport(void* transport) {
  if (transport == nullptr) return GW_ERR_INVALID_ARGUMENT;
  static_cast<Transport*>(transport)->aborted.store(true);
  return GW_OK;
}

const gw_transport_vtable kVtable = {
    sizeof(gw_transport_vtable),
    1u << GW_MEMORY_HOST,
    create,
    destroy,
    local_address,
    connect,
    send_start,
    recv_start,
    test,
    request_free,
    progress,
    abort_transport,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

const gw_component kComponents[] = {
    {sizeof(gw_component), GW_COMPONENT_TRANSPORT, "ucx",
     "Tagged point-to-point over UCX (shared memory, TCP, RDMA).", kConfigKeys,
     sizeof(kConfigKeys) / sizeof(kConfigKeys[0]), &kVtable},
    {sizeof(gw_component), GW_COMPONENT_TRANSPORT, "ucx_shm",
     "UCX over shared memory only, for the ranks of one host ([transport] intra = \"ucx_shm\").", kShmConfigKeys.data(),
     uint32_t(kShmConfigKeys.size()), &kVtable},
};

const gw_plugin_descriptor kDescriptor = {
    sizeof(gw_plugin_descriptor),
    GW_ABI_VERSION_MAJOR,
    GW_ABI_VERSION_MINOR,
    "ucx",
    "0.1.0",
    "UCX transport: shared memory, TCP and RDMA between ranks",
    nullptr,
    nullptr,
    kComponents,
    sizeof(kComponents) / sizeof(kComponents[0]),
    nullptr,
};

}  // namespace

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t) {
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &kDescriptor : nullptr;
}
