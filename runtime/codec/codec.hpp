// A codec instance created from a plugin's vtable: writes and checks the wire header around the body
// the plugin produces, validates tensors, and owns the workspace the plugin asks for.
#pragma once

#include <gradwire/gradwire.h>
#include <gradwire/plugin.h>

#include <memory>
#include <string>
#include <vector>

#include "codec/device.hpp"
#include "config/config.hpp"
#include "loader/registry.hpp"

namespace gw {

class Codec {
 public:
  Codec(ComponentRef ref, const config::Config& config);
  ~Codec();
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  const std::string& name() const { return name_; }
  uint32_t id() const { return id_; }
  const gw_codec_properties& properties() const { return properties_; }

  // Worst-case payload size, header included.
  uint64_t max_payload_size(gw_dtype dtype, uint64_t count);
  // Encodes `in` into `payload`; returns the payload's size.
  uint64_t encode(const gw_codec_context& ctx, const gw_tensor& in, void* payload, uint64_t capacity);
  // `host_header`: the payload's wire header in host memory when the caller has it (a device payload
  // staged from the host); otherwise a device payload's header is copied to the host to be checked.
  void decode(const gw_codec_context& ctx, const void* payload, uint64_t size, gw_tensor& out, uint32_t flags,
              const void* host_header = nullptr);

  // Codecs of several linear reductions (ABI 1.4, plugin-guide "Rounds"): whether this is one, its plan
  // for `count` elements with ctx's shapes, and one round (host f32 tensors; the arguments as the
  // vtable's round says).
  bool has_rounds() const { return vtable_->round_plan != nullptr; }
  gw_codec_round_plan round_plan(const gw_codec_context& ctx, uint64_t count);
  void round(const gw_codec_context& ctx, uint32_t round, const gw_tensor& in, const gw_tensor* reduced,
             gw_tensor* next, gw_tensor* out);
  // The codec that carries the round vectors (the plan's wire_codec), or nullptr: exact f32 sums.
  Codec* wire_codec() const { return wire_.get(); }
  void set_wire_codec(std::unique_ptr<Codec> wire) { wire_ = std::move(wire); }

  // The codec's own state between calls (save_state/load_state of the vtable) as a checked blob
  // (gw_codec_save_state); a codec without state gives a blob with an empty state.
  bool has_state() const { return vtable_->save_state != nullptr; }
  std::vector<unsigned char> save_state();
  void load_state(const unsigned char* data, uint64_t size);

 private:
  void check_tensor(const gw_tensor& t, const char* what) const;
  gw_codec_context with_workspace(const gw_codec_context& ctx, const gw_tensor& t);

  ComponentRef ref_;
  const gw_codec_vtable* vtable_;
  void* instance_ = nullptr;
  std::string name_;
  uint32_t id_;
  gw_codec_properties properties_ = GW_CODEC_PROPERTIES_INIT;
  std::vector<unsigned char> workspace_;  // for host tensors
  device::Buffer device_workspace_;      // for CUDA tensors
  std::unique_ptr<Codec> wire_;          // rounds codecs: the plan's wire_codec
};

}  // namespace gw

struct gw_codec {
  std::unique_ptr<gw::Codec> impl;
};
