// topk on CUDA tensors: the selection procedure of topk_select.hpp over a device backend (tile counts,
// scans and stable scatters, so candidates come out in index order), then kernels that write the same
// body bytes as topk_body.cpp. Host decisions between passes read back a few counts.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gw_codec/cuda_util.cuh"
#include "gw_codec/sparse.hpp"
#include "topk_cuda.hpp"
#include "topk_select.hpp"

namespace gwtopk {
namespace {

constexpr int kThreads = 256;
constexpr int kItems = 16;
constexpr uint64_t kTile = uint64_t{kThreads} * kItems;  // < 2^16: a tile's two counts pack into a u32

void check(cudaError_t e, const char* what) { gwc::cu::check(e, "topk", what); }

template <class T>
struct DeviceArray {
  T* p = nullptr;
  size_t n = 0;
  void ensure(size_t count) {
    if (count <= n) return;
    cudaFree(p);
    p = nullptr;
    n = 0;
    check(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(count, 1) * sizeof(T)), "cudaMalloc");
    n = count;
  }
  ~DeviceArray() { cudaFree(p); }
};

// Where a pass reads elements from: the dense input, or the candidate arrays.
struct DenseSource {
  const void* data;
  bool wide;  // f32 (else f16 / bf16)
  __device__ uint32_t bits(uint64_t i) const {
    return wide ? static_cast<const uint32_t*>(data)[i] : static_cast<const uint16_t*>(data)[i];
  }
  __device__ uint32_t index(uint64_t i) const { return static_cast<uint32_t>(i); }
};
struct CandidateSource {
  const uint32_t* idx;
  const uint32_t* bit;
  __device__ uint32_t bits(uint64_t i) const { return bit[i]; }
  __device__ uint32_t index(uint64_t i) const { return idx[i]; }
};

// Per tile: (count of key > t) | (count of key == t) << 16.
template <class Src>
__global__ void count_tiles(Src src, uint64_t n, uint32_t mask, uint32_t t, uint32_t* gt, uint32_t* eq) {
  using Reduce = cub::BlockReduce<uint32_t, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const uint64_t base = static_cast<uint64_t>(blockIdx.x) * kTile;
  uint32_t packed = 0;
  for (int j = 0; j < kItems; ++j) {
    const uint64_t i = base + static_cast<uint64_t>(j) * kThreads + threadIdx.x;
    if (i < n) {
      const uint32_t key = src.bits(i) & mask;
      packed += (key > t ? 1u : 0u) + (key == t ? 1u << 16 : 0u);
    }
  }
  const uint32_t sum = Reduce(tmp).Sum(packed);
  if (threadIdx.x == 0) {
    gt[blockIdx.x] = sum & 0xffffu;
    eq[blockIdx.x] = sum >> 16;
  }
}

// Stable scatter: element i is selected when key > t, or key == t among the first eq_limit such
// elements; its output slot is (selected elements before it). Slots >= capacity are not written.
// Each thread holds kItems consecutive elements, so the block scan follows index order.
template <class Src>
__global__ void scatter_tiles(Src src, uint64_t n, uint32_t mask, uint32_t t, uint64_t eq_limit, uint64_t capacity,
                              const uint32_t* gt_base, const uint32_t* eq_base, uint32_t* out_idx,
                              uint32_t* out_bits) {
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage tmp;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * kTile + static_cast<uint64_t>(threadIdx.x) * kItems;
  uint32_t bits[kItems];
  uint32_t packed = 0;
  for (int j = 0; j < kItems; ++j) {
    const uint64_t i = first + j;
    bits[j] = i < n ? src.bits(i) : 0u;
    const uint32_t key = bits[j] & mask;
    if (i < n) packed += (key > t ? 1u : 0u) + (key == t ? 1u << 16 : 0u);
  }
  uint32_t prefix = 0;
  Scan(tmp).ExclusiveSum(packed, prefix);
  uint64_t gt_before = gt_base[blockIdx.x] + (prefix & 0xffffu);
  uint64_t eq_before = eq_base[blockIdx.x] + (prefix >> 16);
  for (int j = 0; j < kItems; ++j) {
    const uint64_t i = first + j;
    if (i >= n) break;
    const uint32_t key = bits[j] & mask;
    uint64_t slot = ~uint64_t{0};
    if (key > t) {
      slot = gt_before + (eq_before < eq_limit ? eq_before : eq_limit);
      ++gt_before;
    } else if (key == t) {
      if (eq_before < eq_limit) slot = gt_before + eq_before;
      ++eq_before;
    }
    if (slot < capacity) {
      out_idx[slot] = src.index(i);
      out_bits[slot] = bits[j];
    }
  }
}

__global__ void gather_kernel(DenseSource src, uint32_t mask, const uint32_t* positions, uint64_t s, uint32_t* keys) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < s; i += uint64_t{gridDim.x} * blockDim.x)
    keys[i] = src.bits(positions[i]) & mask;
}

__global__ void histogram_kernel(const uint32_t* bits, uint64_t m, uint32_t mask, int level, uint32_t high,
                                 uint32_t* bins) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < m; i += uint64_t{gridDim.x} * blockDim.x) {
    const uint32_t key = bits[i] & mask;
    if (level == 0) atomicAdd(&bins[key >> 16], 1u);
    else if ((key >> 16) == high) atomicAdd(&bins[key & 0xffffu], 1u);
  }
}

__device__ void store_le(uint8_t* p, uint32_t v, uint32_t bytes) {
  for (uint32_t b = 0; b < bytes; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}

__global__ void write_values_kernel(const uint32_t* bits, uint64_t m, gw_dtype dtype, gwc::SparseValues f,
                                    uint8_t* values) {
  const uint32_t vb = f == gwc::SparseValues::fp32 ? 4u : 2u;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < m; i += uint64_t{gridDim.x} * blockDim.x)
    store_le(values + i * vb, gwc::sparse_value_bits(f, gwc::element_to_f32(dtype, bits[i])), vb);
}

__global__ void write_u32_kernel(const uint32_t* idx, uint64_t m, uint8_t* out) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < m; i += uint64_t{gridDim.x} * blockDim.x)
    store_le(out + 4 * i, idx[i], 4);
}

__device__ uint32_t gap_of(const uint32_t* idx, uint64_t i) { return idx[i] - (i ? idx[i - 1] + 1 : 0u); }

__global__ void varint_length_kernel(const uint32_t* idx, uint64_t m, uint32_t* length) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < m; i += uint64_t{gridDim.x} * blockDim.x)
    length[i] = varint_bytes(gap_of(idx, i));
}

__global__ void write_varint_kernel(const uint32_t* idx, uint64_t m, const uint32_t* offset, uint8_t* out) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < m; i += uint64_t{gridDim.x} * blockDim.x) {
    uint32_t gap = gap_of(idx, i);
    uint8_t* p = out + offset[i];
    while (gap >= 0x80u) {
      *p++ = static_cast<uint8_t>(gap | 0x80u);
      gap >>= 7;
    }
    *p = static_cast<uint8_t>(gap);
  }
}

template <class Tag>
__global__ void scatter_values_kernel(Tag tag, const uint8_t* values, gwc::SparseValues f, const uint32_t* idx,
                                      uint64_t m, void* out, bool accumulate) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < m; i += uint64_t{gridDim.x} * blockDim.x) {
    float v;
    if (f == gwc::SparseValues::fp32) {
      const uint8_t* p = values + 4 * i;
      v = gwc::f32_from_bits(p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24));
    } else {
      const uint8_t* p = values + 2 * i;
      v = gwc::f16_to_f32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
    }
    gwc::cu::store_f32(tag, out, idx[i], v, accumulate);
  }
}

unsigned grid(uint64_t n) { return gwc::cu::grid_for(n, 4); }

}  // namespace

// The device backend: candidates in two device buffers (filtering writes to the other one).
struct CudaTopk::State final : Backend {
  cudaStream_t stream = nullptr;
  DenseSource dense{nullptr, true};
  uint32_t mask = 0;
  uint64_t n = 0;
  uint64_t count = 0;
  int current = 0;
  DeviceArray<uint32_t> idx[2], bits[2];
  DeviceArray<uint32_t> gt, eq, gt_base, eq_base, positions, keys, bins, lengths, offsets;
  DeviceArray<uint8_t> scan_temp;

  void sync() { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }

  void exclusive_sum(const uint32_t* in, uint32_t* out, uint64_t items) {
    size_t bytes = 0;
    check(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, static_cast<int>(items), stream), "scan size");
    scan_temp.ensure(bytes);
    check(cub::DeviceScan::ExclusiveSum(scan_temp.p, bytes, in, out, static_cast<int>(items), stream), "scan");
  }

  // One counting pass and one scatter pass over `items` elements of src; returns (total gt, total eq).
  template <class Src>
  std::pair<uint64_t, uint64_t> pass(Src src, uint64_t items, uint32_t t, uint64_t eq_limit, uint64_t capacity,
                                     uint32_t* out_idx, uint32_t* out_bits) {
    if (items == 0) return {0, 0};
    const uint64_t tiles = (items + kTile - 1) / kTile;
    gt.ensure(tiles);
    eq.ensure(tiles);
    gt_base.ensure(tiles);
    eq_base.ensure(tiles);
    count_tiles<<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(src, items, mask, t, gt.p, eq.p);
    check(cudaGetLastError(), "count_tiles");
    exclusive_sum(gt.p, gt_base.p, tiles);
    exclusive_sum(eq.p, eq_base.p, tiles);
    scatter_tiles<<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(src, items, mask, t, eq_limit, capacity,
                                                                          gt_base.p, eq_base.p, out_idx, out_bits);
    check(cudaGetLastError(), "scatter_tiles");
    uint32_t last[4];
    check(cudaMemcpyAsync(&last[0], gt_base.p + tiles - 1, 4, cudaMemcpyDeviceToHost, stream), "copy");
    check(cudaMemcpyAsync(&last[1], gt.p + tiles - 1, 4, cudaMemcpyDeviceToHost, stream), "copy");
    check(cudaMemcpyAsync(&last[2], eq_base.p + tiles - 1, 4, cudaMemcpyDeviceToHost, stream), "copy");
    check(cudaMemcpyAsync(&last[3], eq.p + tiles - 1, 4, cudaMemcpyDeviceToHost, stream), "copy");
    sync();
    return {uint64_t{last[0]} + last[1], uint64_t{last[2]} + last[3]};
  }

  void reserve(uint64_t capacity) {
    for (int b = 0; b < 2; ++b) {
      idx[b].ensure(capacity);
      bits[b].ensure(capacity);
    }
  }

  void gather_keys(const std::vector<uint32_t>& pos, std::vector<uint32_t>& out) override {
    positions.ensure(pos.size());
    keys.ensure(pos.size());
    check(cudaMemcpyAsync(positions.p, pos.data(), pos.size() * 4, cudaMemcpyHostToDevice, stream), "copy");
    gather_kernel<<<grid(pos.size()), 256, 0, stream>>>(dense, mask, positions.p, pos.size(), keys.p);
    check(cudaGetLastError(), "gather");
    out.resize(pos.size());
    check(cudaMemcpyAsync(out.data(), keys.p, pos.size() * 4, cudaMemcpyDeviceToHost, stream), "copy");
    sync();
  }

  uint64_t compact_at_least(uint32_t t, uint64_t capacity) override {
    reserve(capacity);
    current = 0;
    const auto c = pass(dense, n, t, ~uint64_t{0}, capacity, idx[0].p, bits[0].p);
    const uint64_t total = c.first + c.second;
    count = std::min(total, capacity);
    return total;
  }

  uint64_t compact_tie(uint32_t t, uint64_t equal_limit) override {
    current = 0;
    const auto c = pass(dense, n, t, equal_limit, idx[0].n, idx[0].p, bits[0].p);
    count = c.first + std::min(c.second, equal_limit);
    return count;
  }

  void candidate_histogram(int level, uint32_t high, std::vector<uint64_t>& out) override {
    const size_t size = level == 0 ? 32768 : 65536;
    bins.ensure(size);
    check(cudaMemsetAsync(bins.p, 0, size * 4, stream), "memset");
    if (count) histogram_kernel<<<grid(count), 256, 0, stream>>>(bits[current].p, count, mask, level, high, bins.p);
    check(cudaGetLastError(), "histogram");
    std::vector<uint32_t> host(size);
    check(cudaMemcpyAsync(host.data(), bins.p, size * 4, cudaMemcpyDeviceToHost, stream), "copy");
    sync();
    out.assign(host.begin(), host.end());
  }

  uint64_t filter_candidates(uint32_t t, uint64_t equal_limit) override {
    const int next = 1 - current;
    const auto c = pass(CandidateSource{idx[current].p, bits[current].p}, count, t, equal_limit, idx[next].n,
                        idx[next].p, bits[next].p);
    current = next;
    count = c.first + std::min(c.second, equal_limit);
    return count;
  }
};

CudaTopk::CudaTopk() : state_(std::make_unique<State>()) {}
CudaTopk::~CudaTopk() = default;

uint64_t CudaTopk::encode(const gwc::CodecBase& codec, const Settings& s, uint64_t k, const gw_tensor& in, void* body,
                          uint64_t capacity) {
  gwc::cu::DeviceScope scope("topk", in.device);
  State& st = *state_;
  st.stream = static_cast<cudaStream_t>(in.stream);
  st.dense = DenseSource{in.data, in.dtype == GW_DTYPE_F32};
  st.mask = in.dtype == GW_DTYPE_F32 ? 0x7fffffffu : 0x7fffu;
  st.n = in.count;
  st.count = 0;
  st.current = 0;
  const uint64_t m = select(st, make_plan(in.count, k, s.selection, in.dtype == GW_DTYPE_F32 ? 0x80000000u : 0x8000u));
  const uint32_t* idx = st.idx[st.current].p;
  const uint32_t vb = gwc::sparse_value_bytes(s.values);
  uint64_t index_bytes = 4 * m;
  if (s.indices == IndexFormat::delta && m > 0) {
    st.lengths.ensure(m);
    st.offsets.ensure(m);
    varint_length_kernel<<<grid(m), 256, 0, st.stream>>>(idx, m, st.lengths.p);
    check(cudaGetLastError(), "varint lengths");
    st.exclusive_sum(st.lengths.p, st.offsets.p, m);
    uint32_t last[2];
    check(cudaMemcpyAsync(&last[0], st.offsets.p + m - 1, 4, cudaMemcpyDeviceToHost, st.stream), "copy");
    check(cudaMemcpyAsync(&last[1], st.lengths.p + m - 1, 4, cudaMemcpyDeviceToHost, st.stream), "copy");
    st.sync();
    index_bytes = uint64_t{last[0]} + last[1];
  }
  const uint64_t bytes = kPreambleBytes + m * vb + index_bytes;
  gwc::check_capacity(codec, bytes, capacity, body);
  uint8_t preamble[kPreambleBytes];
  preamble[0] = static_cast<uint8_t>(s.values);
  preamble[1] = static_cast<uint8_t>(s.indices);
  gwc::store_le16(preamble + 2, 0);
  gwc::store_le32(preamble + 4, static_cast<uint32_t>(m));
  auto* out = static_cast<uint8_t*>(body);
  check(cudaMemcpyAsync(out, preamble, kPreambleBytes, cudaMemcpyHostToDevice, st.stream), "copy");
  if (m > 0) {
    write_values_kernel<<<grid(m), 256, 0, st.stream>>>(st.bits[st.current].p, m, in.dtype, s.values,
                                                        out + kPreambleBytes);
    uint8_t* indices = out + kPreambleBytes + m * vb;
    if (s.indices == IndexFormat::u32) write_u32_kernel<<<grid(m), 256, 0, st.stream>>>(idx, m, indices);
    else write_varint_kernel<<<grid(m), 256, 0, st.stream>>>(idx, m, st.offsets.p, indices);
    check(cudaGetLastError(), "write body");
  }
  st.sync();
  return bytes;
}

void CudaTopk::decode(const gwc::CodecBase& codec, const uint8_t* body, uint64_t size, gw_tensor& out,
                      bool accumulate) {
  gwc::cu::DeviceScope scope("topk", out.device);
  State& st = *state_;
  st.stream = static_cast<cudaStream_t>(out.stream);
  std::vector<uint8_t> host(size);
  if (size) check(cudaMemcpyAsync(host.data(), body, size, cudaMemcpyDeviceToHost, st.stream), "copy");
  st.sync();
  ParsedBody parsed;
  std::string error;
  if (!parse_body(host.data(), size, out.count, parsed, error)) codec.corrupt(error);
  const uint32_t elem = out.dtype == GW_DTYPE_F32 ? 4u : 2u;
  if (!accumulate && out.count)
    check(cudaMemsetAsync(out.data, 0, out.count * elem, st.stream), "memset");
  if (parsed.m > 0) {
    st.positions.ensure(parsed.m);
    check(cudaMemcpyAsync(st.positions.p, parsed.index.data(), parsed.m * 4, cudaMemcpyHostToDevice, st.stream),
          "copy");
    const uint8_t* values = body + kPreambleBytes;
    const uint64_t m = parsed.m;
    const gwc::SparseValues f = parsed.values;
    const uint32_t* idx = st.positions.p;
    void* data = out.data;
    check(gwc::cu::dispatch_dtype(out.dtype,
                                  [&](auto tag) {
                                    scatter_values_kernel<<<grid(m), 256, 0, st.stream>>>(tag, values, f, idx, m,
                                                                                         data, accumulate);
                                    return cudaGetLastError();
                                  }),
          "scatter");
  }
  st.sync();
}

}  // namespace gwtopk
