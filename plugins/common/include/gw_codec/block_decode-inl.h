// gw_codec/block_decode-inl.h — the output loop shared by the blockwise decoders (int8, onebit).
//
// Per-target header (include it after hwy/foreach_target.h or hwy/highway.h, like any *-inl.h).
// API, in namespace gwc::HWY_NAMESPACE:
//
//   DecodeBlocksInOutputOrder(block, scales, begin, end, out, accumulate, kernel, stream_large)
//       out[j] (+)= element begin + j of the body, for j in [0, end - begin). The loop walks the
//       output vector by vector in memory order, not block by block: after a scalar head up to the
//       first vector-aligned element, each vector gets its lanes' scales (the scale bits of the
//       block each lane falls in — a vector may straddle two blocks), so every vector store is
//       aligned whatever the block size and the output's offset (no store splits a cache line),
//       and the accumulate / store choice is made once per call, not per vector.
//       stream_large: outputs of at least kStreamMinBytes that are not accumulated are written with
//       non-temporal (streaming) stores, fenced before returning. Whether that pays depends on the
//       codec, so the codec chooses: measured on the development machine (P1, AMD EPYC under KVM),
//       streaming made int8's decoder (which also reads a 1-byte-per-element payload) about 25 %
//       faster but onebit's (which reads almost nothing) about 20 % slower than aligned ordinary
//       stores. Either way the values are the same; only how they reach memory differs.
//   The kernel supplies the element values:
//       hn::Vec<ScalableTag<float>> Vector(uint64_t g, hn::Vec<ScalableTag<uint32_t>> scale_bits) const
//           — elements g .. g + Lanes - 1, lane i with block scale bits scale_bits[i];
//       float Scalar(uint64_t g, uint32_t scale_bits) const — element g alone.
//   Vector and Scalar must give the same bits for an element (the tests check every target).
#if defined(GW_CODEC_BLOCK_DECODE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GW_CODEC_BLOCK_DECODE_INL_H_
#undef GW_CODEC_BLOCK_DECODE_INL_H_
#else
#define GW_CODEC_BLOCK_DECODE_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "gw_codec/portable.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gwc {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Outputs at least this large (bytes) may be written with streaming stores: they do not fit in the
// caches anyway. Smaller ones stay in the cache for whoever reads them next.
constexpr uint64_t kStreamMinBytes = uint64_t{16} << 20;

enum class Put { kStore, kStream, kAccumulate };

template <Put kPut, class DF>
HWY_INLINE void PutVector(DF df, hn::Vec<DF> v, float* HWY_RESTRICT p) {
  if constexpr (kPut == Put::kAccumulate) {
    hn::StoreU(hn::Add(hn::LoadU(df, p), v), df, p);
  } else if constexpr (kPut == Put::kStream) {
    hn::Stream(v, df, p);  // p is vector-aligned
  } else {
    hn::StoreU(v, df, p);
  }
}

// Vectors of out[j ..) while whole vectors remain (block >= Lanes): runs of vectors inside one
// block share its scale; a vector that reaches into the next block blends the two scales.
template <Put kPut, class Kernel>
HWY_INLINE uint64_t DecodeVectors(uint32_t block, const uint8_t* HWY_RESTRICT scales, uint64_t begin, uint64_t j,
                                  uint64_t count, float* HWY_RESTRICT out, const Kernel& kernel) {
  const hn::ScalableTag<uint32_t> du;
  const hn::RebindToFloat<decltype(du)> df;
  const size_t L = hn::Lanes(du);
  uint64_t blk = (begin + j) / block;
  uint64_t next = (blk + 1) * block - begin;  // output index of the next block's first element
  auto vs = hn::Set(du, load_le32(scales + 4 * blk));
  while (j + L <= count) {
    const uint64_t stop = next < count ? next : count;
    for (; j + L <= stop; j += L) PutVector<kPut>(df, kernel.Vector(begin + j, vs), out + j);
    if (j + L > count) break;
    ++blk;  // the vector at j reaches into block blk + 1 (or starts it)
    const auto vn = hn::Set(du, load_le32(scales + 4 * blk));
    if (j < next) {
      const auto s = hn::IfThenElse(hn::FirstN(du, static_cast<size_t>(next - j)), vs, vn);
      PutVector<kPut>(df, kernel.Vector(begin + j, s), out + j);
      j += L;
    }
    vs = vn;
    next += block;
  }
  return j;
}

template <class Kernel>
HWY_INLINE void DecodeBlocksInOutputOrder(uint32_t block, const uint8_t* HWY_RESTRICT scales, uint64_t begin,
                                          uint64_t end, float* HWY_RESTRICT out, bool accumulate,
                                          const Kernel& kernel, bool stream_large) {
  const size_t L = hn::Lanes(hn::ScalableTag<float>());
  const uint64_t count = end - begin;
  const auto scalar = [&](uint64_t j) {
    const float v = kernel.Scalar(begin + j, load_le32(scales + 4 * ((begin + j) / block)));
    out[j] = accumulate ? out[j] + v : v;
  };
  uint64_t j = 0;
  if (reinterpret_cast<uintptr_t>(out) % sizeof(float) == 0) {  // scalar head up to a vector-aligned element
    const size_t vec_bytes = L * sizeof(float);
    const size_t mis = static_cast<size_t>(reinterpret_cast<uintptr_t>(out) % vec_bytes);
    const uint64_t head = mis == 0 ? 0 : (vec_bytes - mis) / sizeof(float);
    for (; j < head && j < count; ++j) scalar(j);
  }
  if (block >= L && j + L <= count) {
    if (accumulate) {
      j = DecodeVectors<Put::kAccumulate>(block, scales, begin, j, count, out, kernel);
    } else if (stream_large && count * sizeof(float) >= kStreamMinBytes &&
               reinterpret_cast<uintptr_t>(out + j) % (L * sizeof(float)) == 0) {
      j = DecodeVectors<Put::kStream>(block, scales, begin, j, count, out, kernel);
      hwy::FlushStream();
    } else {
      j = DecodeVectors<Put::kStore>(block, scales, begin, j, count, out, kernel);
    }
  }
  for (; j < count; ++j) scalar(j);
}

}  // namespace HWY_NAMESPACE
}  // namespace gwc
HWY_AFTER_NAMESPACE();

#endif  // GW_CODEC_BLOCK_DECODE_INL_H_
