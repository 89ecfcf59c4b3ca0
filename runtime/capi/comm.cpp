// gw_comm_*, gw_request_* and the collectives of the C ABI.
#include <gradwire/gradwire.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "capi/blocking.hpp"
#include "collectives/algorithms.hpp"
#include "comm/allreduce_start.hpp"
#include "comm/communicator.hpp"
#include "comm/create.hpp"
#include "comm/elastic.hpp"
#include "bootstrap/launch_env.hpp"
#include "comm/native.hpp"
#include "core/abi_struct.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"
#include "instance/runtime.hpp"
#include "kernels/reduce.hpp"

namespace {

using gw::capi::blocking;
using gw::comm::CollectiveKind;
using gw::comm::Communicator;
using gw::comm::Signature;
using gw::comm::Task;

Communicator& get(gw_comm* comm) {
  gw::require(comm, "comm");
  return *comm->impl;
}

gw_tensor checked(const gw_tensor* t, const char* what, bool reduction) {
  // Device memory goes on to the native-collective dispatch (comm/native.hpp), which refuses it clearly
  // where the transport cannot take it.
  const gw_tensor out = gw::read_tensor(t, what);
  if (reduction)
    gw::require_dtype(out, what, ~(1u << GW_DTYPE_U8), "a reduction", "reductions take f32, f64, f16, bf16, i32 or i64");
  return out;
}

void check_op(gw_reduce_op op) {
  if (op != GW_REDUCE_SUM && op != GW_REDUCE_AVG && op != GW_REDUCE_MIN && op != GW_REDUCE_MAX)
    gw::fail(GW_ERR_INVALID_ARGUMENT, "reduce op " + std::to_string(int(op)) + " is not a gw_reduce_op");
}

void check_same_dtype(const gw_tensor& in, const gw_tensor& out) {
  if (in.dtype != out.dtype)
    gw::fail(GW_ERR_INVALID_ARGUMENT, std::string("in is ") + gw_dtype_name(in.dtype) + " but out is " +
                                          gw_dtype_name(out.dtype) + "; they must match");
}

uint64_t bytes_of(const gw_tensor& t) { return t.count * gw_dtype_size(t.dtype); }

void copy_if_distinct(void* dst, const void* src, uint64_t bytes) {
  if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
}

// A request that failed while starting is still returned; its status says why.
gw_status start(gw_request** request, gw_request* r) {
  *request = r;
  return GW_OK;
}

// The checks every reduction (allreduce, reduce-scatter) makes before it starts.
struct ReductionArgs {
  Communicator& comm;
  gw_tensor in;  // copies: checked() reads the caller's structs into this library's version
  gw_tensor out;
};
ReductionArgs reduction_args(gw_comm* comm, const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                             gw_request** request) {
  Communicator& c = get(comm);
  gw::require(request, "request (output)");
  const gw_tensor i = checked(in, "in", true);
  const gw_tensor o = checked(out, "out", true);
  check_op(op);
  check_same_dtype(i, o);
  return {c, i, o};
}


gw_status start_allgatherv(gw_comm* comm, const gw_tensor* in, gw_tensor* out, std::vector<uint64_t> counts,
                           CollectiveKind kind, gw_request** request) {
  Communicator& c = get(comm);
  gw::require(request, "request (output)");
  const gw_tensor i = checked(in, "in", false);
  const gw_tensor o = checked(out, "out", false);
  check_same_dtype(i, o);
  if (kind == CollectiveKind::Allgather && i.count * c.size() == o.count)
    if (gw_request* native = gw::comm::start_native(c, {kind, &i, out, GW_REDUCE_SUM, 0})) return start(request, native);
  gw::comm::require_p2p_memory(c, i, "in");
  gw::comm::require_p2p_memory(c, o, "out");
  const uint32_t r = c.rank();
  uint64_t total = 0;
  for (uint64_t n : counts) total += n;
  if (i.count != counts[r])
    gw::fail(GW_ERR_INVALID_ARGUMENT, "in has " + std::to_string(i.count) + " elements but this rank's count is " +
                                          std::to_string(counts[r]));
  if (o.count != total)
    gw::fail(GW_ERR_INVALID_ARGUMENT, "out has " + std::to_string(o.count) + " elements; it needs the sum of all " +
                                          "ranks' counts, " + std::to_string(total));
  const uint32_t esize = gw_dtype_size(o.dtype);
  const gw::coll::Blocks blocks = gw::coll::blocks_of(counts, esize);
  copy_if_distinct(blocks.at(o.data, r), i.data, blocks.bytes(r));
  Signature s{kind, GW_REDUCE_SUM, o.dtype, kind == CollectiveKind::Allgather ? i.count : total, 0, 0};
  void* buf = o.data;
  *request = c.start_collective(s, [=](gw::comm::Collective& col) { return gw::coll::allgatherv_ring(col, buf, blocks); });
  return GW_OK;
}

}  // namespace

extern "C" {

GW_API gw_status gw_comm_create(gw_runtime* runtime, const gw_comm_options* options, gw_comm** comm) {
  return gw::guard([&] {
    gw::require(comm, "comm (output)");
    *comm = nullptr;
    gw::require(runtime, "runtime");
    const gw_comm_options o = gw::abi::read(options, "options");
    auto c = std::make_unique<gw_comm>();
    const char* join = std::getenv("GW_ELASTIC_JOIN");
    if (gw::comm::elastic_enabled(runtime->impl) && join && std::string(join) == "1") {
      // A restarted (or new) process of an elastic job: admitted by the members (docs/elastic.md).
      c->impl = gw::comm::join_running_job(runtime->impl, o, &c->elastic);
    } else {
      c->impl = gw::comm::create_communicator(runtime->impl, o);
    }
    if (gw::comm::elastic_enabled(runtime->impl) && !c->elastic) {
      gw::bootstrap::LaunchOverrides overrides;
      overrides.root_address = o.root_address ? o.root_address : "";
      overrides.root_port = o.root_port;
      const gw::bootstrap::LaunchInfo launch = gw::bootstrap::detect_launch(overrides);
      c->elastic = gw::comm::open_membership(*c->impl, runtime->impl, launch.root_address, launch.root_port);
    }
    *comm = c.release();
    return GW_OK;
  });
}

GW_API gw_status gw_comm_destroy(gw_comm* comm) {
  return gw::guard([&] {
    Communicator& c = get(comm);
    if (c.live_requests() > 0)
      gw::fail(GW_ERR_STATE, std::to_string(c.live_requests()) +
                                 " requests of this communicator are not freed; gw_request_free them first");
    delete comm;
    return GW_OK;
  });
}

GW_API uint32_t gw_comm_rank(const gw_comm* comm) { return comm ? comm->impl->rank() : 0; }
GW_API uint32_t gw_comm_size(const gw_comm* comm) { return comm ? comm->impl->size() : 0; }

GW_API uint64_t gw_comm_membership_epoch(const gw_comm* comm) {
  return comm && comm->elastic ? comm->elastic->epoch : 0;
}

GW_API gw_status gw_comm_abort(gw_comm* comm) {
  if (comm == nullptr) return GW_ERR_INVALID_ARGUMENT;
  comm->impl->abort();
  return GW_OK;
}

GW_API gw_status gw_request_test(gw_request* request) {
  return gw::guard([&] {
    gw::require(request, "request");
    const gw_status st = request->comm->test(request);
    if (st < 0) gw::fail(st, request->error);
    return st;
  });
}

GW_API gw_status gw_request_wait(gw_request* request, double timeout_s) {
  return gw::guard([&] {
    gw::require(request, "request");
    const gw_status st = request->comm->wait(request, timeout_s);
    if (st == GW_ERR_TIMEOUT && request->status == GW_IN_PROGRESS)
      gw::fail(GW_ERR_TIMEOUT, "the request did not complete within " + std::to_string(timeout_s) +
                                   " s; it is still running (wait again, or free it)");
    if (st < 0) gw::fail(st, request->error);
    return st;
  });
}

GW_API gw_status gw_request_free(gw_request* request) {
  return gw::guard([&] {
    gw::require(request, "request");
    request->comm->free(request);
    return GW_OK;
  });
}


GW_API gw_status gw_allreduce_start(gw_comm* comm, const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                                    gw_request** request) {
  return gw::guard([&] {
    auto [c, i, o] = reduction_args(comm, in, out, op, request);
    if (i.count != o.count)
      gw::fail(GW_ERR_INVALID_ARGUMENT, "in has " + std::to_string(i.count) + " elements, out " +
                                            std::to_string(o.count) + "; allreduce needs the same count");
    if (gw_request* native = gw::comm::start_native(c, {CollectiveKind::Allreduce, &i, out, op, 0}))
      return start(request, native);
    copy_if_distinct(o.data, i.data, bytes_of(o));
    return start(request, gw::comm::start_allreduce_dense(c, o.data, o.count, o.dtype, op));
  });
}

GW_API gw_status gw_allreduce(gw_comm* comm, const gw_tensor* in, gw_tensor* out, gw_reduce_op op) {
  return blocking(comm, [&](gw_request** r) { return gw_allreduce_start(comm, in, out, op, r); });
}

GW_API gw_status gw_reduce_scatter_start(gw_comm* comm, const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                                         gw_request** request) {
  return gw::guard([&] {
    auto [c, i, o] = reduction_args(comm, in, out, op, request);
    const uint32_t n = c.size();
    if (i.count != o.count * n)
      gw::fail(GW_ERR_INVALID_ARGUMENT, "reduce_scatter: in has " + std::to_string(i.count) + " elements; it needs " +
                                            std::to_string(n) + " (ranks) x " + std::to_string(o.count) + " (out)");
    if (gw_request* native = gw::comm::start_native(c, {CollectiveKind::ReduceScatter, &i, out, op, 0}))
      return start(request, native);
    Signature s{CollectiveKind::ReduceScatter, op, o.dtype, o.count, 0, 0};
    const gw_dtype dtype = o.dtype;
    const uint64_t count = o.count;
    void* out_data = o.data;
    const void* in_data = i.data;
    return start(request, c.start_collective(s, [=](gw::comm::Collective& col) {
      return gw::coll::reduce_scatter(col, in_data, out_data, count, dtype, op);
    }));
  });
}

GW_API gw_status gw_reduce_scatter(gw_comm* comm, const gw_tensor* in, gw_tensor* out, gw_reduce_op op) {
  return blocking(comm, [&](gw_request** r) { return gw_reduce_scatter_start(comm, in, out, op, r); });
}


GW_API gw_status gw_allgather_start(gw_comm* comm, const gw_tensor* in, gw_tensor* out, gw_request** request) {
  return gw::guard([&] {
    const gw_tensor i = checked(in, "in", false);
    return start_allgatherv(comm, in, out, std::vector<uint64_t>(get(comm).size(), i.count), CollectiveKind::Allgather,
                            request);
  });
}

GW_API gw_status gw_allgather(gw_comm* comm, const gw_tensor* in, gw_tensor* out) {
  return blocking(comm, [&](gw_request** r) { return gw_allgather_start(comm, in, out, r); });
}

GW_API gw_status gw_allgatherv_start(gw_comm* comm, const gw_tensor* in, gw_tensor* out, const uint64_t* counts,
                                     gw_request** request) {
  return gw::guard([&] {
    gw::require(counts, "counts");
    const uint32_t n = get(comm).size();
    return start_allgatherv(comm, in, out, std::vector<uint64_t>(counts, counts + n), CollectiveKind::Allgatherv,
                            request);
  });
}

GW_API gw_status gw_allgatherv(gw_comm* comm, const gw_tensor* in, gw_tensor* out, const uint64_t* counts) {
  return blocking(comm, [&](gw_request** r) { return gw_allgatherv_start(comm, in, out, counts, r); });
}

GW_API gw_status gw_broadcast_start(gw_comm* comm, gw_tensor* buf, uint32_t root, gw_request** request) {
  return gw::guard([&] {
    Communicator& c = get(comm);
    gw::require(request, "request (output)");
    const gw_tensor b = checked(buf, "buf", false);
    if (root >= c.size())
      gw::fail(GW_ERR_INVALID_ARGUMENT, "broadcast root " + std::to_string(root) + " is not a rank (world size " +
                                            std::to_string(c.size()) + ")");
    if (gw_request* native = gw::comm::start_native(c, {CollectiveKind::Broadcast, nullptr, buf, GW_REDUCE_SUM, root}))
      return start(request, native);
    Signature s{CollectiveKind::Broadcast, GW_REDUCE_SUM, b.dtype, b.count, root, 0};
    void* data = b.data;
    const uint64_t bytes = bytes_of(b);
    return start(request, c.start_collective(s, [=](gw::comm::Collective& col) {
      return gw::coll::broadcast_binomial(col, data, bytes, root);
    }));
  });
}

GW_API gw_status gw_broadcast(gw_comm* comm, gw_tensor* buf, uint32_t root) {
  return blocking(comm, [&](gw_request** r) { return gw_broadcast_start(comm, buf, root, r); });
}

GW_API gw_status gw_barrier_start(gw_comm* comm, gw_request** request) {
  return gw::guard([&] {
    Communicator& c = get(comm);
    gw::require(request, "request (output)");
    Signature s{CollectiveKind::Barrier, GW_REDUCE_SUM, GW_DTYPE_U8, 0, 0, 0};
    return start(request, c.start_collective(s, [](gw::comm::Collective& col) { return gw::coll::barrier_dissemination(col); }));
  });
}

GW_API gw_status gw_barrier(gw_comm* comm) {
  return blocking(comm, [&](gw_request** r) { return gw_barrier_start(comm, r); });
}

GW_API gw_status gw_send_start(gw_comm* comm, const gw_tensor* buf, uint32_t peer, uint32_t tag, gw_request** request) {
  return gw::guard([&] {
    Communicator& c = get(comm);
    gw::require(request, "request (output)");
    const gw_tensor b = checked(buf, "buf", false);
    if (peer >= c.size()) gw::fail(GW_ERR_INVALID_ARGUMENT, "peer " + std::to_string(peer) + " is not a rank");
    if (peer == c.rank())
      gw::fail(GW_ERR_INVALID_ARGUMENT, "peer " + std::to_string(peer) + " is this rank; transports carry messages "
                                        "between ranks only (copy the buffer instead)");
    gw::comm::require_p2p_memory(c, b, "buf");
    *request = c.start_send(peer, tag, b.data, bytes_of(b));
    return GW_OK;
  });
}

GW_API gw_status gw_send(gw_comm* comm, const gw_tensor* buf, uint32_t peer, uint32_t tag) {
  return blocking(comm, [&](gw_request** r) { return gw_send_start(comm, buf, peer, tag, r); });
}

GW_API gw_status gw_recv_start(gw_comm* comm, gw_tensor* buf, uint32_t peer, uint32_t tag, gw_request** request) {
  return gw::guard([&] {
    Communicator& c = get(comm);
    gw::require(request, "request (output)");
    const gw_tensor b = checked(buf, "buf", false);
    if (peer >= c.size()) gw::fail(GW_ERR_INVALID_ARGUMENT, "peer " + std::to_string(peer) + " is not a rank");
    if (peer == c.rank())
      gw::fail(GW_ERR_INVALID_ARGUMENT, "peer " + std::to_string(peer) + " is this rank; transports carry messages "
                                        "between ranks only (copy the buffer instead)");
    gw::comm::require_p2p_memory(c, b, "buf");
    *request = c.start_recv(peer, tag, b.data, bytes_of(b));
    return GW_OK;
  });
}

GW_API gw_status gw_recv(gw_comm* comm, gw_tensor* buf, uint32_t peer, uint32_t tag) {
  return blocking(comm, [&](gw_request** r) { return gw_recv_start(comm, buf, peer, tag, r); });
}

}  // extern "C"
