#include "codec/codec.hpp"

#include "codec/wire.hpp"
#include "core/bytes.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/tensor.hpp"

namespace gw {

Codec::Codec(ComponentRef ref, const config::Config& config)
    : ref_(std::move(ref)), vtable_(ref_.vtable<gw_codec_vtable>()), name_(ref_.component->name), id_(fnv1a32(name_)) {
  const std::string section = "codec." + name_;
  gw_config view{config.section(section), config.schema().find(section)};
  clear_plugin_error();
  check_plugin(vtable_->create(ref_.plugin->state(), ref_.plugin->host(), &view, &instance_),
               "codec '" + name_ + "': create failed");
  if (instance_ == nullptr) fail(GW_ERR_PLUGIN, "codec '" + name_ + "': create returned GW_OK but no instance");
  check_plugin(vtable_->properties(instance_, &properties_), "codec '" + name_ + "': properties failed");
  properties_.flags &= ~uint32_t(GW_CODEC_ROUNDS);  // the runtime's to say
  if (has_rounds()) properties_.flags |= GW_CODEC_ROUNDS;
}

Codec::~Codec() {
  if (instance_ != nullptr) vtable_->destroy(instance_);
}

void Codec::check_tensor(const gw_tensor& t, const char* what) const {
  // The struct, memory kind and data pointer were checked where the tensor entered (gw::read_tensor);
  // here only what this codec accepts.
  require_dtype(t, what, properties_.dtypes, "codec '" + name_ + "'", "");
  if (t.memory == GW_MEMORY_CUDA && !(properties_.flags & GW_CODEC_CUDA))
    fail(GW_ERR_UNSUPPORTED, "codec '" + name_ + "' has no CUDA implementation; pass host memory (" + what + ")");
}

uint64_t Codec::max_payload_size(gw_dtype dtype, uint64_t count) {
  uint64_t body = 0, workspace = 0;
  check_plugin(vtable_->max_encoded_size(instance_, dtype, count, &body, &workspace),
               "codec '" + name_ + "': max_encoded_size failed");
  return GW_WIRE_HEADER_SIZE + body;
}

// The workspace the plugin asks for, in the tensor's memory.
gw_codec_context Codec::with_workspace(const gw_codec_context& ctx, const gw_tensor& t) {
  uint64_t body = 0, workspace = 0;
  check_plugin(vtable_->max_encoded_size(instance_, t.dtype, t.count, &body, &workspace),
               "codec '" + name_ + "': max_encoded_size failed");
  gw_codec_context c = ctx;
  c.struct_size = sizeof(gw_codec_context);
  c.workspace_bytes = workspace;
  if (t.memory == GW_MEMORY_CUDA) {
    c.workspace = device_workspace_.reserve(workspace);
  } else {
    if (workspace_.size() < workspace) workspace_.resize(workspace);
    c.workspace = workspace ? workspace_.data() : nullptr;
  }
  return c;
}

uint64_t Codec::encode(const gw_codec_context& ctx, const gw_tensor& in, void* payload, uint64_t capacity) {
  check_tensor(in, "input tensor");
  require(payload, "payload");
  if (capacity < GW_WIRE_HEADER_SIZE)
    fail(GW_ERR_BUFFER_TOO_SMALL, "payload capacity " + std::to_string(capacity) + " is smaller than the wire header; "
                                  "size it with gw_codec_max_encoded_size");
  const gw_codec_context c = with_workspace(ctx, in);
  uint64_t body_size = 0;
  auto* body = static_cast<unsigned char*>(payload) + GW_WIRE_HEADER_SIZE;
  const uint64_t body_capacity = capacity - GW_WIRE_HEADER_SIZE;
  clear_plugin_error();
  check_plugin(vtable_->encode(instance_, &c, &in, body, body_capacity, &body_size), "codec", name_, ": encode failed");
  if (body_size > body_capacity)
    fail(GW_ERR_PLUGIN, "codec '" + name_ + "' reports a body of " + std::to_string(body_size) +
                            " bytes, more than the capacity of " + std::to_string(body_capacity) + " (a plugin bug)");
  wire::Header h;
  h.codec_id = id_;
  h.dtype = uint32_t(in.dtype);
  h.count = in.count;
  h.body_length = body_size;
  if (in.memory == GW_MEMORY_CUDA) {
    unsigned char header[GW_WIRE_HEADER_SIZE];
    wire::write_header(header, h);
    device::copy_to_device(payload, header, sizeof header, in.stream);
  } else {
    wire::write_header(payload, h);
  }
  return GW_WIRE_HEADER_SIZE + body_size;
}

void Codec::decode(const gw_codec_context& ctx, const void* payload, uint64_t size, gw_tensor& out, uint32_t flags,
                   const void* host_header) {
  check_tensor(out, "output tensor");
  unsigned char staged[GW_WIRE_HEADER_SIZE];
  const void* header = payload;
  if (host_header != nullptr && size >= GW_WIRE_HEADER_SIZE) {
    header = host_header;
  } else if (out.memory == GW_MEMORY_CUDA && payload != nullptr && size >= GW_WIRE_HEADER_SIZE) {
    device::copy_to_host(staged, payload, sizeof staged, out.stream);
    header = staged;
  }
  const wire::Header h = wire::read_header(header, size);
  if (h.codec_id != id_)
    fail(GW_ERR_MISMATCH, "payload was encoded by another codec (id " + std::to_string(h.codec_id) + "), not by '" + name_ +
                              "' (id " + std::to_string(id_) + "); every rank must use the same codec");
  if (h.dtype != uint32_t(out.dtype))
    fail(GW_ERR_MISMATCH, std::string("payload holds ") + gw_dtype_name(gw_dtype(h.dtype)) + " elements but the output is " +
                              gw_dtype_name(out.dtype));
  if (h.count != out.count)
    fail(GW_ERR_MISMATCH, "payload holds " + std::to_string(h.count) + " elements but the output has " +
                              std::to_string(out.count));
  if (flags & ~uint32_t(GW_DECODE_ACCUMULATE)) fail(GW_ERR_INVALID_ARGUMENT, "unknown decode flags");
  const gw_codec_context c = with_workspace(ctx, out);
  clear_plugin_error();
  check_plugin(vtable_->decode(instance_, &c, static_cast<const unsigned char*>(payload) + GW_WIRE_HEADER_SIZE,
                               h.body_length, &out, flags),
               "codec", name_, ": decode failed");
}

gw_codec_round_plan Codec::round_plan(const gw_codec_context& ctx, uint64_t count) {
  if (!has_rounds()) fail(GW_ERR_INTERNAL, "codec '" + name_ + "' has no rounds");
  gw_codec_round_plan plan = GW_CODEC_ROUND_PLAN_INIT;
  clear_plugin_error();
  check_plugin(vtable_->round_plan(instance_, &ctx, count, &plan), "codec", name_, ": round_plan failed");
  if (plan.rounds < 1 || plan.rounds > GW_CODEC_MAX_ROUNDS)
    fail(GW_ERR_PLUGIN, "codec '" + name_ + "' plans " + std::to_string(plan.rounds) + " rounds; 1 to " +
                            std::to_string(GW_CODEC_MAX_ROUNDS) + " are allowed (a plugin bug)");
  return plan;
}

void Codec::round(const gw_codec_context& ctx, uint32_t round, const gw_tensor& in, const gw_tensor* reduced,
                  gw_tensor* next, gw_tensor* out) {
  clear_plugin_error();
  check_plugin(vtable_->round(instance_, &ctx, round, &in, reduced, next, out), "codec", name_,
               (": round " + std::to_string(round) + " failed").c_str());
}

namespace {
constexpr uint32_t kStateMagic = 0x53434747u;  // "GGCS"
constexpr uint32_t kStateVersion = 1;
}  // namespace

// The blob: "GGCS" u32 magic, u32 version, str codec name, bytes the plugin's state, u64 FNV-1a 64 of
// every preceding byte (little-endian; str and bytes are a u64 length and the bytes).
std::vector<unsigned char> Codec::save_state() {
  std::vector<unsigned char> state;
  if (has_state()) {
    uint64_t size = 0;
    clear_plugin_error();
    check_plugin(vtable_->save_state(instance_, nullptr, 0, &size), "codec", name_, ": save_state failed");
    state.resize(size);
    uint64_t written = 0;
    check_plugin(vtable_->save_state(instance_, state.data(), state.size(), &written), "codec", name_,
                 ": save_state failed");
    if (written > size)
      fail(GW_ERR_PLUGIN, "codec '" + name_ + "' wrote more state than it asked room for (a plugin bug)");
    state.resize(written);
  }
  bytes::ByteWriter w;
  w.u32(kStateMagic);
  w.u32(kStateVersion);
  w.str(name_);
  w.bytes(state.data(), state.size());
  return w.finish_with_checksum();
}

void Codec::load_state(const unsigned char* data, uint64_t size) {
  const std::string fix = "pass the bytes gw_codec_save_state (or gw_sync_save_state) wrote, unmodified";
  if (size < 16 || bytes::get_le(data + size - 8, 8) != bytes::fnv1a64(data, size - 8))
    fail(GW_ERR_CORRUPT, "codec state blob of " + std::to_string(size) + " bytes is damaged or truncated; " + fix);
  bytes::ByteReader r(data, size - 8, "codec state blob", fix);
  if (r.u32() != kStateMagic) fail(GW_ERR_CORRUPT, "codec state blob does not start with 'GGCS'; " + fix);
  const uint32_t version = r.u32();
  if (version != kStateVersion)
    fail(GW_ERR_VERSION, "codec state blob has version " + std::to_string(version) + "; this gradwire reads 1");
  const std::string name = r.str();
  if (name != name_)
    fail(GW_ERR_MISMATCH, "the codec state was saved by codec '" + name + "', not by '" + name_ + "'");
  const auto state = r.bytes();
  if (!r.at_end()) fail(GW_ERR_CORRUPT, "codec state blob: bytes follow its state; " + fix);
  if (!has_state()) {
    if (!state.empty()) fail(GW_ERR_CORRUPT, "codec '" + name_ + "' keeps no state but the blob holds some; " + fix);
    return;
  }
  clear_plugin_error();
  check_plugin(vtable_->load_state(instance_, state.data(), state.size()), "codec", name_, ": load_state failed");
}

}  // namespace gw
