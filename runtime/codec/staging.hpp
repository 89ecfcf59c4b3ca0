// Tensors as the runtime's f32 host buffers see them: gradients and parameters in f32, f16 or bf16, in
// host or CUDA memory, read into and written back from f32 host memory. The synchronizer's buckets and
// the compressed allreduce accumulate in f32 whatever the tensors' type (16-bit values convert exactly to
// f32; results are rounded to the nearest even value once, on the way back). Device tensors go through
// the same conversions after a copy to host memory on the tensor's stream (and back), so the logic is the
// one the CPU tests exercise; only the copy differs.
#pragma once

#include <gradwire/types.h>

#include <cstdint>

namespace gw::staging {

// f32, f16 or bf16: the element types staged through f32.
bool supported(gw_dtype dtype);

// The tensor's t.count elements as f32 in out.
void read_f32(const gw_tensor& t, float* out);
// out[i] += element i of the tensor.
void add_f32(const gw_tensor& t, float* out);
// Writes in[0, t.count) into the tensor in its type (round to nearest even for f16 and bf16).
void write_f32(const float* in, const gw_tensor& t);

}  // namespace gw::staging
