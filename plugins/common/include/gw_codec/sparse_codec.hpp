// gw_codec/sparse_codec.hpp — the codec class shared by the sparse codecs (topk, randomk).
// SparseCodec<Cuda> does what both do alike: properties, the checks of dtypes, counts (at most 2^32 - 1
// elements: u32 indices) and tensors, and decoding a device tensor through the CUDA half Cuda
// (codec_base.hpp's CudaBackend: made on first use; refusing in a build without CUDA). API:
//
//   SparseCodec(host, name, flags)     flags: properties' flags beside GW_CODEC_CUDA
//   cuda_                              the CudaBackend<Cuda>, for the subclass's encode
//   what a subclass implements:
//     uint64_t body_bound(count) const                     max_encoded_size's body bytes for count elements
//     uint64_t encode_checked(ctx, in, body, capacity)     encode of a checked tensor (host or device)
//     void decode_host(body, size, out, accumulate)        decode into a checked host tensor
//     void check_memory(t, role) const   (optional) refuses a tensor's memory kind before encode or decode
//                                        dispatch on it (a CPU-only codec refuses GW_MEMORY_CUDA there)
#pragma once

#include <string>

#include "gw_codec/codec_base.hpp"

namespace gwc {

template <class Cuda>
class SparseCodec : public CodecBase {
 public:
  SparseCodec(const gw_host* host, const char* name, uint32_t flags)
      : CodecBase(host, name), cuda_(name), flags_(flags) {}

  gw_codec_properties properties() const final {
    gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
    p.flags = flags_ | CudaBackend<Cuda>::kCodecFlags;
    p.dtypes = kDenseDtypes;
    return p;
  }

  void max_encoded_size(gw_dtype dtype, uint64_t count, uint64_t* body, uint64_t* workspace) const final {
    check_dtype(dtype);
    check_count(count);
    *body = body_bound(count);
    *workspace = 0;  // scratch is kept by the codec instance
  }

  uint64_t encode(const gw_codec_context& ctx, const gw_tensor& in, void* body, uint64_t capacity) final {
    check_tensor(in, kDenseDtypes, "input");
    check_count(in.count);
    check_memory(in, "input");
    return encode_checked(ctx, in, body, capacity);
  }

  void decode(const gw_codec_context&, const void* body, uint64_t size, gw_tensor& out, uint32_t flags) final {
    check_tensor(out, kDenseDtypes, "output");
    check_count(out.count);
    check_memory(out, "output");
    const bool accumulate = flags & GW_DECODE_ACCUMULATE;
    const auto* bytes = static_cast<const uint8_t*>(body);
    if (out.memory == GW_MEMORY_CUDA) return cuda_.get().decode(*this, bytes, size, out, accumulate);
    decode_host(bytes, size, out, accumulate);
  }

 protected:
  virtual uint64_t body_bound(uint64_t count) const = 0;
  virtual uint64_t encode_checked(const gw_codec_context& ctx, const gw_tensor& in, void* body,
                                  uint64_t capacity) = 0;
  virtual void decode_host(const uint8_t* body, uint64_t size, gw_tensor& out, bool accumulate) = 0;
  virtual void check_memory(const gw_tensor& /*t*/, const char* /*role*/) const {}

  CudaBackend<Cuda> cuda_;

 private:
  void check_count(uint64_t count) const {
    if (count > UINT32_MAX)
      fail(GW_ERR_UNSUPPORTED, std::string(name()) + " codec handles at most 2^32 - 1 elements per buffer (got " +
                                   std::to_string(count) + "); use smaller buckets");
  }

  uint32_t flags_;
};

}  // namespace gwc
