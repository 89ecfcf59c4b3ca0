// randomk on CUDA tensors: one thread per coordinate draws its Philox word, finds its stratum and
// copies (encode) or scatters (decode) one value; the same bytes as randomk.cpp.
#include <cuda_runtime.h>

#include <string>

#include "gw_codec/cuda_util.cuh"
#include "gw_codec/sparse.hpp"
#include "randomk_coords.hpp"
#include "randomk_cuda.hpp"

namespace gwrandomk {
namespace {

void check(cudaError_t e, const char* what) { gwc::cu::check(e, "randomk", what); }

template <class Tag>
__global__ void encode_kernel(Tag tag, const void* in, uint64_t n, uint64_t k, uint64_t seed, uint64_t step,
                              bool rescale, gwc::SparseValues f, uint8_t* values) {
  const gwc::RandomStream stream = coordinate_stream(seed, step);
  const uint32_t vb = f == gwc::SparseValues::fp32 ? 4u : 2u;
  for (uint64_t j = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; j < k; j += uint64_t{gridDim.x} * blockDim.x) {
    const Stratum s = stratum(j, n, k, stream.word(j));
    float v = gwc::cu::load_f32(tag, in, s.position);
    if (rescale) v = gwc::mul_rn(v, static_cast<float>(s.length));
    const uint32_t bits = gwc::sparse_value_bits(f, v);
    for (uint32_t b = 0; b < vb; ++b) values[j * vb + b] = static_cast<uint8_t>(bits >> (8 * b));
  }
}

template <class Tag>
__global__ void decode_kernel(Tag tag, const uint8_t* values, uint64_t n, uint64_t k, uint64_t seed, uint64_t step,
                              gwc::SparseValues f, void* out, bool accumulate) {
  const gwc::RandomStream stream = coordinate_stream(seed, step);
  for (uint64_t j = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; j < k; j += uint64_t{gridDim.x} * blockDim.x) {
    const Stratum s = stratum(j, n, k, stream.word(j));
    float v;
    if (f == gwc::SparseValues::fp32) {
      const uint8_t* p = values + 4 * j;
      v = gwc::f32_from_bits(p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24));
    } else {
      const uint8_t* p = values + 2 * j;
      v = gwc::f16_to_f32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
    }
    gwc::cu::store_f32(tag, out, s.position, v, accumulate);
  }
}

}  // namespace

void CudaRandomK::encode(const gwc::CodecBase&, const Preamble& p, const gw_tensor& in, void* body) {
  gwc::cu::DeviceScope scope("randomk", in.device);
  const auto stream = static_cast<cudaStream_t>(in.stream);
  uint8_t preamble[kPreambleBytes];
  write_preamble(p, preamble);
  auto* out = static_cast<uint8_t*>(body);
  check(cudaMemcpyAsync(out, preamble, kPreambleBytes, cudaMemcpyHostToDevice, stream), "copy");
  if (p.k > 0) {
    const unsigned grid = gwc::cu::grid_for(p.k, 1);
    check(gwc::cu::dispatch_dtype(in.dtype,
                                  [&](auto tag) {
                                    encode_kernel<<<grid, 256, 0, stream>>>(tag, in.data, in.count, p.k, p.seed,
                                                                            p.step, p.rescaled, p.values,
                                                                            out + kPreambleBytes);
                                    return cudaGetLastError();
                                  }),
          "encode");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void CudaRandomK::decode(const gwc::CodecBase& codec, const uint8_t* body, uint64_t size, gw_tensor& out,
                         bool accumulate) {
  gwc::cu::DeviceScope scope("randomk", out.device);
  const auto stream = static_cast<cudaStream_t>(out.stream);
  uint8_t preamble[kPreambleBytes] = {};
  if (size >= kPreambleBytes) {
    check(cudaMemcpyAsync(preamble, body, kPreambleBytes, cudaMemcpyDeviceToHost, stream), "copy");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  Preamble p;
  std::string error;
  if (!parse_preamble(preamble, size, out.count, p, error)) codec.corrupt(error);
  const uint32_t elem = out.dtype == GW_DTYPE_F32 ? 4u : 2u;
  if (!accumulate && out.count) check(cudaMemsetAsync(out.data, 0, out.count * elem, stream), "memset");
  if (p.k > 0) {
    const unsigned grid = gwc::cu::grid_for(p.k, 1);
    check(gwc::cu::dispatch_dtype(out.dtype,
                                  [&](auto tag) {
                                    decode_kernel<<<grid, 256, 0, stream>>>(tag, body + kPreambleBytes, out.count,
                                                                            p.k, p.seed, p.step, p.values, out.data,
                                                                            accumulate);
                                    return cudaGetLastError();
                                  }),
          "decode");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

}  // namespace gwrandomk
