// gw_codec/block_codec.hpp — the codec class shared by the blockwise codecs (int8, onebit), whose
// bodies have block_body.hpp's layout. BlockCodec<CudaOps> does what both do alike: the block_size
// key, the argument checks, the body header and its parsing, the CPU / CUDA choice and the dtype
// conversion in chunks; a subclass supplies its kernels. API:
//
//   BlockCodec(host, config, name, payload_bytes, align, cuda)
//       reads block_size (default 256, [1, kMaxBlockSize]); payload_bytes(count): bytes of the element
//       payload; the CPU encoder gets chunks whose boundaries are multiples of lcm(block, align);
//       cuda: the plugin's CUDA kernels (GW_CODEC_CUDA_OPS(...), NULL without), whose read_bytes
//       reads a device body's header
//   block(), cuda()                                     the configured block size; the kernels
//   what a subclass implements (l: the body's layout; decoding uses l.block, the sender's):
//     uint32_t extra_flags() const                      properties' flags beside GW_CODEC_CUDA
//     void encode_range(ctx, x, begin, end, body, l)    f32 elements [begin, end) given as x[0 ..):
//                                                       their scales and payload (not the header)
//     void decode_range(body, l, begin, end, y, acc)    elements [begin, end) into y[0 ..) (added: acc)
//     int encode_cuda(ctx, in, body, l, error)          the whole body of a device tensor, header too
//     int decode_cuda(body, l, out, acc, error)         a device body into a device tensor
//       (the CUDA ones return a cudaError_t as int, 0 on success, with its text in error[128])
#pragma once

#include <numeric>
#include <string>
#include <vector>

#include "gw_codec/block_body.hpp"
#include "gw_codec/codec_base.hpp"
#include "gw_codec/convert.hpp"

namespace gwc {

template <class CudaOps>
class BlockCodec : public CodecBase {
 public:
  using PayloadBytes = uint64_t (*)(uint64_t count);

  BlockCodec(const gw_host* host, const ConfigReader& config, const char* name, PayloadBytes payload_bytes,
             uint64_t align, const CudaOps* cuda)
      : CodecBase(host, name), payload_bytes_(payload_bytes), cuda_(cuda) {
    const int64_t block = config.get_int("block_size", 256);
    if (block < 1 || block > static_cast<int64_t>(kMaxBlockSize))
      fail(GW_ERR_CONFIG, std::string(name) + ": block_size " + std::to_string(block) + " is outside [1, " +
                              std::to_string(kMaxBlockSize) + "]");
    block_ = static_cast<uint32_t>(block);
    encode_align_ = std::lcm<uint64_t>(block_, align);
  }

  gw_codec_properties properties() const final {
    gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
    p.flags = (cuda_ ? static_cast<uint32_t>(GW_CODEC_CUDA) : 0u) | extra_flags();
    p.sum_dtype = GW_DTYPE_F32;
    p.dtypes = kDenseDtypes;
    return p;
  }

  void max_encoded_size(gw_dtype dtype, uint64_t count, uint64_t* body, uint64_t* workspace) const final {
    check_dtype(dtype);
    *body = layout(count).size;
    *workspace = 0;
  }

  uint64_t encode(const gw_codec_context& ctx, const gw_tensor& in, void* body, uint64_t capacity) final {
    check_tensor(in, kDenseDtypes, "input");
    refuse_cuda(*this, in, cuda_);
    const BlockLayout l = layout(in.count);
    check_capacity(*this, l.size, capacity, body);
    auto* bytes = static_cast<uint8_t*>(body);
    if (in.memory == GW_MEMORY_CUDA) {
      require_cuda_alignment(*this, body);
      char error[128] = "";
      if (int rc = encode_cuda(ctx, in, bytes, l, error)) fail_cuda(*this, "encode", rc, error);
      return l.size;
    }
    write_block_header(body, block_);
    for_each_f32_chunk(in.dtype, in.data, in.count, encode_align_, scratch_,
                       [&](const float* x, uint64_t b, uint64_t e) { encode_range(ctx, x, b, e, bytes, l); });
    return l.size;
  }

  void decode(const gw_codec_context&, const void* body, uint64_t size, gw_tensor& out, uint32_t flags) final {
    check_tensor(out, kDenseDtypes, "output");
    refuse_cuda(*this, out, cuda_);
    const bool acc = (flags & GW_DECODE_ACCUMULATE) != 0;
    const auto* bytes = static_cast<const uint8_t*>(body);
    if (out.memory == GW_MEMORY_CUDA) {
      uint8_t header[kBlockBodyHeader] = {};
      char error[128] = "";
      if (size >= sizeof header) {
        if (int rc = cuda_->read_bytes(body, header, sizeof header, out.stream, error))
          fail_cuda(*this, "decode", rc, error);
      }
      const BlockLayout l = parse_block_body(*this, header, size, out.count, payload_bytes_);
      if (out.count == 0) return;
      require_cuda_alignment(*this, body);
      if (int rc = decode_cuda(bytes, l, out, acc, error)) fail_cuda(*this, "decode", rc, error);
      return;
    }
    const BlockLayout l = parse_block_body(*this, body, size, out.count, payload_bytes_);
    for_each_f32_output_chunk(
        out.dtype, out.data, out.count, l.block, scratch_, acc,
        [&](float* y, uint64_t b, uint64_t e, bool add) { decode_range(bytes, l, b, e, y, add); });
  }

 protected:
  uint32_t block() const { return block_; }
  const CudaOps* cuda() const { return cuda_; }

  virtual uint32_t extra_flags() const { return 0; }
  virtual void encode_range(const gw_codec_context& ctx, const float* x, uint64_t begin, uint64_t end, uint8_t* body,
                            const BlockLayout& l) = 0;
  virtual void decode_range(const uint8_t* body, const BlockLayout& l, uint64_t begin, uint64_t end, float* y,
                            bool accumulate) const = 0;
  virtual int encode_cuda(const gw_codec_context& ctx, const gw_tensor& in, uint8_t* body, const BlockLayout& l,
                          char* error) const = 0;
  virtual int decode_cuda(const uint8_t* body, const BlockLayout& l, const gw_tensor& out, bool accumulate,
                          char* error) const = 0;

 private:
  BlockLayout layout(uint64_t count) const {
    if (count > (UINT64_MAX >> 4)) fail(GW_ERR_INVALID_ARGUMENT, std::string(name()) + ": count too large");
    return BlockLayout::make(count, block_, payload_bytes_);
  }

  PayloadBytes payload_bytes_;
  const CudaOps* cuda_;
  uint32_t block_ = 256;
  uint64_t encode_align_ = 256;
  std::vector<float> scratch_;
};

}  // namespace gwc
