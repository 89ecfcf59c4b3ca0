// Launchers of the kernels in device_kernels.cu (built only with CUDA); each returns a cudaError_t.
// Use them through codec/device.hpp, which turns the errors into gw::Error.
#pragma once

#include <cstdint>

namespace gw::device::kernels {

int add_f32(float* dst, const float* src, uint64_t count, void* stream);
int subtract_f32(float* out, const float* a, const float* b, uint64_t count, void* stream);
int divide_f32(float* x, uint64_t count, uint32_t n, void* stream);

}  // namespace gw::device::kernels
