// One rank of the multi-rank device check (label gpu, started by gpu_path_test through `gradwire run`):
// for every codec with CUDA kernels, the compressed allreduce (avg) of a device tensor — encoded and
// decoded on the device, payloads staged through host memory — must give, on every rank, the bits the
// same allreduce of the same values in host memory gives, with and without error feedback (whose
// residuals stay on the device). Exits 0 with "SKIP" when there is no device.
#include <cuda_runtime_api.h>
#include <gradwire/gradwire.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rank_setup.hpp"

using namespace gwrank;

int main() {
  init_rank_from_env();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP rank %d: no CUDA device\n", g_rank);
    return 0;
  }
  const int device = g_rank % devices;
  cudaSetDevice(device);
  gw_runtime* rt = make_runtime("[codec.topk]\nratio = 0.01\n[codec.randomk]\nratio = 0.01\n"
                                "[collectives]\npipeline_chunk_bytes = 65536\n",
                                "MP_TIMEOUT_S");
  gw_comm* comm = make_comm(rt);
  const uint64_t n = 1000003;
  std::vector<float> values(n);
  for (uint64_t i = 0; i < n; ++i) values[i] = float(int((i * 37 + uint64_t(g_rank) * 101) % 211) - 105) / 13.0f;
  float* dev = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&dev), n * 4) != cudaSuccess) die("cudaMalloc");
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);
  for (const char* name : {"none", "fp16", "bf16", "int8", "onebit", "topk", "randomk"}) {
    gw_codec* codec = nullptr;
    check(gw_codec_create(rt, name, &codec), std::string("gw_codec_create ") + name);
    std::vector<float> host = values;
    gw_tensor th = tensor(GW_DTYPE_F32, host.data(), n);
    check(gw_allreduce_compressed(comm, codec, nullptr, &th, &th, GW_REDUCE_AVG), std::string(name) + " on the host");
    cudaMemcpy(dev, values.data(), n * 4, cudaMemcpyHostToDevice);
    gw_tensor td = tensor(GW_DTYPE_F32, dev, n);
    td.memory = GW_MEMORY_CUDA;
    td.device = device;
    td.stream = stream;
    check(gw_allreduce_compressed(comm, codec, nullptr, &td, &td, GW_REDUCE_AVG), std::string(name) + " on the device");
    std::vector<float> back(n);
    cudaMemcpy(back.data(), dev, n * 4, cudaMemcpyDeviceToHost);
    uint64_t differ = 0, first = n;
    for (uint64_t i = 0; i < n; ++i)
      if (std::memcmp(&back[i], &host[i], 4) != 0) {
        if (first == n) first = i;
        ++differ;
      }
    if (differ)
      die(std::string(name) + ": the device result differs from the host's in " + std::to_string(differ) +
          " elements, the first at " + std::to_string(first) + " (" + std::to_string(back[first]) + " vs " +
          std::to_string(host[first]) + ")");
    std::printf("[%d] %s: device == host, %llu elements\n", g_rank, name, static_cast<unsigned long long>(n));
    gw_codec_destroy(codec);
  }
  // With error feedback, three steps: the residuals stay on the device and give the host's bits.
  for (const char* name : {"int8", "onebit", "topk"}) {
    gw_codec* codec = nullptr;
    check(gw_codec_create(rt, name, &codec), std::string("gw_codec_create ") + name);
    gw_error_feedback *ef_host = nullptr, *ef_dev = nullptr;
    check(gw_error_feedback_create(codec, &ef_host), "gw_error_feedback_create");
    check(gw_error_feedback_create(codec, &ef_dev), "gw_error_feedback_create");
    for (int step = 0; step < 3; ++step) {
      std::vector<float> host(n);
      for (uint64_t i = 0; i < n; ++i) host[i] = values[(i + uint64_t(step) * 7919) % n];
      cudaMemcpy(dev, host.data(), n * 4, cudaMemcpyHostToDevice);
      gw_tensor th = tensor(GW_DTYPE_F32, host.data(), n);
      gw_tensor td = tensor(GW_DTYPE_F32, dev, n);
      td.memory = GW_MEMORY_CUDA;
      td.device = device;
      td.stream = stream;
      check(gw_allreduce_compressed_ef(comm, ef_host, nullptr, &th, &th, GW_REDUCE_AVG), std::string(name) + " ef host");
      check(gw_allreduce_compressed_ef(comm, ef_dev, nullptr, &td, &td, GW_REDUCE_AVG), std::string(name) + " ef device");
      std::vector<float> back(n);
      cudaMemcpy(back.data(), dev, n * 4, cudaMemcpyDeviceToHost);
      if (std::memcmp(back.data(), host.data(), n * 4) != 0)
        die(std::string(name) + " with error feedback, step " + std::to_string(step) + ": device differs from host");
    }
    std::printf("[%d] %s with error feedback: device == host over 3 steps\n", g_rank, name);
    gw_error_feedback_destroy(ef_dev);
    gw_error_feedback_destroy(ef_host);
    gw_codec_destroy(codec);
  }
  // gw_sync with device gradients (two tensors in one bucket, int8 with error feedback, every step): the
  // bucket is exchanged in device memory and gives the host synchronizer's bits, step after step.
  {
    const uint64_t a = 300007, b = 1000;
    std::vector<std::vector<float>> results;
    for (gw_memory_kind m : {GW_MEMORY_HOST, GW_MEMORY_CUDA}) {
      gw_runtime* srt = make_runtime("[codec]\nname = \"int8\"\nerror_feedback = true\n", "MP_TIMEOUT_S");
      gw_sync_options o = GW_SYNC_OPTIONS_INIT;
      o.runtime = srt;
      gw_sync* sync = nullptr;
      check(gw_sync_create(comm, &o, &sync), "gw_sync_create");
      std::vector<float> ga(a), gb(b);
      float *da = nullptr, *db = nullptr;
      cudaMalloc(reinterpret_cast<void**>(&da), a * 4);
      cudaMalloc(reinterpret_cast<void**>(&db), b * 4);
      gw_tensor ta = tensor(GW_DTYPE_F32, m == GW_MEMORY_CUDA ? static_cast<void*>(da) : ga.data(), a);
      gw_tensor tb = tensor(GW_DTYPE_F32, m == GW_MEMORY_CUDA ? static_cast<void*>(db) : gb.data(), b);
      for (gw_tensor* t : {&ta, &tb}) {
        t->memory = m;
        t->device = device;
        t->stream = m == GW_MEMORY_CUDA ? stream : nullptr;
      }
      check(gw_sync_register(sync, "a", &ta, nullptr), "register a");
      check(gw_sync_register(sync, "b", &tb, nullptr), "register b");
      check(gw_sync_finalize(sync), "gw_sync_finalize");
      std::vector<float> all;
      for (int step = 0; step < 3; ++step) {
        for (uint64_t i = 0; i < a; ++i) ga[i] = values[(i + uint64_t(step) * 131) % n];
        for (uint64_t i = 0; i < b; ++i) gb[i] = values[(i * 7 + uint64_t(step)) % n];
        if (m == GW_MEMORY_CUDA) {
          cudaMemcpy(da, ga.data(), a * 4, cudaMemcpyHostToDevice);
          cudaMemcpy(db, gb.data(), b * 4, cudaMemcpyHostToDevice);
        }
        uint32_t flags = 0;
        check(gw_sync_step(sync, &flags), "gw_sync_step");
        if (m == GW_MEMORY_CUDA) {
          cudaMemcpy(ga.data(), da, a * 4, cudaMemcpyDeviceToHost);
          cudaMemcpy(gb.data(), db, b * 4, cudaMemcpyDeviceToHost);
        }
        all.insert(all.end(), ga.begin(), ga.end());
        all.insert(all.end(), gb.begin(), gb.end());
      }
      results.push_back(std::move(all));
      check(gw_sync_destroy(sync), "gw_sync_destroy");
      cudaFree(da);
      cudaFree(db);
      check(gw_runtime_destroy(srt), "gw_runtime_destroy");
    }
    if (results[0].size() != results[1].size() ||
        std::memcmp(results[0].data(), results[1].data(), 4 * results[0].size()) != 0)
      die("gw_sync: the device bucket's averages differ from the host's");
    std::printf("[%d] gw_sync int8 with error feedback: device == host over 3 steps\n", g_rank);
  }
  cudaStreamDestroy(stream);
  cudaFree(dev);
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
