// Which coordinates random-k keeps: the same on every rank, on the CPU and in CUDA, for the same
// (seed, step, n, k). No index is sent; the decoder recomputes them.
//
// [0, n) is cut into k strata, stratum j = [floor(j n / k), floor((j+1) n / k)), and one coordinate is
// drawn in each: start_j + floor(w_j * len_j / 2^32), where w_j is word j of the Philox stream
// (seed, step, gwc::kStreamRandomK). Every element lies in exactly one stratum and is kept with
// probability 1 / len_j, so scaling the kept value by len_j (about n / k) makes the decoded tensor an
// unbiased estimate of the input. The coordinates come out strictly increasing.
#pragma once

#include <stdint.h>

#include "gw_codec/philox.h"

namespace gwrandomk {

struct Stratum {
  uint64_t position;
  uint64_t length;
};

// The coordinate a stream word draws in the stratum [start, start + length).
GW_HD Stratum draw(uint64_t start, uint64_t length, uint32_t word) {
  return Stratum{start + (((uint64_t)word * length) >> 32), length};
}

// Coordinate j of k over n elements (n, k < 2^32, 0 < k <= n), given the stream's word j.
GW_HD Stratum stratum(uint64_t j, uint64_t n, uint64_t k, uint32_t word) {
  const uint64_t start = j * n / k;
  return draw(start, (j + 1) * n / k - start, word);
}

GW_HD gwc::RandomStream coordinate_stream(uint64_t seed, uint64_t step) {
  return gwc::RandomStream{seed, step, gwc::kStreamRandomK};
}

}  // namespace gwrandomk
