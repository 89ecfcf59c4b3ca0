// Elementwise reductions used by the collectives: small loops the compiler vectorizes. fp16 and bf16
// are widened to fp32, combined, and rounded once, through gradwire's one conversion
// (gw_kernels/fp16.h, the codecs' too: round to nearest even, a NaN keeps its payload, quieted).
#pragma once

#include <gradwire/gradwire.h>

#include <cstdint>
#include <gw_kernels/fp16.h>

namespace gw::coll {

// dst[i] = a[i] op b[i] for `count` elements; dst may be a or b. AVG combines as SUM: the caller
// divides once at the end (divide()). The order (a, b) is the caller's to keep identical on every rank.
void reduce(void* dst, const void* a, const void* b, uint64_t count, gw_dtype dtype, gw_reduce_op op);
// buf[i] /= n (integers: truncating division).
void divide(void* buf, uint64_t count, gw_dtype dtype, uint32_t n);

}  // namespace gw::coll
