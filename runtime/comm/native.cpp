#include "comm/native.hpp"

#include <gradwire/gradwire.h>

#include "comm/routed_p2p.hpp"
#include "comm/transport_p2p.hpp"
#include "core/error.hpp"
#include "loader/host.hpp"

namespace gw::comm {
namespace {

const char* memory_name(gw_memory_kind m) {
  switch (m) {
    case GW_MEMORY_HOST: return "host";
    case GW_MEMORY_CUDA: return "cuda";
    default: return "unknown";
  }
}

// Whether the transport's vtable has a native entry point for `kind` (within its struct_size).
bool offers(const gw_transport_vtable& v, CollectiveKind kind) {
  const auto has = [&](size_t offset) { return v.struct_size >= offset + sizeof(void*); };
  switch (kind) {
    case CollectiveKind::Allreduce:
      return has(offsetof(gw_transport_vtable, allreduce_start)) && v.allreduce_start != nullptr;
    case CollectiveKind::Allgather:
      return has(offsetof(gw_transport_vtable, allgather_start)) && v.allgather_start != nullptr;
    case CollectiveKind::Broadcast:
      return has(offsetof(gw_transport_vtable, broadcast_start)) && v.broadcast_start != nullptr;
    case CollectiveKind::ReduceScatter:
      return has(offsetof(gw_transport_vtable, reduce_scatter_start)) && v.reduce_scatter_start != nullptr;
    default: return false;
  }
}

Task run_native(Collective& c, TransportP2P& t, NativeCall call, bool own) {
  const gw_transport_vtable& v = t.vtable();
  gw_transport_request* r = nullptr;
  gw_status st = GW_ERR_INTERNAL;
  const char* what = kind_name(call.kind);
  clear_plugin_error();
  switch (call.kind) {
    case CollectiveKind::Allreduce: st = v.allreduce_start(t.instance(), call.in, call.out, call.op, &r); break;
    case CollectiveKind::Allgather: st = v.allgather_start(t.instance(), call.in, call.out, &r); break;
    case CollectiveKind::Broadcast: st = v.broadcast_start(t.instance(), call.out, call.root, &r); break;
    case CollectiveKind::ReduceScatter:
      st = v.reduce_scatter_start(t.instance(), call.in, call.out, call.op, &r);
      break;
    default: break;
  }
  check_plugin(st, "transport '" + t.name() + "': native " + what);
  if (r == nullptr) fail(GW_ERR_PLUGIN, "transport '" + t.name() + "': native " + what + " returned no request");
  c.adopt(reinterpret_cast<PointToPoint::Op*>(r), what, own ? nullptr : &t);
  co_await c.all();
}

// The transport that spans every rank (inter), and whether the communicator's point-to-point interface
// is that transport itself (else its requests are tested through it, not through the routing).
TransportP2P* world_transport(PointToPoint& p2p, bool* own = nullptr) {
  if (own) *own = true;
  if (auto* t = dynamic_cast<TransportP2P*>(&p2p)) return t;
  if (auto* routed = dynamic_cast<RoutedP2P*>(&p2p)) {
    if (own) *own = false;
    return &routed->inter();
  }
  return nullptr;
}

}  // namespace

std::string memory_kinds_text(uint32_t kinds) {
  std::string s;
  for (gw_memory_kind m : {GW_MEMORY_HOST, GW_MEMORY_CUDA})
    if (kinds & (1u << m)) s += (s.empty() ? "" : "|") + std::string(memory_name(m));
  return s.empty() ? "none" : s;
}

gw_request* start_native(Communicator& comm, const NativeCall& call) {
  const gw_tensor& data = call.out != nullptr ? *call.out : *call.in;
  const gw_memory_kind memory = data.memory;
  // Device tensors go to the device transport ([transport] device) when there is one.
  auto* device = dynamic_cast<TransportP2P*>(comm.device_transport());
  const bool use_device = memory != GW_MEMORY_HOST && device != nullptr;
  bool own = false;
  TransportP2P* world = world_transport(comm.p2p(), &own);
  auto* t = use_device ? device : world;
  own = own && !use_device;
  if (call.in != nullptr && call.in->memory != memory)
    fail(GW_ERR_INVALID_ARGUMENT, std::string("in is ") + memory_name(call.in->memory) + " memory but out is " +
                                      memory_name(memory) + " memory; a collective takes both in the same kind");
  const uint32_t kinds = t ? t->vtable().memory_kinds : (1u << GW_MEMORY_HOST);
  const bool native = t != nullptr && offers(t->vtable(), call.kind) && (kinds & (1u << memory)) != 0;
  if (!native) {
    if (memory == GW_MEMORY_HOST) return nullptr;
    const std::string name = t ? t->name() : std::string("?");
    fail(GW_ERR_UNSUPPORTED,
         std::string(kind_name(call.kind)) + " of " + memory_name(memory) + " memory: transport '" + name +
             "' carries " + memory_kinds_text(kinds) + " memory" +
             (t && offers(t->vtable(), call.kind) ? "" : " and has no native " + std::string(kind_name(call.kind))) +
             (device ? "" : "; set [transport] device = \"nccl\" for device tensors") +
             ", or copy the tensor to host memory");
  }
  Signature s;
  s.kind = call.kind;
  s.op = call.op;
  s.dtype = data.dtype;
  s.count = call.in != nullptr && call.kind != CollectiveKind::ReduceScatter ? call.in->count : data.count;
  s.root = call.root;
  const NativeCall copy = call;
  return comm.start_collective(s, [t, copy, own](Collective& c) { return run_native(c, *t, copy, own); });
}

void require_p2p_memory(Communicator& comm, const gw_tensor& t, const char* what) {
  TransportP2P* tp = world_transport(comm.p2p());
  const uint32_t kinds = tp ? tp->vtable().memory_kinds : (1u << GW_MEMORY_HOST);
  if (t.memory != GW_MEMORY_HOST)
    fail(GW_ERR_UNSUPPORTED, std::string(what) + " is " + memory_name(t.memory) +
                                 " memory; this operation runs over point-to-point messages in host memory (copy "
                                 "the tensor to the host, or use a collective the transport offers natively)");
  if ((kinds & (1u << GW_MEMORY_HOST)) == 0)
    fail(GW_ERR_UNSUPPORTED, std::string(what) + ": transport '" + (tp ? tp->name() : std::string("?")) +
                                 "' carries " + memory_kinds_text(kinds) +
                                 " memory only, and this operation needs host memory");
}

}  // namespace gw::comm
