// The codec checks of `gradwire conformance`: round trips for every declared dtype, determinism,
// GW_DECODE_ACCUMULATE, max_encoded_size, hostile bodies against buffers that end at an inaccessible
// page, and a compressed allreduce on 3 ranks that must end bit-identical.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <random>

#include "conformance/conformance.hpp"

namespace gwcli::conformance {
namespace {

// Memory whose last usable byte is followed by an inaccessible page: reading or writing past the end
// crashes the rank process, which the parent reports. The start is 8-byte aligned, so an overrun of
// fewer than 8 bytes can go unnoticed.
class Guarded {
 public:
  explicit Guarded(uint64_t bytes) {
    const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
    span_ = ((bytes + page - 1) / page + 1) * page;
    base_ = static_cast<unsigned char*>(mmap(nullptr, span_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) throw std::bad_alloc();
    mprotect(base_ + span_ - page, page, PROT_NONE);
    data_ = base_ + ((span_ - page - bytes) & ~uint64_t{7});
    bytes_ = bytes;
  }
  ~Guarded() { munmap(base_, span_); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  unsigned char* data() { return data_; }
  uint64_t size() const { return bytes_; }

 private:
  unsigned char* base_ = nullptr;
  unsigned char* data_ = nullptr;
  uint64_t span_ = 0, bytes_ = 0;
};

uint32_t dtype_bytes(gw_dtype d) {
  switch (d) {
    case GW_DTYPE_F32: return 4;
    case GW_DTYPE_F64: return 8;
    case GW_DTYPE_F16:
    case GW_DTYPE_BF16: return 2;
    default: return 0;
  }
}

uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const int32_t e = int32_t((x >> 23) & 0xff) - 127 + 15;
  if (e <= 0) return uint16_t(sign);
  if (e >= 31) return uint16_t(sign | 0x7bff);
  return uint16_t(sign | (uint32_t(e) << 10) | ((x >> 13) & 0x3ff));
}

// Values of `dtype` from normal samples (finite, mixed signs, some zeros).
void make_values(gw_dtype dtype, uint64_t count, uint64_t seed, unsigned char* out) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist;
  for (uint64_t i = 0; i < count; ++i) {
    const float v = i % 97 == 0 ? 0.0f : dist(rng);
    if (dtype == GW_DTYPE_F32) std::memcpy(out + 4 * i, &v, 4);
    if (dtype == GW_DTYPE_F64) {
      const double d = v;
      std::memcpy(out + 8 * i, &d, 8);
    }
    if (dtype == GW_DTYPE_F16) {
      const uint16_t h = to_half(v);
      std::memcpy(out + 2 * i, &h, 2);
    }
    if (dtype == GW_DTYPE_BF16) {
      uint32_t x;
      std::memcpy(&x, &v, 4);
      const uint16_t b = uint16_t(x >> 16);
      std::memcpy(out + 2 * i, &b, 2);
    }
  }
}

bool all_finite(gw_dtype dtype, uint64_t count, const unsigned char* p) {
  for (uint64_t i = 0; i < count; ++i) {
    if (dtype == GW_DTYPE_F32) {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      if (!std::isfinite(v)) return false;
    } else if (dtype == GW_DTYPE_F64) {
      double v;
      std::memcpy(&v, p + 8 * i, 8);
      if (!std::isfinite(v)) return false;
    } else if (dtype == GW_DTYPE_F16) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      if ((h & 0x7c00) == 0x7c00) return false;
    } else if (dtype == GW_DTYPE_BF16) {
      uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      if ((b & 0x7f80) == 0x7f80) return false;
    }
  }
  return true;
}

struct Codec {
  const gw_codec_vtable* v = nullptr;
  void* c = nullptr;
  gw_codec_properties props = GW_CODEC_PROPERTIES_INIT;
  std::string why;

  gw_codec_context ctx(uint64_t seed, uint64_t step, std::vector<unsigned char>& workspace, uint64_t ws) {
    gw_codec_context x = GW_CODEC_CONTEXT_INIT;
    x.seed = seed;
    x.step = step;
    x.rank = 0;
    x.world_size = 1;
    workspace.assign(ws, 0);
    x.workspace = ws ? workspace.data() : nullptr;
    x.workspace_bytes = ws;
    return x;
  }
  // Encodes `count` values of `dtype` (from `values`) into a guarded body of exactly max_encoded_size.
  // Returns the body bytes (copied out) or sets why.
  bool encode(gw_dtype dtype, uint64_t count, const unsigned char* values, uint64_t seed, uint64_t step,
              std::vector<unsigned char>& body) {
    uint64_t bound = 0, ws = 0;
    clear_error();
    gw_status st = v->max_encoded_size(c, dtype, count, &bound, &ws);
    if (st != GW_OK) {
      why = std::string("max_encoded_size returned ") + gw_status_string(st) + ": " + take_error();
      return false;
    }
    Guarded out(bound);
    Guarded in(count * dtype_bytes(dtype));
    if (count) std::memcpy(in.data(), values, count * dtype_bytes(dtype));
    gw_tensor t = GW_TENSOR_INIT;
    t.dtype = dtype;
    t.data = in.data();
    t.count = count;
    std::vector<unsigned char> workspace;
    gw_codec_context x = ctx(seed, step, workspace, ws);
    uint64_t size = ~uint64_t{0};
    clear_error();
    st = v->encode(c, &x, &t, out.data(), bound, &size);
    if (st != GW_OK) {
      why = std::string("encode returned ") + gw_status_string(st) + ": " + take_error();
      return false;
    }
    if (size > bound) {
      why = "encode wrote " + std::to_string(size) + " bytes, more than the " + std::to_string(bound) +
            " max_encoded_size declared";
      return false;
    }
    body.assign(out.data(), out.data() + size);
    return true;
  }
  // Decodes a body (placed in a guarded buffer of exactly its size) into a guarded output.
  gw_status decode(gw_dtype dtype, uint64_t count, const std::vector<unsigned char>& body, uint64_t body_size,
                   unsigned char* result, uint32_t flags, const unsigned char* initial = nullptr) {
    Guarded in(body_size);
    std::memcpy(in.data(), body.data(), std::min<uint64_t>(body_size, body.size()));
    Guarded out(count * dtype_bytes(dtype));
    if (initial && count) std::memcpy(out.data(), initial, count * dtype_bytes(dtype));
    else if (count) std::memset(out.data(), 0, count * dtype_bytes(dtype));
    gw_tensor t = GW_TENSOR_INIT;
    t.dtype = dtype;
    t.data = out.data();
    t.count = count;
    uint64_t bound = 0, ws = 0;
    v->max_encoded_size(c, dtype, count, &bound, &ws);
    std::vector<unsigned char> workspace;
    gw_codec_context x = ctx(7, 3, workspace, ws);
    clear_error();
    const gw_status st = v->decode(c, &x, in.data(), body_size, &t, flags);
    if (st != GW_OK) why = take_error();
    if (result && count) std::memcpy(result, out.data(), count * dtype_bytes(dtype));
    return st;
  }
};

const char* dtype_label(gw_dtype d) { return gw_dtype_name(d) ? gw_dtype_name(d) : "?"; }

// The shapes the checks of codecs of rounds pass: a 200 x 200 matrix, a vector of 3, a 60 x 1000 matrix
// (the 100003 elements of the allreduce check).
const gw_tensor_shape kRoundShapes[] = {{0, 200, 200}, {40000 + 3, 60, 1000}};
constexpr uint64_t kRoundCount = 40000 + 3 + 60000;

bool has_rounds(const gw_codec_vtable* v) {
  return GW_STRUCT_HAS(v, gw_codec_vtable, round_plan) && v->round_plan != nullptr;
}

// One call of a codec of rounds on one rank (every sum is the rank's own vector): out, or why it failed.
bool run_rounds(const gw_codec_vtable* v, void* c, const std::vector<float>& in, uint64_t step, std::vector<float>& out,
                std::string& why) {
  gw_codec_context x = GW_CODEC_CONTEXT_INIT;
  x.seed = 3;
  x.step = step;
  x.buffer_id = 1;
  x.shapes = kRoundShapes;
  x.num_shapes = 2;
  gw_codec_round_plan plan = GW_CODEC_ROUND_PLAN_INIT;
  clear_error();
  gw_status st = v->round_plan(c, &x, in.size(), &plan);
  if (st != GW_OK) return why = std::string("round_plan returned ") + gw_status_string(st) + ": " + take_error(), false;
  if (plan.rounds < 1 || plan.rounds > GW_CODEC_MAX_ROUNDS)
    return why = "round_plan planned " + std::to_string(plan.rounds) + " rounds (1 to 8 allowed)", false;
  gw_tensor input = GW_TENSOR_INIT;
  input.data = const_cast<float*>(in.data());
  input.count = in.size();
  out.assign(in.size(), 0.0f);
  std::vector<float> reduced, next;
  for (uint32_t r = 0; r <= plan.rounds; ++r) {
    const bool last = r == plan.rounds;
    gw_tensor sum = GW_TENSOR_INIT, vec = GW_TENSOR_INIT, result = GW_TENSOR_INIT;
    sum.data = reduced.data();
    sum.count = reduced.size();
    if (!last) {
      next.assign(plan.elements[r], 0.0f);
      vec.data = next.data();
      vec.count = next.size();
    }
    result.data = out.data();
    result.count = out.size();
    clear_error();
    st = v->round(c, &x, r, &input, r ? &sum : nullptr, last ? nullptr : &vec, last ? &result : nullptr);
    if (st != GW_OK)
      return why = "round " + std::to_string(r) + " returned " + gw_status_string(st) + ": " + take_error(), false;
    std::swap(reduced, next);
  }
  for (float f : out)
    if (!std::isfinite(f)) return why = "a call on finite values produced a NaN or infinity", false;
  return true;
}

// Codecs of rounds (ABI 1.4): a call on one rank gives finite values, two fresh instances give the same
// bits, the saved state continues bit for bit in a fresh instance, and damaged state is refused or
// survived without access outside the buffer.
void round_checks(Plugin& plugin, const gw_component& comp, RankLink& link, Codec& k) {
  const std::string prefix = std::string("codec.") + comp.name + ".rounds.";
  const auto fresh = [&](void** c) {
    ConfigView* cfg = make_config(comp);
    const gw_status st = k.v->create(plugin.state, host(), as_config(cfg), c);
    free_config(cfg);
    return st == GW_OK && *c != nullptr;
  };
  std::vector<float> in(kRoundCount), a, b, c2, d;
  make_values(GW_DTYPE_F32, kRoundCount, 21, reinterpret_cast<unsigned char*>(in.data()));
  std::string why;
  run_rounds(k.v, k.c, in, 0, a, why);
  link.report(prefix + "call", why.empty(), why);
  if (!why.empty()) return;
  void* other = nullptr;
  if (!fresh(&other)) why = "a second instance could not be created";
  else if (run_rounds(k.v, other, in, 0, b, why) && a != b) why = "two fresh instances gave different bits";
  link.report(prefix + "deterministic", why.empty(), why);
  if (other) k.v->destroy(other), other = nullptr;
  const bool state = GW_STRUCT_HAS(k.v, gw_codec_vtable, save_state) && k.v->save_state && k.v->load_state;
  if (!state) return;
  why.clear();
  uint64_t size = 0;
  std::vector<unsigned char> blob;
  if (k.v->save_state(k.c, nullptr, 0, &size) != GW_OK) why = "save_state (size) failed: " + take_error();
  blob.resize(size);
  if (why.empty() && k.v->save_state(k.c, blob.data(), blob.size(), &size) != GW_OK) why = "save_state failed: " + take_error();
  if (why.empty() && (!run_rounds(k.v, k.c, in, 1, c2, why) || !fresh(&other))) why += " (continuing)";
  if (why.empty() && k.v->load_state(other, blob.data(), size) != GW_OK) why = "load_state of a saved state failed: " + take_error();
  if (why.empty() && run_rounds(k.v, other, in, 1, d, why) && c2 != d)
    why = "the call after loading the saved state differs from the call after saving it";
  link.report(prefix + "state_round_trip", why.empty(), why);
  if (other) {
    // Damaged state: truncated or bit-flipped blobs in a guarded buffer; any status, no crash.
    std::mt19937_64 rng(5);
    for (int i = 0; i < 100 && size > 0; ++i) {
      std::vector<unsigned char> damaged(blob.begin(), blob.begin() + size);
      if (i % 2) damaged.resize(rng() % size);
      else damaged[rng() % size] ^= uint8_t(1u << (rng() % 8));
      Guarded g(damaged.size());
      if (!damaged.empty()) std::memcpy(g.data(), damaged.data(), damaged.size());
      k.v->load_state(other, g.data(), damaged.size());
    }
    link.report(prefix + "hostile_state", true, "100 truncated or bit-flipped states, no out-of-bounds access");
    k.v->destroy(other);
  }
}

void unit_checks(Plugin& plugin, const gw_component& comp, RankLink& link) {
  const std::string prefix = std::string("codec.") + comp.name + ".";
  Codec k;
  k.v = static_cast<const gw_codec_vtable*>(comp.vtable);
  if (!plugin.init()) {
    link.report(prefix + "create", false, "the plugin's init failed: " + take_error());
    return;
  }
  ConfigView* cfg = make_config(comp);
  clear_error();
  gw_status st = k.v->create(plugin.state, host(), as_config(cfg), &k.c);
  free_config(cfg);
  if (st != GW_OK || k.c == nullptr) {
    link.report(prefix + "create", false, std::string("create returned ") + gw_status_string(st) + ": " + take_error());
    return;
  }
  st = k.v->properties(k.c, &k.props);
  if (st != GW_OK) {
    link.report(prefix + "create", false, std::string("properties returned ") + gw_status_string(st));
    return;
  }
  std::vector<gw_dtype> dtypes;
  for (gw_dtype d : {GW_DTYPE_F32, GW_DTYPE_F16, GW_DTYPE_BF16, GW_DTYPE_F64})
    if (k.props.dtypes & (1u << d)) dtypes.push_back(d);
  link.report(prefix + "create", !dtypes.empty(),
              dtypes.empty() ? "properties declare no floating-point dtype (dtypes bits)" : "");
  if (dtypes.empty()) return;
  if (has_rounds(k.v)) {
    // Its allreduce is its rounds; encode and decode may refuse (docs/plugin-guide.md).
    round_checks(plugin, comp, link, k);
    k.v->destroy(k.c);
    plugin.fini();
    return;
  }
  const bool lossless = k.props.flags & GW_CODEC_LOSSLESS;

  // Round trips: every declared dtype, counts from 0 to 100003.
  for (gw_dtype d : dtypes) {
    std::string why;
    for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t{17}, uint64_t{4096}, uint64_t{100003}}) {
      std::vector<unsigned char> values(count * dtype_bytes(d) + 1), body, back(count * dtype_bytes(d) + 1);
      make_values(d, count, 11 + count, values.data());
      if (!k.encode(d, count, values.data(), 7, 3, body)) {
        why = std::to_string(count) + " elements: " + k.why;
        break;
      }
      st = k.decode(d, count, body, body.size(), back.data(), 0);
      if (st != GW_OK) {
        why = std::to_string(count) + " elements: decode returned " + gw_status_string(st) + ": " + k.why;
        break;
      }
      if (lossless && std::memcmp(values.data(), back.data(), count * dtype_bytes(d)) != 0) {
        why = std::to_string(count) + " elements: the codec declares GW_CODEC_LOSSLESS but the round trip changed bits";
        break;
      }
      if (!all_finite(d, count, back.data())) {
        why = std::to_string(count) + " elements: the round trip of finite values produced a NaN or infinity";
        break;
      }
    }
    link.report(prefix + "round_trip." + dtype_label(d), why.empty(), why);
  }

  // Determinism: the same input, seed and step give the same bytes.
  const gw_dtype d0 = dtypes.front();
  const uint64_t n = 4096;
  std::vector<unsigned char> values(n * dtype_bytes(d0)), a, b;
  make_values(d0, n, 5, values.data());
  {
    std::string why;
    if (!k.encode(d0, n, values.data(), 42, 9, a) || !k.encode(d0, n, values.data(), 42, 9, b)) why = k.why;
    else if (a != b) why = "two encodes of the same input with the same seed and step gave different bytes";
    link.report(prefix + "deterministic", why.empty(), why);
  }
  if (a.empty()) return;

  // GW_DECODE_ACCUMULATE adds to what is there (checked in f32 when declared).
  if (k.props.dtypes & (1u << GW_DTYPE_F32)) {
    std::vector<unsigned char> fv(n * 4), body, plain(n * 4), acc(n * 4), base(n * 4);
    make_values(GW_DTYPE_F32, n, 6, fv.data());
    make_values(GW_DTYPE_F32, n, 8, base.data());
    std::string why;
    if (!k.encode(GW_DTYPE_F32, n, fv.data(), 42, 9, body)) {
      why = k.why;
    } else if (k.decode(GW_DTYPE_F32, n, body, body.size(), plain.data(), 0) != GW_OK ||
               k.decode(GW_DTYPE_F32, n, body, body.size(), acc.data(), GW_DECODE_ACCUMULATE, base.data()) != GW_OK) {
      why = "decode failed: " + k.why;
    } else {
      for (uint64_t i = 0; i < n && why.empty(); ++i) {
        float p, q, y;
        std::memcpy(&p, plain.data() + 4 * i, 4);
        std::memcpy(&q, acc.data() + 4 * i, 4);
        std::memcpy(&y, base.data() + 4 * i, 4);
        if (std::fabs(q - (y + p)) > 1e-5f * (std::fabs(y) + std::fabs(p)) + 1e-6f)
          why = "element " + std::to_string(i) + ": decode with GW_DECODE_ACCUMULATE gave " + std::to_string(q) +
                ", expected what was there (" + std::to_string(y) + ") plus the decoded value (" + std::to_string(p) + ")";
      }
    }
    link.report(prefix + "decode_accumulate", why.empty(), why);
  }

  // Hostile bodies: truncated, extended, the wrong element count must be refused; bit flips and random
  // bytes may decode or be refused, but never read or write out of bounds (the guarded buffers).
  {
    std::string why;
    auto refused = [&](gw_status s) { return s == GW_ERR_CORRUPT || s == GW_ERR_MISMATCH; };
    std::vector<unsigned char> out(n * dtype_bytes(d0) + 8);
    std::vector<unsigned char> extended = a;
    extended.resize(a.size() + 64, 0x5a);
    struct Case {
      const char* what;
      uint64_t size;
      uint64_t count;
      const std::vector<unsigned char>* body;
    };
    const Case cases[] = {{"an empty body", 0, n, &a},
                          {"a body one byte short", a.size() - 1, n, &a},
                          {"half a body", a.size() / 2, n, &a},
                          {"a body one byte long", a.size() + 1, n, &extended},
                          {"a body 64 bytes long", a.size() + 64, n, &extended},
                          {"a body decoded into one element more", a.size(), n + 1, &a},
                          {"a body decoded into one element less", a.size(), n - 1, &a}};
    // Another element count must be refused when the body cannot be that count's: a dense codec whose
    // bound for it differs from the body's length. A sparse or shared-index body, or one whose length
    // rounds (one bit per element), can be valid for another count: that case must only be survived.
    const bool count_in_body = !(k.props.flags & (GW_CODEC_SPARSE | GW_CODEC_SHARED_INDICES));
    for (const Case& c : cases) {
      const gw_status s = k.decode(d0, c.count, *c.body, c.size, out.data(), 0);
      uint64_t other = 0, ws = 0;
      if (c.count != n && (!count_in_body || k.v->max_encoded_size(k.c, d0, c.count, &other, &ws) != GW_OK ||
                           other == a.size()))
        continue;
      if (!refused(s)) {
        why = std::string(c.what) + " was answered with " + gw_status_string(s) +
              "; the contract says GW_ERR_CORRUPT (or GW_ERR_MISMATCH)";
        break;
      }
    }
    link.report(prefix + "hostile_sizes", why.empty(), why);
    std::mt19937_64 rng(99);
    for (int i = 0; i < 300; ++i) {
      std::vector<unsigned char> flipped = a;
      flipped[rng() % flipped.size()] ^= uint8_t(1u << (rng() % 8));
      if (i % 3 == 0) flipped[rng() % flipped.size()] = uint8_t(rng());
      k.decode(d0, n, flipped, flipped.size(), out.data(), i % 2 ? GW_DECODE_ACCUMULATE : 0);
    }
    for (int i = 0; i < 100; ++i) {
      std::vector<unsigned char> junk(rng() % (a.size() + 16));
      for (auto& c : junk) c = uint8_t(rng());
      k.decode(d0, n, junk, junk.size(), out.data(), 0);
    }
    link.report(prefix + "hostile_bytes", true, "300 bit-flipped and 100 random bodies, no out-of-bounds access");
  }
  k.v->destroy(k.c);
  plugin.fini();
}

}  // namespace

std::vector<Check> check_codec(Plugin& plugin, const gw_component& c, const Options& o) {
  const std::string prefix = std::string("codec.") + c.name + ".";
  // The vtable's size and required members passed the loader's own checks (plugin.load).
  std::vector<Check> out;

  // One process: a crash (an out-of-bounds access hitting a guard page) is reported, not suffered.
  auto group = run_group(prefix + "unit", 1, 120 + o.timeout_s * 4,
                         [&](RankLink& link) { unit_checks(plugin, c, link); });
  out.insert(out.end(), group.begin(), group.end());

  // The runtime's compressed allreduce on 3 ranks over the default transport: bit-identical results.
  group = run_group(prefix + "allreduce", 3, 60 + o.timeout_s * 4, [&](RankLink& link) {
    std::string error;
    const std::string toml = "[runtime]\ntimeout_s = " + std::to_string(int(o.timeout_s)) + "\n";
    gw_runtime* rt = open_runtime_with(o.plugin_path, toml, error);
    if (rt == nullptr) {
      link.report(prefix + "compressed_allreduce", false, "gw_runtime_create: " + error);
      return;
    }
    gw_comm_options co = GW_COMM_OPTIONS_INIT;
    co.rank = link.rank();
    co.world_size = link.size();
    co.local_rank = link.rank();
    co.allgather = link_allgather;
    co.allgather_user = &link;
    co.timeout_s = o.timeout_s;
    gw_comm* comm = nullptr;
    gw_codec* codec = nullptr;
    gw_status st = gw_comm_create(rt, &co, &comm);
    if (st == GW_OK) st = gw_codec_create(rt, c.name, &codec);
    std::string why;
    if (st != GW_OK) why = std::string(gw_status_string(st)) + ": " + gw_last_error();
    if (why.empty()) {
      const uint64_t count = 100003;
      std::vector<float> in(count), result(count);
      make_values(GW_DTYPE_F32, count, 77 + link.rank(), reinterpret_cast<unsigned char*>(in.data()));
      gw_tensor ti = GW_TENSOR_INIT, to = GW_TENSOR_INIT;
      ti.data = in.data();
      ti.count = count;
      to.data = result.data();
      to.count = count;
      gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
      ctx.seed = 5;
      ctx.step = 1;
      if (has_rounds(static_cast<const gw_codec_vtable*>(c.vtable))) {
        // A codec of rounds gets tensor shapes (two matrices and vectors) inside the buffer.
        ctx.shapes = kRoundShapes;
        ctx.num_shapes = 2;
      }
      st = gw_allreduce_compressed(comm, codec, &ctx, &ti, &to, GW_REDUCE_AVG);
      if (st != GW_OK) {
        why = std::string("gw_allreduce_compressed: ") + gw_status_string(st) + ": " + gw_last_error();
      } else {
        std::string mine(reinterpret_cast<const char*>(result.data()), count * 4);
        std::vector<std::string> all;
        if (!link.allgather(mine, all)) why = "a rank is gone";
        for (uint32_t r = 0; r < all.size() && why.empty(); ++r)
          if (all[r] != mine) why = "ranks " + std::to_string(r) + " and " + std::to_string(link.rank()) +
                                    " ended with different bits";
      }
    }
    link.report(prefix + "compressed_allreduce", why.empty(), why.empty() ? "3 ranks, bit-identical" : why);
    if (codec) gw_codec_destroy(codec);
    if (comm) gw_comm_destroy(comm);
    gw_runtime_destroy(rt);
  });
  out.insert(out.end(), group.begin(), group.end());
  return out;
}

}  // namespace gwcli::conformance
