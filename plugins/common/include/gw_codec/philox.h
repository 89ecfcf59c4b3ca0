/*
 * gw_codec/philox.h — a counter-based random stream, the same on the CPU and in CUDA.
 *
 * Philox-4x32 with 10 rounds (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as
 * 1, 2, 3", SC 2011): a keyed bijection of a 128-bit counter. Any element's random word is computed
 * from its index alone, so a CPU loop, a SIMD loop and a CUDA grid of any shape draw the same numbers.
 *
 * API (all GW_HD):
 *   void gwc::philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
 *       the raw block function.
 *   gwc::RandomStream{seed, step, stream}
 *       .block(uint64_t b, uint32_t out[4])  the 4 words of block b (elements 4b .. 4b+3)
 *       .word(uint64_t i)                    word i of the stream: word (i % 4) of block i / 4
 *       counter = {lo32(i/4), hi32(i/4) | stream << 24, lo32(step), hi32(step)}, key = {lo32(seed),
 *       hi32(seed)}; valid for i < 2^58 and stream < 256. The stream id separates uses of one seed:
 *       see gwc::kStream* below; a new use takes a new id.
 *   float gwc::uniform01(uint32_t w)   the top 24 bits of w as a float in [0, 1), exact.
 *   void gwc::fill_uniform01(stream, first, n, float* out)   host: uniform01 of words first..first+n-1
 *
 * The wire format fixes these definitions (docs/wire-format.md): changing them changes bytes.
 */
#ifndef GW_CODEC_PHILOX_H
#define GW_CODEC_PHILOX_H

#include "gw_codec/portable.h"

namespace gwc {

/* Stream ids of the codecs (one byte). */
enum : uint32_t {
  kStreamInt8Rounding = 1,   /* int8: stochastic rounding, one word per element */
  kStreamRandomK = 2,        /* randomk: coordinate selection */
  kStreamTopkSample = 3      /* topk: threshold sampling */
};

GW_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t p = (uint64_t)a * (uint64_t)b;
  *hi = (uint32_t)(p >> 32);
  *lo = (uint32_t)p;
}

GW_HD void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(0xD2511F53u, c0, &hi0, &lo0);
    philox_mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

struct RandomStream {
  uint64_t seed;
  uint64_t step;
  uint32_t stream;

  GW_HD void block(uint64_t b, uint32_t out[4]) const {
    const uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32) | (stream << 24), (uint32_t)step,
                             (uint32_t)(step >> 32)};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    philox4x32_10(ctr, key, out);
  }

  GW_HD uint32_t word(uint64_t i) const {
    uint32_t out[4];
    block(i >> 2, out);
    return out[i & 3u];
  }
};

GW_HD float uniform01(uint32_t w) { return (float)(w >> 8) * 5.9604644775390625e-8f; }

#if !defined(__CUDA_ARCH__)
/* Host: out[k] = uniform01(s.word(first + k)) for k < n, one Philox call per 4 words. */
inline void fill_uniform01(const RandomStream& s, uint64_t first, uint64_t n, float* out) {
  uint64_t i = first;
  const uint64_t end = first + n;
  while (i < end && (i & 3u)) *out++ = uniform01(s.word(i++));
  uint32_t w[4];
  for (; i + 4 <= end; i += 4) {
    s.block(i >> 2, w);
    for (int k = 0; k < 4; ++k) *out++ = uniform01(w[k]);
  }
  while (i < end) *out++ = uniform01(s.word(i++));
}
#endif

}  // namespace gwc

#endif /* GW_CODEC_PHILOX_H */
