// A test transport with native collectives on host memory, so that the runtime's native-collective
// dispatch (runtime/comm/native.cpp) runs on machines without GPUs. Point-to-point is the UCX
// transport's: this plugin loads libgw-ucx.so ([transport.hostcoll] ucx_library) and forwards to its
// vtable. The native collectives are its own: every rank sends its contribution straight to every other
// rank over that UCX transport and reduces what arrives in rank order, so every rank ends with the same
// bits. Each native call counts itself; a test reads the counters through the plugin-wide extension
// "gw.test.hostcoll.calls/1" (an array of four uint64: allreduce, allgather, broadcast, reduce_scatter).
//
// Tags: the native messages use tags with bits 39 and 38 both set, which the runtime never uses.
#include <dlfcn.h>
#include <gradwire/plugin.h>

#include <atomic>
#include <bit>
#include <cstring>
#include <new>
#include <string>
#include <vector>
#include "../support/half_oracle.hpp"

namespace {

std::atomic<uint64_t> g_calls[4];

const gw_config_key kConfigKeys[] = {
    {sizeof(gw_config_key), "ucx_library", GW_CONFIG_STRING, "\"\"",
     "Path of libgw-ucx.so, whose point-to-point this transport uses", 1.0, 0.0, nullptr},
};

gw_status error(const gw_host* host, gw_status st, const std::string& m) {
  if (host && host->set_error) host->set_error(host->ctx, ("hostcoll transport: " + m).c_str());
  return st;
}

struct Native;

struct Request {
  gw_transport_request* inner = nullptr;  // a forwarded point-to-point operation
  Native* native = nullptr;               // or a native collective
};

struct Transport {
  const gw_host* host = nullptr;
  void* library = nullptr;
  const gw_transport_vtable* ucx = nullptr;
  void* inner = nullptr;
  uint32_t rank = 0;
  uint32_t size = 1;
  uint64_t next_call = 0;
};

enum class Kind { Allreduce = 0, Allgather = 1, Broadcast = 2, ReduceScatter = 3 };

struct Native {
  Kind kind = Kind::Allreduce;
  gw_dtype dtype = GW_DTYPE_F32;
  gw_reduce_op op = GW_REDUCE_SUM;
  uint64_t block = 0;  // elements each rank contributes / receives
  void* out = nullptr;
  std::vector<unsigned char> mine;                  // this rank's contribution (allreduce, reduce-scatter)
  std::vector<std::vector<unsigned char>> gathered;  // by rank
  std::vector<gw_transport_request*> ops;
  bool finished = false;
};

uint32_t esize(gw_dtype d) {
  switch (d) {
    case GW_DTYPE_F32: case GW_DTYPE_I32: return 4;
    case GW_DTYPE_F64: case GW_DTYPE_I64: return 8;
    case GW_DTYPE_F16: case GW_DTYPE_BF16: return 2;
    case GW_DTYPE_U8: return 1;
    default: return 0;
  }
}

double load(gw_dtype d, const unsigned char* p) {
  switch (d) {
    case GW_DTYPE_F32: { float v; std::memcpy(&v, p, 4); return v; }
    case GW_DTYPE_F64: { double v; std::memcpy(&v, p, 8); return v; }
    case GW_DTYPE_I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case GW_DTYPE_I64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
    case GW_DTYPE_F16: { uint16_t v; std::memcpy(&v, p, 2); return double(gwtest::float_from_half(v)); }
    case GW_DTYPE_BF16: { uint16_t v; std::memcpy(&v, p, 2); return double(std::bit_cast<float>(uint32_t(v) << 16)); }
    default: return 0;
  }
}

void store(gw_dtype d, unsigned char* p, double x) {
  switch (d) {
    case GW_DTYPE_F32: { float v = float(x); std::memcpy(p, &v, 4); break; }
    case GW_DTYPE_F64: std::memcpy(p, &x, 8); break;
    case GW_DTYPE_I32: { int32_t v = int32_t(x); std::memcpy(p, &v, 4); break; }
    case GW_DTYPE_I64: { int64_t v = int64_t(x); std::memcpy(p, &v, 8); break; }
    case GW_DTYPE_F16: { uint16_t v = gwtest::half_from_float(float(x)); std::memcpy(p, &v, 2); break; }
    case GW_DTYPE_BF16: {
      const uint32_t u = std::bit_cast<uint32_t>(float(x));
      const uint16_t v = uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
      std::memcpy(p, &v, 2);
      break;
    }
    default: break;
  }
}

gw_tensor bytes(void* data, uint64_t n) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_U8;
  t.data = data;
  t.count = n;
  return t;
}

uint64_t native_tag(uint64_t call, uint32_t part) {
  return (uint64_t{3} << 38) | ((call & 0xffffffffull) << 4) | part;
}

// ---- vtable -----------------------------------------------------------------------------------------

gw_status create(void*, const gw_host* host, const gw_config* config, const gw_transport_init* init, void** out) {
  const char* path = nullptr;
  if (config == nullptr || host->config_get_string(config, "ucx_library", &path) != GW_OK || path == nullptr || !*path)
    return error(host, GW_ERR_CONFIG, "[transport.hostcoll] ucx_library is not set");
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return error(host, GW_ERR_PLUGIN, std::string("cannot load ") + path + ": " + dlerror());
  auto entry = reinterpret_cast<gw_plugin_entry_fn>(dlsym(lib, GW_PLUGIN_ENTRY_NAME));
  const gw_plugin_descriptor* d = entry ? entry(GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR) : nullptr;
  if (d == nullptr || d->num_components < 1 || d->components[0].kind != GW_COMPONENT_TRANSPORT) {
    dlclose(lib);
    return error(host, GW_ERR_PLUGIN, std::string(path) + " is not the UCX transport plugin");
  }
  auto* t = new Transport();
  t->host = host;
  t->library = lib;
  t->ucx = static_cast<const gw_transport_vtable*>(d->components[0].vtable);
  t->rank = init->rank;
  t->size = init->world_size;
  const gw_status st = t->ucx->create(nullptr, host, nullptr, init, &t->inner);
  if (st != GW_OK) {
    dlclose(lib);
    delete t;
    return st;
  }
  *out = t;
  return GW_OK;
}

void destroy(void* p) {
  auto* t = static_cast<Transport*>(p);
  t->ucx->destroy(t->inner);
  dlclose(t->library);
  delete t;
}

gw_status local_address(void* p, const void** blob, uint64_t* size) {
  auto* t = static_cast<Transport*>(p);
  return t->ucx->local_address(t->inner, blob, size);
}

gw_status connect(void* p, const void* const* blobs, const uint64_t* sizes) {
  auto* t = static_cast<Transport*>(p);
  return t->ucx->connect(t->inner, blobs, sizes);
}

gw_status wrap(gw_status st, gw_transport_request* inner, gw_transport_request** request) {
  if (st != GW_OK) return st;
  *request = reinterpret_cast<gw_transport_request*>(new Request{inner, nullptr});
  return GW_OK;
}

gw_status send_start(void* p, uint32_t peer, uint64_t tag, const gw_tensor* buf, gw_transport_request** request) {
  auto* t = static_cast<Transport*>(p);
  gw_transport_request* inner = nullptr;
  const gw_status st = t->ucx->send_start(t->inner, peer, tag, buf, &inner);
  return wrap(st, inner, request);
}

gw_status recv_start(void* p, uint32_t peer, uint64_t tag, gw_tensor* buf, gw_transport_request** request) {
  auto* t = static_cast<Transport*>(p);
  gw_transport_request* inner = nullptr;
  const gw_status st = t->ucx->recv_start(t->inner, peer, tag, buf, &inner);
  return wrap(st, inner, request);
}

void finish(Native& n, uint32_t rank, uint32_t size) {
  const uint32_t es = esize(n.dtype);
  auto* out = static_cast<unsigned char*>(n.out);
  if (n.kind == Kind::Allreduce || n.kind == Kind::ReduceScatter) {
    for (uint64_t i = 0; i < n.block; ++i) {
      double acc = 0;
      for (uint32_t r = 0; r < size; ++r) {
        const unsigned char* src = (r == rank ? n.mine.data() : n.gathered[r].data()) + i * es;
        const double v = load(n.dtype, src);
        if (r == 0) acc = v;
        else if (n.op == GW_REDUCE_MIN) acc = v < acc ? v : acc;
        else if (n.op == GW_REDUCE_MAX) acc = v > acc ? v : acc;
        else acc += v;
      }
      if (n.op == GW_REDUCE_AVG) {
        if (n.dtype == GW_DTYPE_I32 || n.dtype == GW_DTYPE_I64) acc = double(int64_t(acc) / int64_t(size));
        else acc = acc / size;
      }
      store(n.dtype, out + i * es, acc);
    }
  }
  n.finished = true;
}

gw_status test(void* p, gw_transport_request* handle, uint64_t* bytes_out) {
  auto* t = static_cast<Transport*>(p);
  auto* r = reinterpret_cast<Request*>(handle);
  if (r->native == nullptr) return t->ucx->test(t->inner, r->inner, bytes_out);  // point-to-point
  Native& n = *r->native;
  if (!n.finished) {
    for (auto& op : n.ops) {
      if (op == nullptr) continue;
      uint64_t got = 0;
      const gw_status st = t->ucx->test(t->inner, op, &got);
      if (st == GW_IN_PROGRESS) return GW_IN_PROGRESS;
      if (st != GW_OK) return st;
      t->ucx->request_free(t->inner, op);
      op = nullptr;
    }
    finish(n, t->rank, t->size);
  }
  if (bytes_out) *bytes_out = n.block * esize(n.dtype);
  return GW_OK;
}

void request_free(void* p, gw_transport_request* handle) {
  auto* t = static_cast<Transport*>(p);
  auto* r = reinterpret_cast<Request*>(handle);
  if (r == nullptr) return;
  if (r->inner) t->ucx->request_free(t->inner, r->inner);
  if (r->native) {
    for (auto* op : r->native->ops)
      if (op) t->ucx->request_free(t->inner, op);
    delete r->native;
  }
  delete r;
}

gw_status progress(void* p) {
  auto* t = static_cast<Transport*>(p);
  return t->ucx->progress(t->inner);
}

gw_status abort_all(void* p) {
  auto* t = static_cast<Transport*>(p);
  return t->ucx->abort(t->inner);
}

// Every rank sends send_part(peer) to every peer and receives into recv_part(peer).
gw_status exchange(Transport& t, Native* n, const std::vector<unsigned char*>& send_parts, uint64_t send_bytes,
                   const std::vector<unsigned char*>& recv_parts, uint64_t recv_bytes, gw_transport_request** request) {
  const uint64_t call = t.next_call++;
  g_calls[int(n->kind)].fetch_add(1);
  for (uint32_t peer = 0; peer < t.size; ++peer) {
    if (peer == t.rank) continue;
    gw_transport_request* op = nullptr;
    if (!send_parts.empty() && send_parts[peer] != nullptr) {
      gw_tensor s = bytes(send_parts[peer], send_bytes);
      gw_status st = t.ucx->send_start(t.inner, peer, native_tag(call, 0), &s, &op);
      if (st != GW_OK) {
        delete n;
        return st;
      }
      n->ops.push_back(op);
    }
    if (!recv_parts.empty() && recv_parts[peer] != nullptr) {
      gw_tensor rv = bytes(recv_parts[peer], recv_bytes);
      gw_status st = t.ucx->recv_start(t.inner, peer, native_tag(call, 0), &rv, &op);
      if (st != GW_OK) {
        delete n;
        return st;
      }
      n->ops.push_back(op);
    }
  }
  *request = reinterpret_cast<gw_transport_request*>(new Request{nullptr, n});
  return GW_OK;
}

gw_status check_host(Transport& t, const gw_tensor* x, const char* what) {
  if (x == nullptr || x->memory != GW_MEMORY_HOST || esize(x->dtype) == 0)
    return error(t.host, GW_ERR_INVALID_ARGUMENT, std::string(what) + ": host tensor of a known dtype expected");
  return GW_OK;
}

gw_status allreduce_start(void* p, const gw_tensor* in, gw_tensor* out, gw_reduce_op op, gw_transport_request** request) {
  auto& t = *static_cast<Transport*>(p);
  if (check_host(t, in, "in") != GW_OK || check_host(t, out, "out") != GW_OK) return GW_ERR_INVALID_ARGUMENT;
  auto* n = new Native();
  n->kind = Kind::Allreduce;
  n->dtype = out->dtype;
  n->op = op;
  n->block = out->count;
  n->out = out->data;
  const uint64_t b = out->count * esize(out->dtype);
  n->mine.assign(static_cast<unsigned char*>(in->data), static_cast<unsigned char*>(in->data) + b);
  n->gathered.assign(t.size, std::vector<unsigned char>(b));
  std::vector<unsigned char*> sends(t.size, n->mine.data()), recvs(t.size);
  for (uint32_t r = 0; r < t.size; ++r) recvs[r] = n->gathered[r].data();
  return exchange(t, n, sends, b, recvs, b, request);
}

gw_status allgather_start(void* p, const gw_tensor* in, gw_tensor* out, gw_transport_request** request) {
  auto& t = *static_cast<Transport*>(p);
  if (check_host(t, in, "in") != GW_OK || check_host(t, out, "out") != GW_OK) return GW_ERR_INVALID_ARGUMENT;
  auto* n = new Native();
  n->kind = Kind::Allgather;
  n->dtype = out->dtype;
  n->block = in->count;
  n->out = out->data;
  const uint64_t b = in->count * esize(in->dtype);
  auto* o = static_cast<unsigned char*>(out->data);
  if (o + t.rank * b != in->data) std::memmove(o + t.rank * b, in->data, b);
  std::vector<unsigned char*> sends(t.size, o + t.rank * b), recvs(t.size);
  for (uint32_t r = 0; r < t.size; ++r) recvs[r] = o + r * b;
  return exchange(t, n, sends, b, recvs, b, request);
}

gw_status broadcast_start(void* p, gw_tensor* buf, uint32_t root, gw_transport_request** request) {
  auto& t = *static_cast<Transport*>(p);
  if (check_host(t, buf, "buf") != GW_OK) return GW_ERR_INVALID_ARGUMENT;
  auto* n = new Native();
  n->kind = Kind::Broadcast;
  n->dtype = buf->dtype;
  n->block = buf->count;
  n->out = buf->data;
  const uint64_t b = buf->count * esize(buf->dtype);
  std::vector<unsigned char*> sends, recvs;
  if (t.rank == root) sends.assign(t.size, static_cast<unsigned char*>(buf->data));
  else {
    recvs.assign(t.size, nullptr);
    recvs[root] = static_cast<unsigned char*>(buf->data);
  }
  return exchange(t, n, sends, b, recvs, b, request);
}

gw_status reduce_scatter_start(void* p, const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                               gw_transport_request** request) {
  auto& t = *static_cast<Transport*>(p);
  if (check_host(t, in, "in") != GW_OK || check_host(t, out, "out") != GW_OK) return GW_ERR_INVALID_ARGUMENT;
  auto* n = new Native();
  n->kind = Kind::ReduceScatter;
  n->dtype = out->dtype;
  n->op = op;
  n->block = out->count;
  n->out = out->data;
  const uint64_t b = out->count * esize(out->dtype);
  auto* i = static_cast<unsigned char*>(in->data);
  n->mine.assign(i + t.rank * b, i + (t.rank + 1) * b);
  // Every block this rank sends is copied: in and out may be the same buffer.
  n->gathered.assign(t.size, std::vector<unsigned char>(2 * b));
  std::vector<unsigned char*> sends(t.size), recvs(t.size);
  for (uint32_t r = 0; r < t.size; ++r) {
    std::memcpy(n->gathered[r].data() + b, i + r * b, b);
    sends[r] = n->gathered[r].data() + b;
    recvs[r] = n->gathered[r].data();
  }
  return exchange(t, n, sends, b, recvs, b, request);
}

const gw_transport_vtable kVtable = {
    sizeof(gw_transport_vtable), 1u << GW_MEMORY_HOST, create, destroy, local_address, connect, send_start,
    recv_start, test, request_free, progress, abort_all, allreduce_start, allgather_start, broadcast_start,
    reduce_scatter_start, nullptr,
};

const gw_component kComponents[] = {
    {sizeof(gw_component), GW_COMPONENT_TRANSPORT, "hostcoll",
     "Test transport: UCX point-to-point plus native collectives on host memory", kConfigKeys, 1u, &kVtable},
};

const void* plugin_extension(void*, const char* id) {
  return std::string(id) == "gw.test.hostcoll.calls/1" ? static_cast<const void*>(g_calls) : nullptr;
}

const gw_plugin_descriptor kDescriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "hostcoll", "1.0.0",
    "Test transport with native host collectives", nullptr, nullptr, kComponents, 1u, plugin_extension,
};

}  // namespace

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t major, uint32_t) {
  return major == GW_ABI_VERSION_MAJOR ? &kDescriptor : nullptr;
}
