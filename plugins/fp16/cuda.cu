// CUDA kernels of the fp16 codec (gw_codec/half_cuda.cuh): the same body bytes as the CPU path.
#include "gw_codec/half_cuda.cuh"

const gwc::HalfCudaOps* gwc::plugin_half_cuda_ops() { return cu::half_cuda_ops(); }
