// The powersgd codec: PowerSGD (rank-r power iteration with warm start and error feedback) as a codec of
// rounds (ABI 1.4). For each buffer (gw_codec_context.buffer_id) and each tensor shape in it that is
// worth compressing, with M the tensor plus its residual:
//   round 0: P = M Q (Q kept from the last call: warm start), sent with the other elements as they are;
//   round 1: P = orthogonalise(sum of P), Q = M^T P, sent;
//   round 2: Q = sum of Q (kept for the next call), out = P Q^T; residual = M - P Q_local^T (Q_local: this
//            rank's own M^T P).
// Tensors without a shape, too small or too thin, go exactly in round 0. docs/powersgd.md.
#include <gradwire/plugin.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gw_codec/codec_base.hpp"
#include "cuda.hpp"
#include "kernels.hpp"
#include "pool.hpp"

namespace {

using gwc::fail;
using psgd::Pool;

// Threads a codec uses at most for its products (threads = 0: its share of the cores, up to this).
constexpr unsigned kMaxThreads = 64;

struct Segment {
  uint64_t offset = 0, rows = 0, cols = 0;
  uint64_t p_at = 0, q_at = 0;  // where its P and Q start in the concatenated factors
};

// An array of floats in device memory (the device path), freed with its buffer.
struct DeviceArray {
  const psgd::cuda::Ops* ops = nullptr;
  float* ptr = nullptr;
  uint64_t n = 0;
  DeviceArray() = default;
  DeviceArray(DeviceArray&& o) noexcept : ops(o.ops), ptr(o.ptr), n(o.n) { o.ptr = nullptr; }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(ops, o.ops);
    std::swap(ptr, o.ptr);
    std::swap(n, o.n);
    return *this;
  }
  ~DeviceArray() {
    if (ptr) ops->release(ptr);
  }
};

// A buffer's arrays on the device, for calls with device tensors: M, the residual (when `residual_live`, the
// buffer's host residual is stale), P, Q, this rank's Q and a round's vector.
struct DeviceState {
  int device = -1;
  DeviceArray m, residual, p, q, q_local, vec;
  bool residual_live = false;
};

// One buffer's state: the layout it was planned for, the warm-started Q, the residuals, and the
// call in progress (M, P, the exact elements' sum).
struct Buffer {
  uint64_t count = 0;
  std::vector<gw_tensor_shape> shapes;  // as given: the layout key
  std::vector<Segment> segments;        // the compressed tensors
  std::vector<std::pair<uint64_t, uint64_t>> exact;  // [begin, end) ranges sent as they are
  uint64_t p_elements = 0, q_elements = 0, exact_elements = 0;
  bool q_ready = false;
  std::vector<float> q;         // q_elements: every segment's Q, column by column
  std::vector<float> residual;  // count (error feedback), empty until the first call
  std::vector<float> m, p, q_local, exact_sum;
  DeviceState dev;
};

void put_u64(std::vector<unsigned char>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}
void put_f32s(std::vector<unsigned char>& out, const std::vector<float>& v) {
  put_u64(out, v.size());
  const size_t at = out.size();
  out.resize(at + 4 * v.size());
  if (!v.empty()) std::memcpy(out.data() + at, v.data(), 4 * v.size());  // little-endian hosts
}

struct Reader {
  const unsigned char* p;
  const unsigned char* end;
  uint64_t u64() {
    if (end - p < 8) fail(GW_ERR_CORRUPT, "powersgd state is truncated; pass the saved blob unmodified");
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
    p += 8;
    return v;
  }
  // A vector of `expected` elements, or (may_be_empty) none.
  std::vector<float> f32s(uint64_t expected, bool may_be_empty) {
    const uint64_t n = u64();
    if ((n != expected && !(may_be_empty && n == 0)) || uint64_t(end - p) / 4 < n)
      fail(GW_ERR_CORRUPT, "powersgd state holds a vector of the wrong size; pass the saved blob unmodified");
    std::vector<float> v(n);
    if (n) std::memcpy(v.data(), p, 4 * n);
    p += 4 * n;
    return v;
  }
};

// Deterministic normal values for the first Q (every rank draws the same from the seed).
uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
void fill_normal(float* x, uint64_t n, uint64_t seed) {
  uint64_t s = seed;
  for (uint64_t i = 0; i < n; i += 2) {
    const double u1 = (double(splitmix(s) >> 11) + 1.0) * 0x1.0p-53, u2 = double(splitmix(s) >> 11) * 0x1.0p-53;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    x[i] = float(radius * std::cos(6.283185307179586 * u2));
    if (i + 1 < n) x[i + 1] = float(radius * std::sin(6.283185307179586 * u2));
  }
}

class Codec final : public gwc::CodecBase {
 public:
  Codec(const gw_host* host, gwc::ConfigReader& config) : CodecBase(host, "powersgd") {
    rank_ = uint32_t(config.get_int("rank", 4));
    min_compression_rate_ = config.get_float("min_compression_rate", 2.0);
    min_elements_ = uint64_t(config.get_int("min_elements", 0));
    error_feedback_ = config.get_bool("residual_feedback", true);
    warm_start_ = config.get_bool("warm_start", true);
    start_step_ = uint64_t(config.get_int("start_step", 0));
    const int64_t threads = config.get_int("threads", 0);
    if (threads < 0) fail(GW_ERR_CONFIG, "powersgd: threads is " + std::to_string(threads) + "; give 0 (this rank's share of the cores) or more");
    threads_ = threads == 0 ? Pool::available(kMaxThreads, Pool::ranks_on_host())
                            : unsigned(std::min<int64_t>(threads, kMaxThreads));
    const std::string format = config.get_string("factor_format", "f32");
    wire_ = format == "fp16" ? "fp16" : format == "int8" ? "int8" : "none";
    // int8 scales each block of 256 elements by its largest: each tensor's factor starts a block of its own,
    // so a block never mixes two tensors' factors (or a factor and the exact elements), whose magnitudes differ.
    granule_ = format == "int8" ? 256 : 1;
    if (format != "f32" && format != "fp16" && format != "int8")
      fail(GW_ERR_CONFIG, "powersgd: factor_format '" + format + "' is not one of f32|fp16|int8");
  }

  gw_codec_properties properties() const override {
    gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
    // GW_CODEC_CUDA: the rounds take device tensors (round_cuda) in a plugin built with cuda.cu.
    p.flags = GW_CODEC_STATEFUL | (cuda_ ? uint32_t(GW_CODEC_CUDA) : 0u);
    p.sum_dtype = GW_DTYPE_F32;
    p.dtypes = 1u << GW_DTYPE_F32;
    return p;
  }
  void max_encoded_size(gw_dtype dtype, uint64_t, uint64_t* body, uint64_t* workspace) const override {
    check_dtype(dtype);
    *body = 0;
    *workspace = 0;
  }
  [[noreturn]] void refuse() const {
    fail(GW_ERR_UNSUPPORTED,
         "powersgd has no single-payload encoding: it reduces in rounds (P, then Q), which only the compressed "
         "allreduce runs (gw_allreduce_compressed, gw_sync, the DDP hook); use another codec for this call");
  }
  uint64_t encode(const gw_codec_context&, const gw_tensor&, void*, uint64_t) override { refuse(); }
  void decode(const gw_codec_context&, const void*, uint64_t, gw_tensor&, uint32_t) override { refuse(); }

  void round_plan(const gw_codec_context& ctx, uint64_t count, gw_codec_round_plan* plan) {
    plan->wire_codec = wire_;
    if (count == 0 && ctx.num_shapes == 0) {
      plan->rounds = 1;
      plan->elements[0] = 0;
      return;
    }
    Buffer& b = buffer(ctx, count);
    if (ctx.step < start_step_ || b.segments.empty()) {
      plan->rounds = 1;
      plan->elements[0] = ctx.step < start_step_ ? count : b.p_elements + b.exact_elements;
      return;
    }
    plan->rounds = 2;
    plan->elements[0] = b.p_elements + b.exact_elements;
    plan->elements[1] = b.q_elements;
  }

  void round(const gw_codec_context& ctx, uint32_t r, const gw_tensor& in, const gw_tensor* reduced, gw_tensor* next,
             gw_tensor* out) {
    check_tensor(in, 1u << GW_DTYPE_F32, "input");
    Buffer& b = buffer(ctx, in.count);
    if (in.memory == GW_MEMORY_CUDA) {
      gwc::refuse_cuda(*this, in, cuda_);
      round_cuda(ctx, r, in, reduced, next, out, b);
      return;
    }
    host_residual(b);
    const auto* x = static_cast<const float*>(in.data);
    if (ctx.step < start_step_) {  // plain exact allreduce before start_step (no residual kept)
      if (r == 0) copy_out(x, in.count, next);
      else std::memcpy(out->data, reduced->data, 4 * in.count);
      return;
    }
    const bool two = !b.segments.empty();
    if (r == 0) {
      // M = input + residual; P = M Q for the compressed tensors (each row of M summed just before its
      // products), then the exact elements (input + residual, M's values, not kept).
      b.m.resize(in.count);
      const float* res = error_feedback_ && b.residual.size() == in.count ? b.residual.data() : nullptr;
      first_q(ctx, b);
      float* v = vector(next, b.p_elements + b.exact_elements);
      if (granule_ > 1) std::memset(v, 0, 4 * b.p_elements);  // the padding between factors
      for (const Segment& g : b.segments)
        psgd::sum_multiply(x + g.offset, res ? res + g.offset : nullptr, b.m.data() + g.offset, g.rows, g.cols,
                           b.q.data() + g.q_at, rank_, v + g.p_at, pool());
      float* e = v + b.p_elements;
      for (const auto& [begin, end] : b.exact) {
        if (res)
          for (uint64_t i = begin; i < end; ++i) e[i - begin] = x[i] + res[i];
        else
          std::memcpy(e, x + begin, 4 * (end - begin));
        e += end - begin;
      }
      return;
    }
    if (r == 1 && two) {
      const float* sum = sums(reduced, b.p_elements + b.exact_elements);
      b.p.assign(sum, sum + b.p_elements);
      b.exact_sum.assign(sum + b.p_elements, sum + b.p_elements + b.exact_elements);
      float* v = vector(next, b.q_elements);
      if (granule_ > 1) std::memset(v, 0, 4 * b.q_elements);
      for (const Segment& g : b.segments) {
        psgd::orthogonalize(b.p.data() + g.p_at, g.rows, rank_);
        psgd::multiply_transposed(b.m.data() + g.offset, g.rows, g.cols, b.p.data() + g.p_at, rank_, v + g.q_at,
                                  pool());
      }
      if (error_feedback_) b.q_local.assign(v, v + b.q_elements);  // this rank's own share of the sum
      return;
    }
    // The last round: out = P Q^T for the compressed tensors, the exact sums for the rest.
    if (!out) fail(GW_ERR_INVALID_ARGUMENT, "powersgd: the last round needs out");
    check_tensor(*out, 1u << GW_DTYPE_F32, "output");
    if (out->count != in.count) fail(GW_ERR_INVALID_ARGUMENT, "powersgd: out and in differ in count");
    if (two) {
      const float* q = sums(reduced, b.q_elements);
      b.q.assign(q, q + b.q_elements);
    } else {
      const float* sum = sums(reduced, b.exact_elements);
      b.exact_sum.assign(sum, sum + b.exact_elements);
    }
    auto* y = static_cast<float*>(out->data);
    const float share = 1.0f / float(ctx.world_size ? ctx.world_size : 1);
    // The exact elements' residuals stay zero; the compressed tensors' are overwritten below.
    if (error_feedback_ && b.residual.size() != in.count) b.residual.assign(in.count, 0.0f);
    for (const Segment& g : b.segments) {
      psgd::reconstruct(b.p.data() + g.p_at, b.q.data() + g.q_at, g.rows, g.cols, rank_, y + g.offset, pool());
      if (error_feedback_) {
        // What this rank's own M lost: M - P Q_localᵀ, Q_local = Mᵀ P its share of the summed Q. The
        // residuals add up over the ranks to the sum's error, as M - out / ranks's do, without the
        // differences between the ranks' M, which a quantised factor format would round again.
        psgd::subtract_product(b.m.data() + g.offset, b.p.data() + g.p_at, b.q_local.data() + g.q_at, g.rows,
                               g.cols, rank_, b.residual.data() + g.offset, pool());
      }
    }
    const float* e = b.exact_sum.data();
    for (const auto& [begin, end] : b.exact) {
      std::memcpy(y + begin, e, 4 * (end - begin));
      e += end - begin;
    }
    // The next call starts from the average's Q (the sum over ranks would grow P by the rank count).
    for (float& v : b.q) v *= share;
  }

  // The device path: the same rounds as round() with in and out in device memory (the round's vectors,
  // reduced and next, in host or device memory), computed by cuda.cu's kernels in kernels.hpp's order, so
  // the bits are the host path's. Q (small) stays on the host between calls, as in the host path.
  void round_cuda(const gw_codec_context& ctx, uint32_t r, const gw_tensor& in, const gw_tensor* reduced,
                  gw_tensor* next, gw_tensor* out, Buffer& b) {
    const psgd::cuda::Ops& o = *static_cast<const psgd::cuda::Ops*>(cuda_);
    DeviceState& d = b.dev;
    void* const stream = in.stream;
    if (d.device != in.device) {  // arrays of another device are of no use here
      host_residual(b);
      d = DeviceState{};
    }
    d.device = in.device;
    cu(o.set_device(in.device, error_), "set_device");
    const auto* x = static_cast<const float*>(in.data);
    const bool last = !next;
    if (last) {
      if (!out) fail(GW_ERR_INVALID_ARGUMENT, "powersgd: the last round needs out");
      check_tensor(*out, 1u << GW_DTYPE_F32, "output");
      if (out->memory != GW_MEMORY_CUDA || out->device != in.device)
        fail(GW_ERR_INVALID_ARGUMENT, "powersgd: in is on CUDA device " + std::to_string(in.device) +
                                          ", out is not; pass both on the same device");
      if (out->count != in.count) fail(GW_ERR_INVALID_ARGUMENT, "powersgd: out and in differ in count");
    }
    if (ctx.step < start_step_) {
      if (r == 0) cu(o.copy(vector(next, in.count), x, in.count, stream, error_), "copy");
      else cu(o.copy(static_cast<float*>(out->data), sums(reduced, in.count), in.count, stream, error_), "copy");
      return;
    }
    const bool two = !b.segments.empty();
    if (r == 0) {
      ensure(d.m, in.count);
      if (error_feedback_ && !d.residual_live && b.residual.size() == in.count) {
        ensure(d.residual, in.count);  // a residual loaded from a checkpoint or left by a host call
        cu(o.copy(d.residual.ptr, b.residual.data(), in.count, stream, error_), "copy");
        d.residual_live = true;
      }
      const bool add = error_feedback_ && d.residual_live && d.residual.n == in.count;
      cu(o.add(x, add ? d.residual.ptr : nullptr, d.m.ptr, in.count, stream, error_), "add");
      first_q(ctx, b);
      ensure(d.q, b.q_elements);
      cu(o.copy(d.q.ptr, b.q.data(), b.q_elements, stream, error_), "copy");
      const uint64_t n = b.p_elements + b.exact_elements;
      ensure(d.vec, n);
      cu(o.zero(d.vec.ptr, b.p_elements, stream, error_), "zero");
      for (const Segment& g : b.segments)
        cu(o.multiply(d.m.ptr + g.offset, g.rows, g.cols, d.q.ptr + g.q_at, rank_, d.vec.ptr + g.p_at, stream, error_),
           "multiply");
      float* e = d.vec.ptr + b.p_elements;
      for (const auto& [begin, end] : b.exact) {
        cu(o.copy(e, d.m.ptr + begin, end - begin, stream, error_), "copy");
        e += end - begin;
      }
      cu(o.copy(vector(next, n), d.vec.ptr, n, stream, error_), "copy");
      return;
    }
    if (r == 1 && two) {
      const float* sum = sums(reduced, b.p_elements + b.exact_elements);
      ensure(d.p, b.p_elements);
      cu(o.copy(d.p.ptr, sum, b.p_elements, stream, error_), "copy");
      b.exact_sum.resize(b.exact_elements);
      cu(o.copy(b.exact_sum.data(), sum + b.p_elements, b.exact_elements, stream, error_), "copy");
      ensure(d.q_local, b.q_elements);
      cu(o.zero(d.q_local.ptr, b.q_elements, stream, error_), "zero");
      for (const Segment& g : b.segments) {
        cu(o.orthogonalize(d.p.ptr + g.p_at, g.rows, rank_, stream, error_), "orthogonalize");
        cu(o.multiply_transposed(d.m.ptr + g.offset, g.rows, g.cols, d.p.ptr + g.p_at, rank_, d.q_local.ptr + g.q_at,
                                 stream, error_),
           "multiply_transposed");
      }
      cu(o.copy(vector(next, b.q_elements), d.q_local.ptr, b.q_elements, stream, error_), "copy");
      return;
    }
    if (two) {
      b.q.resize(b.q_elements);
      cu(o.copy(b.q.data(), sums(reduced, b.q_elements), b.q_elements, stream, error_), "copy");
      cu(o.copy(d.q.ptr, b.q.data(), b.q_elements, stream, error_), "copy");
    } else {
      b.exact_sum.resize(b.exact_elements);
      cu(o.copy(b.exact_sum.data(), sums(reduced, b.exact_elements), b.exact_elements, stream, error_), "copy");
    }
    auto* y = static_cast<float*>(out->data);
    if (error_feedback_ && !(d.residual_live && d.residual.n == in.count)) {
      ensure(d.residual, in.count);  // the exact elements' residuals stay zero
      cu(o.zero(d.residual.ptr, in.count, stream, error_), "zero");
      d.residual_live = true;
    }
    for (const Segment& g : b.segments) {
      cu(o.product(nullptr, d.p.ptr + g.p_at, d.q.ptr + g.q_at, g.rows, g.cols, rank_, y + g.offset, stream, error_),
         "product");
      if (error_feedback_)
        cu(o.product(d.m.ptr + g.offset, d.p.ptr + g.p_at, d.q_local.ptr + g.q_at, g.rows, g.cols, rank_,
                     d.residual.ptr + g.offset, stream, error_),
           "product");
    }
    const float* e = b.exact_sum.data();
    for (const auto& [begin, end] : b.exact) {
      cu(o.copy(y + begin, e, end - begin, stream, error_), "copy");
      e += end - begin;
    }
    cu(o.synchronize(stream, error_), "synchronize");  // out is complete when the round returns
    if (error_feedback_) b.residual.clear();  // on the device now
    const float share = 1.0f / float(ctx.world_size ? ctx.world_size : 1);
    for (float& v : b.q) v *= share;
  }

  std::vector<unsigned char> save() {
    for (auto& [id, b] : buffers_) host_residual(b);
    std::vector<unsigned char> out;
    put_u64(out, 1);  // this blob's version
    put_u64(out, rank_);
    put_u64(out, buffers_.size());
    for (const auto& [id, b] : buffers_) {
      put_u64(out, id);
      put_u64(out, b.count);
      put_u64(out, b.shapes.size());
      for (const gw_tensor_shape& s : b.shapes) put_u64(out, s.offset), put_u64(out, s.rows), put_u64(out, s.cols);
      put_u64(out, b.q_ready ? 1 : 0);
      put_f32s(out, b.q_ready ? b.q : std::vector<float>{});
      put_f32s(out, b.residual);
    }
    return out;
  }

  void load(const unsigned char* data, uint64_t size) {
    Reader r{data, data + size};
    if (r.u64() != 1) fail(GW_ERR_VERSION, "powersgd state of another version; this powersgd reads version 1");
    const uint64_t rank = r.u64();
    if (rank != rank_)
      fail(GW_ERR_MISMATCH, "the powersgd state was saved with rank " + std::to_string(rank) + ", this codec has rank " +
                                std::to_string(rank_) + "; set [codec.powersgd] rank as before");
    std::map<uint64_t, Buffer> loaded;
    const uint64_t n = r.u64();
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t id = r.u64();
      gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
      const uint64_t count = r.u64();
      const uint64_t num_shapes = r.u64();
      if (num_shapes > uint64_t(r.end - r.p) / 24) fail(GW_ERR_CORRUPT, "powersgd state is truncated");
      std::vector<gw_tensor_shape> shapes(num_shapes);
      for (auto& s : shapes) s.offset = r.u64(), s.rows = r.u64(), s.cols = r.u64();
      ctx.shapes = shapes.data();
      ctx.num_shapes = uint32_t(shapes.size());
      Buffer b = layout(ctx, count);
      b.q_ready = r.u64() != 0;
      b.q = r.f32s(b.q_ready ? b.q_elements : 0, false);
      b.residual = r.f32s(count, true);
      loaded.emplace(id, std::move(b));
    }
    if (r.p != r.end) fail(GW_ERR_CORRUPT, "powersgd state has bytes after its last buffer");
    buffers_ = std::move(loaded);
  }

 private:
  static float* vector(gw_tensor* t, uint64_t n) {
    if (!t || t->count != n || (n > 0 && !t->data))
      fail(GW_ERR_INVALID_ARGUMENT, "powersgd: the round's vector is not the planned " + std::to_string(n) + " elements");
    return static_cast<float*>(t->data);
  }
  static const float* sums(const gw_tensor* t, uint64_t n) {
    if (!t || t->count != n || (n > 0 && !t->data))
      fail(GW_ERR_INVALID_ARGUMENT, "powersgd: the reduced vector is not the planned " + std::to_string(n) + " elements");
    return static_cast<const float*>(t->data);
  }
  static void copy_out(const float* x, uint64_t count, gw_tensor* next) {
    std::memcpy(vector(next, count), x, 4 * count);
  }

  bool compresses(uint64_t rows, uint64_t cols) const {
    const uint64_t n = rows * cols;
    return rows > rank_ && cols > rank_ && n >= min_elements_ &&
           double((rows + cols) * rank_) * min_compression_rate_ < double(n);
  }

  // The layout of a buffer of `count` elements with ctx's shapes: the compressed tensors and the rest.
  Buffer layout(const gw_codec_context& ctx, uint64_t count) const {
    Buffer b;
    b.count = count;
    if (ctx.num_shapes > 0 && !ctx.shapes) fail(GW_ERR_INVALID_ARGUMENT, "powersgd: num_shapes > 0 with shapes NULL");
    b.shapes.assign(ctx.shapes, ctx.shapes + ctx.num_shapes);
    uint64_t at = 0;
    for (const gw_tensor_shape& s : b.shapes) {
      if (s.rows == 0 || s.cols == 0 || s.cols > count / s.rows || s.offset < at || s.offset > count - s.rows * s.cols)
        fail(GW_ERR_INVALID_ARGUMENT, "powersgd: shape at offset " + std::to_string(s.offset) + " (" +
                                          std::to_string(s.rows) + " x " + std::to_string(s.cols) +
                                          ") does not fit a buffer of " + std::to_string(count) +
                                          " elements after the shapes before it");
      if (!compresses(s.rows, s.cols)) continue;
      if (s.offset > at) b.exact.emplace_back(at, s.offset);
      Segment g;
      g.offset = s.offset;
      g.rows = s.rows;
      g.cols = s.cols;
      g.p_at = b.p_elements;
      g.q_at = b.q_elements;
      b.p_elements = align(b.p_elements + s.rows * rank_);
      b.q_elements = align(b.q_elements + s.cols * rank_);
      b.segments.push_back(g);
      at = s.offset + s.rows * s.cols;
    }
    if (at < count) b.exact.emplace_back(at, count);
    for (const auto& [begin, end] : b.exact) b.exact_elements += end - begin;
    return b;
  }

  uint64_t align(uint64_t n) const { return (n + granule_ - 1) / granule_ * granule_; }

  static bool same(const std::vector<gw_tensor_shape>& a, const gw_codec_context& ctx) {
    if (a.size() != ctx.num_shapes) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].offset != ctx.shapes[i].offset || a[i].rows != ctx.shapes[i].rows || a[i].cols != ctx.shapes[i].cols)
        return false;
    return true;
  }

  // The buffer's state; a new layout (another count or other shapes) starts it afresh.
  Buffer& buffer(const gw_codec_context& ctx, uint64_t count) {
    auto it = buffers_.find(ctx.buffer_id);
    if (it != buffers_.end() && it->second.count == count && same(it->second.shapes, ctx)) return it->second;
    Buffer b = layout(ctx, count);
    return buffers_[ctx.buffer_id] = std::move(b);
  }

  // A first Q (random normal, orthogonalised; every rank draws the same from the seed), or a fresh one at
  // every call without warm start.
  void first_q(const gw_codec_context& ctx, Buffer& b) {
    if (b.q_ready && warm_start_) return;
    b.q.resize(b.q_elements);
    for (size_t s = 0; s < b.segments.size(); ++s) {
      const Segment& g = b.segments[s];
      fill_normal(b.q.data() + g.q_at, g.cols * rank_,
                  ctx.seed ^ (uint64_t(s) * 0xd1b54a32d192ed03ull) ^ ctx.step * uint64_t(!warm_start_));
      psgd::orthogonalize(b.q.data() + g.q_at, g.cols, rank_);
    }
    b.q_ready = true;
  }

  // The residual in b.residual, copied back from the device if a device call left it there.
  void host_residual(Buffer& b) {
    DeviceState& d = b.dev;
    if (!d.residual_live) return;
    const auto& o = *static_cast<const psgd::cuda::Ops*>(cuda_);
    cu(o.set_device(d.device, error_), "set_device");
    b.residual.resize(d.residual.n);
    cu(o.copy(b.residual.data(), d.residual.ptr, d.residual.n, nullptr, error_), "copy");
    d.residual_live = false;
  }

  void ensure(DeviceArray& a, uint64_t n) {
    if (a.ptr && a.n == n) return;
    a = DeviceArray{};
    a.ops = static_cast<const psgd::cuda::Ops*>(cuda_);
    cu(a.ops->alloc(&a.ptr, n, error_), "alloc");
    a.n = n;
  }

  void cu(int rc, const char* what) const {
    if (rc != 0) gwc::fail_cuda(*this, what, rc, error_);
  }

  // The products' threads, started on the first product (none for threads = 1).
  Pool* pool() {
    if (!pool_) pool_ = std::make_unique<Pool>(threads_);
    return pool_.get();
  }

  uint32_t rank_ = 4;
  unsigned threads_ = 1;
  std::unique_ptr<Pool> pool_;
  const void* cuda_ = GW_CODEC_CUDA_OPS(psgd::cuda::ops());  // cuda.cu's kernels, NULL without CUDA
  mutable char error_[128] = {};
  double min_compression_rate_ = 2;
  uint64_t min_elements_ = 0;
  bool error_feedback_ = true;
  bool warm_start_ = true;
  uint64_t start_step_ = 0;
  const char* wire_ = "none";
  uint64_t granule_ = 1;
  std::map<uint64_t, Buffer> buffers_;
};

// The context as this plugin's version of the struct: members past the host's struct_size are absent.
gw_codec_context context_of(const gw_codec_context* ctx) {
  gw_codec_context c = gwc::context_or_default(ctx);
  if (ctx && GW_STRUCT_HAS(ctx, gw_codec_context, num_shapes)) {
    c.buffer_id = ctx->buffer_id;
    c.shapes = ctx->shapes;
    c.num_shapes = ctx->num_shapes;
  }
  return c;
}

Codec* self(void* codec) { return static_cast<Codec*>(static_cast<gwc::CodecBase*>(codec)); }

gw_status vt_round_plan(void* codec, const gw_codec_context* ctx, uint64_t count, gw_codec_round_plan* plan) {
  Codec* c = self(codec);
  return gwc::guard(c->host(), [&] {
    if (!plan || !GW_STRUCT_HAS(plan, gw_codec_round_plan, wire_codec))
      fail(GW_ERR_INVALID_ARGUMENT, "powersgd: round_plan needs a gw_codec_round_plan of ABI 1.4");
    c->round_plan(context_of(ctx), count, plan);
  });
}

gw_status vt_round(void* codec, const gw_codec_context* ctx, uint32_t r, const gw_tensor* in,
                   const gw_tensor* reduced, gw_tensor* next, gw_tensor* out) {
  Codec* c = self(codec);
  return gwc::guard(c->host(), [&] {
    if (!in) fail(GW_ERR_INVALID_ARGUMENT, "powersgd: round without input");
    if (r > 0 && !reduced) fail(GW_ERR_INVALID_ARGUMENT, "powersgd: round " + std::to_string(r) + " without the sum");
    c->round(context_of(ctx), r, *in, reduced, next, out);
  });
}

gw_status vt_save_state(void* codec, void* buf, uint64_t capacity, uint64_t* size) {
  Codec* c = self(codec);
  return gwc::guard(c->host(), [&] {
    if (!size) fail(GW_ERR_INVALID_ARGUMENT, "powersgd: save_state without size");
    const std::vector<unsigned char> blob = c->save();
    *size = blob.size();
    if (!buf) return;
    if (capacity < blob.size()) fail(GW_ERR_BUFFER_TOO_SMALL, "powersgd: the state needs " + std::to_string(blob.size()) + " bytes");
    std::memcpy(buf, blob.data(), blob.size());
  });
}

gw_status vt_load_state(void* codec, const void* buf, uint64_t size) {
  Codec* c = self(codec);
  return gwc::guard(c->host(), [&] {
    if (size > 0 && !buf) fail(GW_ERR_INVALID_ARGUMENT, "powersgd: load_state without data");
    c->load(static_cast<const unsigned char*>(buf), size);
  });
}

constexpr gw_codec_vtable make_vtable() {
  gw_codec_vtable v = gwc::make_codec_vtable<Codec>();
  v.round_plan = &vt_round_plan;
  v.round = &vt_round;
  v.save_state = &vt_save_state;
  v.load_state = &vt_load_state;
  return v;
}

constexpr gw_config_key kKeys[] = {
    {sizeof(gw_config_key), "rank", GW_CONFIG_INT, "4",
     "Rank r of the approximation P Q^T of each matrix (PyTorch's matrix_approximation_rank).", 1.0, 1024.0, nullptr},
    {sizeof(gw_config_key), "min_compression_rate", GW_CONFIG_FLOAT, "2.0",
     "A rows x cols tensor is compressed only when (rows + cols) r times this is below rows x cols; others go exactly.",
     0.0, 1e9, nullptr},
    {sizeof(gw_config_key), "min_elements", GW_CONFIG_INT, "0",
     "Tensors with fewer elements go exactly (uncompressed).", 0.0, 9.0e15, nullptr},
    {sizeof(gw_config_key), "residual_feedback", GW_CONFIG_BOOL, "true",
     "Add what the approximation dropped to the tensor's next input (kept per buffer, saved in checkpoints).", 1.0,
     0.0, nullptr},
    {sizeof(gw_config_key), "warm_start", GW_CONFIG_BOOL, "true",
     "Start each call's power iteration from the last call's Q (else from a fresh random Q).", 1.0, 0.0, nullptr},
    {sizeof(gw_config_key), "start_step", GW_CONFIG_INT, "0",
     "Calls with step below this are exact allreduces (PyTorch's start_powerSGD_iter).", 0.0, 9.0e15, nullptr},
    {sizeof(gw_config_key), "threads", GW_CONFIG_INT, "0",
     "Threads for the products of a large tensor (0: the cores the process may use shared by the ranks of its "
     "host, as GW_LOCAL_SIZE or LOCAL_WORLD_SIZE count them: at least 1 each). The result is the same bits "
     "whatever the count.",
     0.0, 64.0, nullptr},
    {sizeof(gw_config_key), "factor_format", GW_CONFIG_STRING, "\"f32\"",
     "How P and Q travel: f32 (exact sums), fp16 or int8 (through that codec's compressed allreduce).", 1.0, 0.0,
     "f32|fp16|int8"},
};

constexpr gw_codec_vtable kVtable = make_vtable();
constexpr gw_component kComponents[] = {
    {sizeof(gw_component), GW_COMPONENT_CODEC, "powersgd",
     "PowerSGD: each matrix as a rank-r product P Q^T, reduced in two rounds with warm start and error feedback.",
     kKeys, static_cast<uint32_t>(std::size(kKeys)), &kVtable},
};
constexpr gw_plugin_descriptor kDescriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "powersgd", "1.0.0",
    "PowerSGD low-rank codec (codec rounds, ABI 1.4)", nullptr, nullptr, kComponents,
    static_cast<uint32_t>(std::size(kComponents)), nullptr};

}  // namespace

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  // The rounds need a host of ABI 1.4 (an older one would call encode, which refuses).
  return host_abi_major == GW_ABI_VERSION_MAJOR && host_abi_minor >= 4 ? &kDescriptor : nullptr;
}
