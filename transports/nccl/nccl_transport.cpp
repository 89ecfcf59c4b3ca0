// The NCCL transport: device buffers between GPUs, point-to-point and native collectives.
//
// - The communicator's unique id travels in rank 0's address blob, so it crosses the same bootstrap
//   rendezvous that connects every transport; no side channel.
// - The NCCL communicator is nonblocking (ncclCommInitRankConfig, blocking = 0): connect() returns
//   GW_IN_PROGRESS while ncclCommGetAsyncError says ncclInProgress, so the runtime's timeouts and
//   gw_comm_abort apply to creation as to everything else.
// - Point-to-point: sends and receives started between two progress/test calls are issued together in
//   one ncclGroupStart/ncclGroupEnd, so that ranks exchanging in both directions cannot deadlock. NCCL
//   has no tags: messages between two ranks match in the order they were started (see docs/nccl.md).
// - Native allreduce, allgather, broadcast and reduce-scatter on device buffers, ordered on the
//   tensor's stream (NULL: the transport's own stream).
// - Completion is a CUDA event recorded after the operation and polled with cudaEventQuery; nothing on
//   the progress path blocks. An operation that takes longer than the timeout, gw_comm_abort, an
//   asynchronous NCCL error, or freeing an operation still in flight ends the NCCL communicator with
//   ncclCommAbort: every pending and later request then fails.
// - Which GPU: [transport.nccl] cuda_device, or (-1, the default) the local rank modulo the visible devices;
//   the local rank comes from the launcher's variables (GW_LOCAL_RANK, LOCAL_RANK,
//   OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID).
#include <cuda_runtime_api.h>
#include <gradwire/plugin.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <new>
#include <string>
#include <vector>

namespace {

constexpr char kName[] = "nccl";
constexpr uint32_t kBlobMagic = 0x4c43434eu;  // "NCCL"

const gw_config_key kConfigKeys[] = {
    {sizeof(gw_config_key), "cuda_device", GW_CONFIG_INT, "-1",
     "CUDA device of this rank; -1 picks the local rank modulo the number of visible devices", -1.0, 1024.0,
     nullptr},
    {sizeof(gw_config_key), "close_timeout_s", GW_CONFIG_FLOAT, "10",
     "How long destroying the transport waits for NCCL to finish cleanly before aborting it", 0.0, 3600.0,
     nullptr},
};

using Clock = std::chrono::steady_clock;

struct Request {
  enum class State { Queued, Enqueuing, Running, Done, Failed };
  State state = State::Queued;
  bool p2p = false;
  bool is_send = false;
  uint32_t peer = 0;
  void* data = nullptr;
  uint64_t bytes = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  gw_status error = GW_OK;
  std::string message;
  Clock::time_point started = Clock::now();
};

struct Transport {
  const gw_host* host = nullptr;
  uint32_t rank = 0;
  uint32_t size = 1;
  int device = 0;
  double timeout_s = 300;
  double close_timeout_s = 10;
  std::vector<unsigned char> blob;
  ncclComm_t comm = nullptr;
  bool init_started = false;
  bool ready = false;
  bool broken = false;          // ncclCommAbort was called: every request fails
  gw_status broken_status = GW_OK;
  std::string broken_message;
  std::atomic<bool> abort_requested{false};
  cudaStream_t own_stream = nullptr;
  std::deque<Request*> queued;  // p2p operations not issued yet (the next group)
  std::vector<cudaEvent_t> spare_events;
};

gw_status error(const gw_host* host, gw_status st, const std::string& message) {
  if (host && host->set_error) host->set_error(host->ctx, ("nccl transport: " + message).c_str());
  return st;
}

void log(const Transport& t, gw_log_level level, const std::string& message) {
  if (t.host && t.host->log) t.host->log(t.host->ctx, level, kName, message.c_str());
}

std::string nccl_text(ncclResult_t r) { return std::string(ncclGetErrorString(r)) + " (ncclResult " + std::to_string(int(r)) + ")"; }
std::string cuda_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

Transport* as_transport(void* p) { return static_cast<Transport*>(p); }
Request* as_request(gw_transport_request* r) { return reinterpret_cast<Request*>(r); }
gw_transport_request* as_handle(Request* r) { return reinterpret_cast<gw_transport_request*>(r); }

// Ends the NCCL communicator: every request fails with `status` from now on.
void break_comm(Transport& t, gw_status status, const std::string& message) {
  if (t.broken) return;
  t.broken = true;
  t.broken_status = status;
  t.broken_message = message;
  log(t, GW_LOG_WARN, "aborting the NCCL communicator: " + message);
  if (t.comm != nullptr) {
    ncclCommAbort(t.comm);
    t.comm = nullptr;
  }
  t.ready = false;
}

// Checks the asynchronous state: ncclSuccess -> GW_OK, ncclInProgress -> GW_IN_PROGRESS, else the
// communicator is broken (aborted) and the error returned.
gw_status comm_state(Transport& t) {
  if (t.abort_requested.load()) break_comm(t, GW_ERR_ABORTED, "gw_comm_abort was called");
  if (t.broken) return error(t.host, t.broken_status, t.broken_message);
  if (t.comm == nullptr) return error(t.host, GW_ERR_STATE, "the transport is not connected yet");
  ncclResult_t async = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(t.comm, &async);
  if (r != ncclSuccess) async = r;
  if (async == ncclSuccess) return GW_OK;
  if (async == ncclInProgress) return GW_IN_PROGRESS;
  break_comm(t, GW_ERR_TRANSPORT, "NCCL reported an asynchronous error: " + nccl_text(async) +
                                      " (a peer failed or the network broke; NCCL_DEBUG=WARN says more)");
  return error(t.host, t.broken_status, t.broken_message);
}

gw_status set_device(Transport& t) {
  const cudaError_t e = cudaSetDevice(t.device);
  if (e != cudaSuccess) return error(t.host, GW_ERR_TRANSPORT, "cudaSetDevice(" + std::to_string(t.device) + "): " + cuda_text(e));
  return GW_OK;
}

gw_status check_device_tensor(Transport& t, const gw_tensor* buf, const char* what) {
  if (buf == nullptr || !GW_STRUCT_HAS(buf, gw_tensor, stream))
    return error(t.host, GW_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL or has a bad struct_size");
  if (buf->memory != GW_MEMORY_CUDA)
    return error(t.host, GW_ERR_UNSUPPORTED,
                 std::string(what) + " is host memory; the NCCL transport moves CUDA device buffers only "
                                     "(use the UCX transport for host memory)");
  if (buf->count > 0 && buf->data == nullptr) return error(t.host, GW_ERR_INVALID_ARGUMENT, std::string(what) + "->data is NULL");
  if (buf->device != t.device)
    return error(t.host, GW_ERR_INVALID_ARGUMENT,
                 std::string(what) + " lives on CUDA device " + std::to_string(buf->device) + " but this rank's NCCL "
                 "communicator uses device " + std::to_string(t.device) + " ([transport.nccl] cuda_device, local rank)");
  return GW_OK;
}

bool nccl_dtype(gw_dtype d, ncclDataType_t* out) {
  switch (d) {
    case GW_DTYPE_F32: *out = ncclFloat32; return true;
    case GW_DTYPE_F64: *out = ncclFloat64; return true;
    case GW_DTYPE_F16: *out = ncclFloat16; return true;
    case GW_DTYPE_BF16: *out = ncclBfloat16; return true;
    case GW_DTYPE_I32: *out = ncclInt32; return true;
    case GW_DTYPE_I64: *out = ncclInt64; return true;
    case GW_DTYPE_U8: *out = ncclUint8; return true;
    default: return false;
  }
}

bool nccl_op(gw_reduce_op op, ncclRedOp_t* out) {
  switch (op) {
    case GW_REDUCE_SUM: *out = ncclSum; return true;
    case GW_REDUCE_AVG: *out = ncclAvg; return true;
    case GW_REDUCE_MIN: *out = ncclMin; return true;
    case GW_REDUCE_MAX: *out = ncclMax; return true;
    default: return false;
  }
}

uint64_t dtype_size(gw_dtype d) {
  switch (d) {
    case GW_DTYPE_F32: case GW_DTYPE_I32: return 4;
    case GW_DTYPE_F64: case GW_DTYPE_I64: return 8;
    case GW_DTYPE_F16: case GW_DTYPE_BF16: return 2;
    case GW_DTYPE_U8: return 1;
    default: return 0;
  }
}

gw_status take_event(Transport& t, cudaEvent_t* out) {
  if (!t.spare_events.empty()) {
    *out = t.spare_events.back();
    t.spare_events.pop_back();
    return GW_OK;
  }
  const cudaError_t e = cudaEventCreateWithFlags(out, cudaEventDisableTiming);
  if (e != cudaSuccess) return error(t.host, GW_ERR_TRANSPORT, "cudaEventCreateWithFlags: " + cuda_text(e));
  return GW_OK;
}

void fail_request(Request& r, gw_status st, const std::string& message) {
  r.state = Request::State::Failed;
  r.error = st;
  r.message = message;
}

// Records the completion event of a request whose work NCCL has enqueued.
void record(Request& r) {
  const cudaError_t e = cudaEventRecord(r.event, r.stream);
  if (e != cudaSuccess) return fail_request(r, GW_ERR_TRANSPORT, "cudaEventRecord: " + cuda_text(e));
  r.state = Request::State::Running;
}

// Issues the queued point-to-point operations as one NCCL group.
gw_status flush_group(Transport& t) {
  if (t.queued.empty()) return GW_OK;
  gw_status st = comm_state(t);
  if (st != GW_OK) return st;  // GW_IN_PROGRESS: an earlier operation is still being enqueued; try later
  ncclResult_t r = ncclGroupStart();
  for (Request* q : t.queued) {
    if (r != ncclSuccess) break;
    r = q->is_send ? ncclSend(q->data, size_t(q->bytes), ncclUint8, int(q->peer), t.comm, q->stream)
                   : ncclRecv(q->data, size_t(q->bytes), ncclUint8, int(q->peer), t.comm, q->stream);
  }
  const ncclResult_t end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  if (r != ncclSuccess && r != ncclInProgress) {
    break_comm(t, GW_ERR_TRANSPORT, "issuing " + std::to_string(t.queued.size()) + " sends/receives: " + nccl_text(r));
    for (Request* q : t.queued) fail_request(*q, t.broken_status, t.broken_message);
    t.queued.clear();
    return error(t.host, t.broken_status, t.broken_message);
  }
  for (Request* q : t.queued) q->state = Request::State::Enqueuing;
  t.queued.clear();
  return GW_OK;
}

gw_status new_request(Transport& t, Request** out) {
  Request* r = new (std::nothrow) Request();
  if (r == nullptr) return error(t.host, GW_ERR_NO_MEMORY, "out of memory for a request");
  const gw_status st = take_event(t, &r->event);
  if (st != GW_OK) {
    delete r;
    return st;
  }
  *out = r;
  return GW_OK;
}

// ---- vtable ------------------------------------------------------------------------------------------

gw_status create(void*, const gw_host* host, const gw_config* config, const gw_transport_init* init, void** out) {
  if (init == nullptr || out == nullptr || !GW_STRUCT_HAS(init, gw_transport_init, timeout_s))
    return error(host, GW_ERR_INVALID_ARGUMENT, "create: NULL init or output, or an init shorter than its first version");
  *out = nullptr;
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0)
    return error(host, GW_ERR_UNSUPPORTED,
                 "no CUDA device is usable on this machine (" + (e != cudaSuccess ? cuda_text(e) : std::string("0 devices")) +
                     "); the NCCL transport needs one GPU per rank. On a machine without GPUs set [transport] device = "
                     "\"none\" (and do not name nccl in [transport] inter)");
  int64_t wanted = -1;
  if (config != nullptr && host->config_get_int != nullptr) host->config_get_int(config, "cuda_device", &wanted);
  double close_timeout = 10;
  if (config != nullptr && host->config_get_float != nullptr) host->config_get_float(config, "close_timeout_s", &close_timeout);
  if (wanted >= devices)
    return error(host, GW_ERR_CONFIG, "[transport.nccl] cuda_device = " + std::to_string(wanted) + " but only " +
                                          std::to_string(devices) + " CUDA devices are visible (CUDA_VISIBLE_DEVICES?)");
  auto* t = new (std::nothrow) Transport();
  if (t == nullptr) return error(host, GW_ERR_NO_MEMORY, "out of memory");
  t->host = host;
  t->rank = init->rank;
  t->size = init->world_size;
  t->timeout_s = init->timeout_s > 0 ? init->timeout_s : 300;
  t->close_timeout_s = close_timeout;
  t->device = wanted >= 0 ? int(wanted) : int(init->local_rank % uint32_t(devices));
  gw_status st = set_device(*t);
  if (st == GW_OK) {
    const cudaError_t se = cudaStreamCreateWithFlags(&t->own_stream, cudaStreamNonBlocking);
    if (se != cudaSuccess) st = error(host, GW_ERR_TRANSPORT, "cudaStreamCreateWithFlags: " + cuda_text(se));
  }
  // Rank 0's blob carries the NCCL unique id; the others' carry only the header.
  if (st == GW_OK) {
    t->blob.resize(8 + (t->rank == 0 ? sizeof(ncclUniqueId) : 0));
    const uint32_t has_id = t->rank == 0 ? 1u : 0u;
    std::memcpy(t->blob.data(), &kBlobMagic, 4);
    std::memcpy(t->blob.data() + 4, &has_id, 4);
    if (t->rank == 0) {
      ncclUniqueId id;
      const ncclResult_t r = ncclGetUniqueId(&id);
      if (r != ncclSuccess) st = error(host, GW_ERR_TRANSPORT, "ncclGetUniqueId: " + nccl_text(r));
      else std::memcpy(t->blob.data() + 8, &id, sizeof id);
    }
  }
  if (st != GW_OK) {
    if (t->own_stream) cudaStreamDestroy(t->own_stream);
    delete t;
    return st;
  }
  log(*t, GW_LOG_INFO, "rank " + std::to_string(t->rank) + " uses CUDA device " + std::to_string(t->device) + " of " +
                           std::to_string(devices) + " visible (local rank " + std::to_string(init->local_rank) + ")");
  *out = t;
  return GW_OK;
}

void destroy(void* p) {
  Transport* t = as_transport(p);
  if (t == nullptr) return;
  set_device(*t);
  if (t->comm != nullptr && !t->broken && t->ready) {
    // A clean finish: ncclCommFinalize, polled for at most close_timeout_s, then destroy; abort otherwise.
    ncclResult_t async = ncclCommFinalize(t->comm);
    const auto deadline = Clock::now() + std::chrono::duration<double>(t->close_timeout_s);
    while (async == ncclSuccess || async == ncclInProgress) {
      if (ncclCommGetAsyncError(t->comm, &async) != ncclSuccess) async = ncclSystemError;
      if (async != ncclInProgress || Clock::now() > deadline) break;
    }
    if (async == ncclSuccess) {
      ncclCommDestroy(t->comm);
    } else {
      log(*t, GW_LOG_WARN, "NCCL did not finalize cleanly (" + nccl_text(async) + "); aborting the communicator");
      ncclCommAbort(t->comm);
    }
    t->comm = nullptr;
  } else if (t->comm != nullptr) {
    ncclCommAbort(t->comm);
    t->comm = nullptr;
  }
  for (cudaEvent_t e : t->spare_events) cudaEventDestroy(e);
  if (t->own_stream) cudaStreamDestroy(t->own_stream);
  delete t;
}

gw_status local_address(void* p, const void** blob, uint64_t* size) {
  Transport* t = as_transport(p);
  *blob = t->blob.data();
  *size = t->blob.size();
  return GW_OK;
}

gw_status connect(void* p, const void* const* blobs, const uint64_t* sizes) {
  Transport* t = as_transport(p);
  if (t->ready) return GW_OK;
  gw_status st = set_device(*t);
  if (st != GW_OK) return st;
  if (!t->init_started) {
    uint32_t magic = 0, has_id = 0;
    if (sizes[0] != 8 + sizeof(ncclUniqueId)) {
      return error(t->host, GW_ERR_CORRUPT, "rank 0's address is " + std::to_string(sizes[0]) +
                                                 " bytes, not an NCCL unique id (is rank 0 using the NCCL transport?)");
    }
    std::memcpy(&magic, blobs[0], 4);
    std::memcpy(&has_id, static_cast<const unsigned char*>(blobs[0]) + 4, 4);
    if (magic != kBlobMagic || has_id != 1)
      return error(t->host, GW_ERR_CORRUPT, "rank 0's address is not an NCCL transport address");
    ncclUniqueId id;
    std::memcpy(&id, static_cast<const unsigned char*>(blobs[0]) + 8, sizeof id);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t r = ncclCommInitRankConfig(&t->comm, int(t->size), id, int(t->rank), &config);
    t->init_started = true;
    if (r != ncclSuccess && r != ncclInProgress) {
      break_comm(*t, GW_ERR_TRANSPORT, "ncclCommInitRankConfig (rank " + std::to_string(t->rank) + " of " +
                                           std::to_string(t->size) + "): " + nccl_text(r));
      return error(t->host, t->broken_status, t->broken_message);
    }
  }
  st = comm_state(*t);
  if (st == GW_OK) {
    t->ready = true;
    log(*t, GW_LOG_INFO, "NCCL communicator ready (rank " + std::to_string(t->rank) + " of " + std::to_string(t->size) + ")");
  }
  return st;
}

gw_status p2p_start(Transport& t, uint32_t peer, const gw_tensor* buf, bool is_send, gw_transport_request** request) {
  if (request == nullptr) return error(t.host, GW_ERR_INVALID_ARGUMENT, "request output is NULL");
  *request = nullptr;
  if (!t.ready && !t.broken) return error(t.host, GW_ERR_STATE, "send/recv before connect completed");
  gw_status st = check_device_tensor(t, buf, is_send ? "send buffer" : "receive buffer");
  if (st != GW_OK) return st;
  if (peer >= t.size) return error(t.host, GW_ERR_INVALID_ARGUMENT, "peer " + std::to_string(peer) + " is not a rank");
  const uint64_t bytes = buf->count * dtype_size(buf->dtype);
  if (bytes == 0 && buf->count > 0) return error(t.host, GW_ERR_INVALID_ARGUMENT, "buffer dtype is not a gw_dtype");
  Request* r = nullptr;
  if ((st = new_request(t, &r)) != GW_OK) return st;
  r->p2p = true;
  r->is_send = is_send;
  r->peer = peer;
  r->data = buf->data;
  r->bytes = bytes;
  r->stream = buf->stream ? static_cast<cudaStream_t>(buf->stream) : t.own_stream;
  if (t.broken) fail_request(*r, t.broken_status, t.broken_message);
  else t.queued.push_back(r);
  *request = as_handle(r);
  return GW_OK;
}

gw_status send_start(void* p, uint32_t peer, uint64_t, const gw_tensor* buf, gw_transport_request** request) {
  return p2p_start(*as_transport(p), peer, buf, true, request);
}

gw_status recv_start(void* p, uint32_t peer, uint64_t, gw_tensor* buf, gw_transport_request** request) {
  return p2p_start(*as_transport(p), peer, buf, false, request);
}

gw_status progress(void* p) {
  Transport* t = as_transport(p);
  if (t->abort_requested.load()) break_comm(*t, GW_ERR_ABORTED, "gw_comm_abort was called");
  if (t->broken || !t->ready) return GW_OK;
  if (set_device(*t) != GW_OK) return GW_ERR_TRANSPORT;
  const gw_status st = flush_group(*t);
  return st == GW_IN_PROGRESS ? GW_OK : st;
}

gw_status test(void* p, gw_transport_request* handle, uint64_t* bytes) {
  Transport* t = as_transport(p);
  Request* r = as_request(handle);
  if (r == nullptr) return error(t->host, GW_ERR_INVALID_ARGUMENT, "test: NULL request");
  if (r->state == Request::State::Done) {
    if (bytes) *bytes = r->bytes;
    return GW_OK;
  }
  if (r->state != Request::State::Failed) {
    if (set_device(*t) != GW_OK) return GW_ERR_TRANSPORT;
    gw_status st = r->state == Request::State::Queued ? flush_group(*t) : GW_OK;
    if (st < 0 && r->state != Request::State::Failed) fail_request(*r, st, t->broken_message);
    if (r->state == Request::State::Enqueuing) {
      st = comm_state(*t);
      if (st == GW_OK) record(*r);
      else if (st < 0) fail_request(*r, st, t->broken_message);
    }
    if (r->state == Request::State::Running) {
      if (t->abort_requested.load() || t->broken) {
        comm_state(*t);
        fail_request(*r, t->broken_status, t->broken_message);
      } else {
        const cudaError_t e = cudaEventQuery(r->event);
        if (e == cudaSuccess) {
          r->state = Request::State::Done;
        } else if (e != cudaErrorNotReady) {
          fail_request(*r, GW_ERR_TRANSPORT, "waiting for the operation's CUDA event: " + cuda_text(e));
        } else {
          st = comm_state(*t);  // an asynchronous error (a peer died) ends the wait
          if (st < 0) fail_request(*r, st, t->broken_message);
        }
      }
    }
    if (r->state != Request::State::Done && r->state != Request::State::Failed) {
      const double waited = std::chrono::duration<double>(Clock::now() - r->started).count();
      if (waited > t->timeout_s) {
        break_comm(*t, GW_ERR_TIMEOUT, "an operation did not complete within " + std::to_string(t->timeout_s) +
                                           " s ([runtime] timeout_s): a peer is stuck, gone, or issued other operations");
        fail_request(*r, GW_ERR_TIMEOUT, t->broken_message);
      } else {
        return GW_IN_PROGRESS;
      }
    }
  }
  if (r->state == Request::State::Failed) return error(t->host, r->error, r->message);
  if (bytes) *bytes = r->bytes;
  return GW_OK;
}

void request_free(void* p, gw_transport_request* handle) {
  Transport* t = as_transport(p);
  Request* r = as_request(handle);
  if (r == nullptr) return;
  set_device(*t);
  for (auto it = t->queued.begin(); it != t->queued.end(); ++it)
    if (*it == r) {  // never issued: nothing to cancel
      t->queued.erase(it);
      r->state = Request::State::Failed;
      break;
    }
  if (r->state == Request::State::Enqueuing || r->state == Request::State::Running) {
    // NCCL cannot cancel one operation: the device may still write into a buffer the caller now reuses.
    break_comm(*t, GW_ERR_ABORTED, "an operation was freed before it completed (NCCL cannot cancel one operation)");
  }
  if (r->state == Request::State::Done || t->broken) t->spare_events.push_back(r->event);
  else cudaEventDestroy(r->event);
  delete r;
}

gw_status abort_all(void* p) {
  as_transport(p)->abort_requested.store(true);
  return GW_OK;
}

// Native collectives: checked, then issued on the tensor's stream.
gw_status collective_start(Transport& t, const char* what, const gw_tensor* in, const gw_tensor* out,
                           gw_transport_request** request, Request** made) {
  if (request == nullptr) return error(t.host, GW_ERR_INVALID_ARGUMENT, std::string(what) + ": request output is NULL");
  *request = nullptr;
  if (!t.ready && !t.broken) return error(t.host, GW_ERR_STATE, std::string(what) + " before connect completed");
  gw_status st = check_device_tensor(t, in, "in");
  if (st == GW_OK && out != in) st = check_device_tensor(t, out, "out");
  if (st != GW_OK) return st;
  if (in->dtype != out->dtype) return error(t.host, GW_ERR_INVALID_ARGUMENT, std::string(what) + ": in and out dtypes differ");
  if (set_device(t) != GW_OK) return GW_ERR_TRANSPORT;
  st = flush_group(t);  // point-to-point started earlier goes first
  if (st < 0) return st;
  if (st == GW_IN_PROGRESS)
    return error(t.host, GW_ERR_STATE, std::string(what) + ": the previous operation is still being enqueued; test it first");
  Request* r = nullptr;
  if ((st = new_request(t, &r)) != GW_OK) return st;
  r->stream = out->stream ? static_cast<cudaStream_t>(out->stream) : t.own_stream;
  *made = r;
  *request = as_handle(r);
  return GW_OK;
}

gw_status issued(Transport& t, Request& r, ncclResult_t result, const char* what) {
  if (t.broken) {
    fail_request(r, t.broken_status, t.broken_message);
    return GW_OK;
  }
  if (result == ncclSuccess || result == ncclInProgress) {
    r.state = Request::State::Enqueuing;
    return GW_OK;
  }
  break_comm(t, GW_ERR_TRANSPORT, std::string(what) + ": " + nccl_text(result));
  fail_request(r, t.broken_status, t.broken_message);
  return GW_OK;
}

gw_status allreduce_start(void* p, const gw_tensor* in, gw_tensor* out, gw_reduce_op op, gw_transport_request** request) {
  Transport& t = *as_transport(p);
  ncclDataType_t dt;
  ncclRedOp_t nop;
  if (in == nullptr || out == nullptr) return error(t.host, GW_ERR_INVALID_ARGUMENT, "allreduce: NULL tensor");
  if (!nccl_dtype(out->dtype, &dt) || out->dtype == GW_DTYPE_U8)
    return error(t.host, GW_ERR_UNSUPPORTED, "allreduce: dtype is not reducible by NCCL");
  if (!nccl_op(op, &nop)) return error(t.host, GW_ERR_INVALID_ARGUMENT, "allreduce: not a gw_reduce_op");
  if (in->count != out->count) return error(t.host, GW_ERR_INVALID_ARGUMENT, "allreduce: in and out counts differ");
  Request* r = nullptr;
  gw_status st = collective_start(t, "allreduce", in, out, request, &r);
  if (st != GW_OK) return st;
  r->bytes = out->count * dtype_size(out->dtype);
  return issued(t, *r, ncclAllReduce(in->data, out->data, size_t(out->count), dt, nop, t.comm, r->stream), "ncclAllReduce");
}

gw_status allgather_start(void* p, const gw_tensor* in, gw_tensor* out, gw_transport_request** request) {
  Transport& t = *as_transport(p);
  ncclDataType_t dt;
  if (in == nullptr || out == nullptr) return error(t.host, GW_ERR_INVALID_ARGUMENT, "allgather: NULL tensor");
  if (!nccl_dtype(out->dtype, &dt)) return error(t.host, GW_ERR_INVALID_ARGUMENT, "allgather: dtype is not a gw_dtype");
  if (out->count != in->count * t.size)
    return error(t.host, GW_ERR_INVALID_ARGUMENT, "allgather: out needs world size x in elements");
  Request* r = nullptr;
  gw_status st = collective_start(t, "allgather", in, out, request, &r);
  if (st != GW_OK) return st;
  r->bytes = out->count * dtype_size(out->dtype);
  return issued(t, *r, ncclAllGather(in->data, out->data, size_t(in->count), dt, t.comm, r->stream), "ncclAllGather");
}

gw_status broadcast_start(void* p, gw_tensor* buf, uint32_t root, gw_transport_request** request) {
  Transport& t = *as_transport(p);
  ncclDataType_t dt;
  if (buf == nullptr) return error(t.host, GW_ERR_INVALID_ARGUMENT, "broadcast: NULL tensor");
  if (!nccl_dtype(buf->dtype, &dt)) return error(t.host, GW_ERR_INVALID_ARGUMENT, "broadcast: dtype is not a gw_dtype");
  if (root >= t.size) return error(t.host, GW_ERR_INVALID_ARGUMENT, "broadcast: root is not a rank");
  Request* r = nullptr;
  gw_status st = collective_start(t, "broadcast", buf, buf, request, &r);
  if (st != GW_OK) return st;
  r->bytes = buf->count * dtype_size(buf->dtype);
  return issued(t, *r, ncclBroadcast(buf->data, buf->data, size_t(buf->count), dt, int(root), t.comm, r->stream),
                "ncclBroadcast");
}

gw_status reduce_scatter_start(void* p, const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                               gw_transport_request** request) {
  Transport& t = *as_transport(p);
  ncclDataType_t dt;
  ncclRedOp_t nop;
  if (in == nullptr || out == nullptr) return error(t.host, GW_ERR_INVALID_ARGUMENT, "reduce_scatter: NULL tensor");
  if (!nccl_dtype(out->dtype, &dt) || out->dtype == GW_DTYPE_U8)
    return error(t.host, GW_ERR_UNSUPPORTED, "reduce_scatter: dtype is not reducible by NCCL");
  if (!nccl_op(op, &nop)) return error(t.host, GW_ERR_INVALID_ARGUMENT, "reduce_scatter: not a gw_reduce_op");
  if (in->count != out->count * t.size)
    return error(t.host, GW_ERR_INVALID_ARGUMENT, "reduce_scatter: in needs world size x out elements");
  Request* r = nullptr;
  gw_status st = collective_start(t, "reduce_scatter", in, out, request, &r);
  if (st != GW_OK) return st;
  r->bytes = out->count * dtype_size(out->dtype);
  return issued(t, *r, ncclReduceScatter(in->data, out->data, size_t(out->count), dt, nop, t.comm, r->stream),
                "ncclReduceScatter");
}

const gw_transport_vtable kVtable = {
    sizeof(gw_transport_vtable),
    1u << GW_MEMORY_CUDA,
    create,
    destroy,
    local_address,
    connect,
    send_start,
    recv_start,
    test,
    request_free,
    progress,
    abort_all,
    allreduce_start,
    allgather_start,
    broadcast_start,
    reduce_scatter_start,
    nullptr,
};

const gw_component kComponents[] = {
    {sizeof(gw_component), GW_COMPONENT_TRANSPORT, kName,
     "NCCL between GPUs: device buffers, grouped point-to-point and native collectives", kConfigKeys,
     uint32_t(sizeof(kConfigKeys) / sizeof(kConfigKeys[0])), &kVtable},
};

const gw_plugin_descriptor kDescriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "nccl", "1.0.0",
    "Transport over NCCL: device buffers between GPUs", nullptr, nullptr, kComponents, 1u, nullptr,
};

}  // namespace

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t) {
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &kDescriptor : nullptr;
}
