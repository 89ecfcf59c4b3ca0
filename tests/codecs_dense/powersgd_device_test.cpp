// The powersgd codec's device path (plugin.cpp's round_cuda) on a machine without a GPU: plugin.cpp
// compiled with GW_CODEC_WITH_CUDA against a table of "device" operations on host memory (the host
// kernels, malloc, memcpy), driven through its vtable with GW_MEMORY_CUDA tensors. It checks what the
// device path does around the kernels (M and the residuals kept on the device, Q on the host, the exact
// elements, the copies of every round, the residual copied back for save_state and up again after
// load_state) against the host path, bit for bit; tests/gpu (GpuPowerSgd.*) checks cuda.cu's kernels.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cuda.hpp"
#include "direct_codec.hpp"
#include "kernels.hpp"

extern "C" const gw_plugin_descriptor* gw_plugin_entry(uint32_t, uint32_t);

namespace psgd {
namespace cuda {
namespace {

int calls = 0;  // operations the device path asked for

const Ops kOps = {
    [](int, char*) { return ++calls, 0; },
    [](float** p, uint64_t n, char*) { return ++calls, (*p = static_cast<float*>(std::malloc(4 * (n ? n : 1)))) ? 0 : 2; },
    [](float* p) { std::free(p); },
    [](float* d, const float* s, uint64_t n, void*, char*) { return ++calls, std::memmove(d, s, 4 * n), 0; },
    [](float* p, uint64_t n, void*, char*) { return ++calls, std::memset(p, 0, 4 * n), 0; },
    [](const float* x, const float* res, float* m, uint64_t n, void*, char*) {
      for (uint64_t i = 0; i < n; ++i) m[i] = res ? x[i] + res[i] : x[i];
      return ++calls, 0;
    },
    [](const float* m, uint64_t rows, uint64_t cols, const float* q, uint32_t r, float* p, void*, char*) {
      return ++calls, multiply(m, rows, cols, q, r, p), 0;
    },
    [](const float* m, uint64_t rows, uint64_t cols, const float* p, uint32_t r, float* q, void*, char*) {
      return ++calls, multiply_transposed(m, rows, cols, p, r, q), 0;
    },
    [](const float* m, const float* p, const float* q, uint64_t rows, uint64_t cols, uint32_t r, float* out, void*,
       char*) {
      if (m) subtract_product(m, p, q, rows, cols, r, out);
      else reconstruct(p, q, rows, cols, r, out);
      return ++calls, 0;
    },
    [](float* p, uint64_t rows, uint32_t r, void*, char*) { return ++calls, orthogonalize(p, rows, r), 0; },
    [](void*, char*) { return ++calls, 0; },
};

}  // namespace

const Ops* ops() { return &kOps; }

}  // namespace cuda
}  // namespace psgd

namespace {

using gwgpu::normal;
using gwgpu::same_bits;

class Codec {
 public:
  explicit Codec(const std::string& rank) {
    const gw_component& c = gw_plugin_entry(GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR)->components[0];
    for (uint32_t k = 0; k < c.num_config_keys; ++k) {
      std::string v = c.config_keys[k].default_value;
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      cfg_.values[c.config_keys[k].name] = v;
    }
    cfg_.values["rank"] = rank;
    vt_ = static_cast<const gw_codec_vtable*>(c.vtable);
    EXPECT_EQ(vt_->create(nullptr, gwgpu::host(), &cfg_, &codec_), GW_OK) << gwgpu::last_error;
  }
  ~Codec() { vt_->destroy(codec_); }
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;
  const gw_codec_vtable* vt() const { return vt_; }
  void* get() const { return codec_; }
  std::vector<unsigned char> state() const {
    uint64_t size = 0;
    EXPECT_EQ(vt_->save_state(codec_, nullptr, 0, &size), GW_OK);
    std::vector<unsigned char> blob(size);
    EXPECT_EQ(vt_->save_state(codec_, blob.data(), size, &size), GW_OK);
    return blob;
  }

 private:
  gw_config cfg_;
  const gw_codec_vtable* vt_ = nullptr;
  void* codec_ = nullptr;
};

// One call on every simulated rank (the ranks' vectors summed here in rank order); every round's vectors
// appended to `vectors`, each rank's output to outs.
void call(std::vector<Codec*>& ranks, gw_memory_kind memory, const std::vector<std::vector<float>>& ins,
          const std::vector<gw_tensor_shape>& shapes, uint64_t step, std::vector<std::vector<float>>& vectors,
          std::vector<std::vector<float>>& outs) {
  const uint64_t count = ins[0].size();
  gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
  ctx.seed = 11;
  ctx.step = step;
  ctx.world_size = uint32_t(ranks.size());
  ctx.buffer_id = 5;
  ctx.shapes = shapes.data();
  ctx.num_shapes = uint32_t(shapes.size());
  gw_codec_round_plan plan = GW_CODEC_ROUND_PLAN_INIT;
  ASSERT_EQ(ranks[0]->vt()->round_plan(ranks[0]->get(), &ctx, count, &plan), GW_OK) << gwgpu::last_error;
  outs.assign(ranks.size(), std::vector<float>(count));
  std::vector<float> sum;
  for (uint32_t r = 0; r <= plan.rounds; ++r) {
    const bool last = r == plan.rounds;
    std::vector<float> total(last ? 0 : plan.elements[r], 0.0f);
    for (size_t k = 0; k < ranks.size(); ++k) {
      ctx.rank = uint32_t(k);
      gw_tensor in = GW_TENSOR_INIT, reduced = GW_TENSOR_INIT, next = GW_TENSOR_INIT, out = GW_TENSOR_INIT;
      in.memory = out.memory = memory;
      in.data = const_cast<float*>(ins[k].data());
      in.count = out.count = count;
      out.data = outs[k].data();
      reduced.data = sum.data();
      reduced.count = sum.size();
      std::vector<float> v(total.size());
      next.data = v.data();
      next.count = v.size();
      ASSERT_EQ(ranks[k]->vt()->round(ranks[k]->get(), &ctx, r, &in, r > 0 ? &reduced : nullptr,
                                      last ? nullptr : &next, last ? &out : nullptr),
                GW_OK)
          << gwgpu::last_error;
      for (size_t i = 0; i < total.size(); ++i) total[i] = total[i] + v[i];
      vectors.push_back(v);
    }
    sum = total;
  }
}

TEST(PowerSgdDevicePath, EqualsTheHostPathBitForBitThroughCheckpoints) {
  // 64 x 96, 5 exact, 37 x 53, 10 exact, 300 x 701.
  const std::vector<gw_tensor_shape> shapes = {{0, 64, 96}, {6144 + 5, 37, 53}, {6144 + 5 + 1961 + 10, 300, 701}};
  const uint64_t count = 6144 + 5 + 1961 + 10 + 300 * 701;
  for (uint32_t world : {1u, 3u})
    for (const char* rank : {"1", "4"}) {
      SCOPED_TRACE(std::string("world ") + std::to_string(world) + ", rank " + rank);
      std::vector<Codec*> host, dev;
      for (uint32_t k = 0; k < world; ++k) host.push_back(new Codec(rank)), dev.push_back(new Codec(rank));
      for (uint64_t step = 0; step < 3; ++step) {
        std::vector<std::vector<float>> ins;
        for (uint32_t k = 0; k < world; ++k) ins.push_back(normal(count, 100 * k + uint32_t(step) + 1));
        std::vector<std::vector<float>> hv, dv, ho, dout;
        psgd::cuda::calls = 0;
        call(host, GW_MEMORY_HOST, ins, shapes, step, hv, ho);
        EXPECT_EQ(psgd::cuda::calls, 0) << "the host path used the device operations";
        call(dev, GW_MEMORY_CUDA, ins, shapes, step, dv, dout);
        EXPECT_GT(psgd::cuda::calls, 0) << "the device path did not use the device operations";
        ASSERT_EQ(hv.size(), dv.size());
        for (size_t i = 0; i < hv.size(); ++i) EXPECT_TRUE(same_bits(hv[i], dv[i])) << "step " << step << ", vector " << i;
        for (uint32_t k = 0; k < world; ++k)
          EXPECT_TRUE(same_bits(ho[k], dout[k])) << "step " << step << ", rank " << k << "'s output";
        // After the second call: the state (the residual copied back from the device) is the host's, and
        // loading it puts the residual back on the device for the third call.
        if (step == 1)
          for (uint32_t k = 0; k < world; ++k) {
            const std::vector<unsigned char> blob = dev[k]->state();
            EXPECT_EQ(host[k]->state(), blob) << "rank " << k;
            ASSERT_EQ(dev[k]->vt()->load_state(dev[k]->get(), blob.data(), blob.size()), GW_OK) << gwgpu::last_error;
          }
      }
      for (Codec* c : host) delete c;
      for (Codec* c : dev) delete c;
    }
}

}  // namespace
