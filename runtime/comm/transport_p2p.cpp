#include "comm/transport_p2p.hpp"

#include <chrono>

#include "core/error.hpp"
#include "loader/host.hpp"

namespace gw::comm {

namespace {
// PointToPoint::Op is the plugin's gw_transport_request; neither is ever dereferenced here.
gw_transport_request* as_request(PointToPoint::Op* op) { return reinterpret_cast<gw_transport_request*>(op); }
PointToPoint::Op* as_op(gw_transport_request* r) { return reinterpret_cast<PointToPoint::Op*>(r); }

gw_tensor bytes_tensor(const void* data, uint64_t bytes) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_U8;
  t.data = const_cast<void*>(data);
  t.count = bytes;
  return t;
}
}  // namespace

TransportP2P::TransportP2P(ComponentRef ref, const config::Config& config, const gw_transport_init& init)
    : ref_(std::move(ref)),
      vtable_(ref_.vtable<gw_transport_vtable>()),
      name_(ref_.component->name),
      rank_(init.rank),
      size_(init.world_size) {
  const std::string section = "transport." + name_;
  gw_config view{config.section(section), config.schema().find(section)};
  clear_plugin_error();
  check_plugin(vtable_->create(ref_.plugin->state(), ref_.plugin->host(), view.spec ? &view : nullptr, &init, &instance_),
               "transport '" + name_ + "': create failed");
  if (instance_ == nullptr) fail(GW_ERR_PLUGIN, "transport '" + name_ + "': create returned GW_OK but no instance");
}

TransportP2P::~TransportP2P() {
  if (instance_ != nullptr) vtable_->destroy(instance_);
}

std::string TransportP2P::local_address() const {
  const void* blob = nullptr;
  uint64_t size = 0;
  clear_plugin_error();
  check_plugin(vtable_->local_address(instance_, &blob, &size), "transport '" + name_ + "': local_address failed");
  return std::string(static_cast<const char*>(blob), size);
}

void TransportP2P::connect(const std::vector<std::string>& blobs, double timeout_s, const std::string& timeout_source) {
  std::vector<const void*> pointers;
  std::vector<uint64_t> sizes;
  for (const auto& b : blobs) {
    pointers.push_back(b.data());
    sizes.push_back(b.size());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    clear_plugin_error();
    const gw_status st = vtable_->connect(instance_, pointers.data(), sizes.data());
    check_plugin(st, "transport '" + name_ + "': connect failed");
    if (st == GW_OK) return;
    if (std::chrono::steady_clock::now() > deadline)
      fail(GW_ERR_TIMEOUT, "transport '" + name_ + "': connecting to the other ranks took longer than " +
                               std::to_string(timeout_s) + " s (" + timeout_source + ")");
    progress();
  }
}

PointToPoint::Op* TransportP2P::send(uint32_t peer, uint64_t tag, const void* data, uint64_t bytes) {
  gw_tensor t = bytes_tensor(data, bytes);
  gw_transport_request* r = nullptr;
  clear_plugin_error();
  check_plugin(vtable_->send_start(instance_, peer, tag, &t, &r), "transport", name_, "");
  return as_op(r);
}

PointToPoint::Op* TransportP2P::recv(uint32_t peer, uint64_t tag, void* data, uint64_t bytes) {
  gw_tensor t = bytes_tensor(data, bytes);
  gw_transport_request* r = nullptr;
  clear_plugin_error();
  check_plugin(vtable_->recv_start(instance_, peer, tag, &t, &r), "transport", name_, "");
  return as_op(r);
}

bool TransportP2P::test(Op* op, uint64_t* bytes) {
  clear_plugin_error();
  const gw_status st = vtable_->test(instance_, as_request(op), bytes);
  check_plugin(st, "transport", name_, "");
  return st == GW_OK;
}

void TransportP2P::free(Op* op) noexcept {
  if (op != nullptr) vtable_->request_free(instance_, as_request(op));
}

void TransportP2P::progress() {
  clear_plugin_error();
  check_plugin(vtable_->progress(instance_), "transport", name_, ": progress failed");
}

void TransportP2P::abort() noexcept { vtable_->abort(instance_); }

}  // namespace gw::comm
