// The hot pass of the top-k selection on f32: compare the magnitude key of every element against a
// threshold and compact the qualifying (index, bits) pairs in index order. Highway compiles it for
// every x86 target (SSE4, AVX2, AVX-512) and picks the best one the CPU supports at run time; all
// targets store the same pairs.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "topk_cpu_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "topk_cpu.hpp"

HWY_BEFORE_NAMESPACE();
namespace gwtopk {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The mask bits of lanes [0, N) at bit positions [shift, shift + N).
template <class D, class M>
HWY_INLINE uint64_t MaskWord(D d, M m, size_t shift) {
  uint8_t bytes[8] = {};
  hn::StoreMaskBits(d, m, bytes);
  uint64_t word;
  std::memcpy(&word, bytes, sizeof word);
  return word << shift;
}

uint64_t CompactAtLeastF32(const float* HWY_RESTRICT x, uint64_t n, uint32_t t,
                           uint32_t* HWY_RESTRICT idx, uint32_t* HWY_RESTRICT bits, uint64_t capacity) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const size_t N = hn::Lanes(di);
  const auto magnitude = hn::Set(di, 0x7fffffff);
  // key >= t  <=>  key > t - 1 in signed lanes (keys are < 2^31; t == 0 gives -1).
  const auto below = hn::Set(di, static_cast<int32_t>(t - 1u));
  uint64_t c = 0;

  uint64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto v0 = hn::BitCast(di, hn::LoadU(df, x + i));
    const auto v1 = hn::BitCast(di, hn::LoadU(df, x + i + N));
    const auto v2 = hn::BitCast(di, hn::LoadU(df, x + i + 2 * N));
    const auto v3 = hn::BitCast(di, hn::LoadU(df, x + i + 3 * N));
    const auto m0 = hn::And(v0, magnitude) > below;
    const auto m1 = hn::And(v1, magnitude) > below;
    const auto m2 = hn::And(v2, magnitude) > below;
    const auto m3 = hn::And(v3, magnitude) > below;
    if (hn::AllFalse(di, hn::Or(hn::Or(m0, m1), hn::Or(m2, m3)))) continue;
    // Rare (about k/n of the lanes qualify): walk the set bits. Highway 1.0.3's AVX2 CompressStore
    // copies its permutation table to the stack on every call, which costs more than this loop.
    uint64_t word = MaskWord(di, m0, 0) | MaskWord(di, m1, N) | MaskWord(di, m2, 2 * N) |
                    MaskWord(di, m3, 3 * N);
    for (; word != 0; word &= word - 1, ++c) {
      if (c >= capacity) continue;
      const uint64_t j = i + static_cast<uint64_t>(__builtin_ctzll(word));
      idx[c] = static_cast<uint32_t>(j);
      std::memcpy(bits + c, x + j, 4);
    }
  }
  for (; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, 4);
    if ((b & 0x7fffffffu) >= t) {
      if (c < capacity) {
        idx[c] = static_cast<uint32_t>(i);
        bits[c] = b;
      }
      ++c;
    }
  }
  return c;
}

}  // namespace HWY_NAMESPACE
}  // namespace gwtopk
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gwtopk {
HWY_EXPORT(CompactAtLeastF32);

uint64_t compact_at_least_f32(const float* x, uint64_t n, uint32_t t, uint32_t* idx, uint32_t* bits,
                              uint64_t capacity) {
  return HWY_DYNAMIC_DISPATCH(CompactAtLeastF32)(x, n, t, idx, bits, capacity);
}
}  // namespace gwtopk
#endif
