// One rank of the compressed-allreduce tests, started by `gradwire run -n N -- compressed_rank CASE`.
// For every codec and several sizes it checks that every rank ends bit-identical, that the result
// equals a serial emulation of the algorithm built from gw_codec_encode/decode (so the bits are the
// ones the documented algorithm gives), and that it lies within the codec's analytic error bound of
// the exact sum. Prints "OK rank r" at the end; the driver is sync_test.cpp.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "common.hpp"
#include "../support/half_oracle.hpp"

using namespace synctest;

namespace {

struct CodecCase {
  const char* name;
  const char* toml;  // its [codec.<name>] section
};

const CodecCase kCodecs[] = {
    {"none", ""},
    {"fp16", ""},
    {"fp16", "[codec.fp16]\nprediv = true\n"},
    {"bf16", ""},
    {"int8", ""},
    {"onebit", ""},
    {"topk", "[codec.topk]\nratio = 0.05\nselection = \"exact\"\n"},
    {"randomk", "[codec.randomk]\nratio = 0.1\n"},
    {"sparseq", "[codec.sparseq]\nratio = 0.05\nbits = 3\n"},
};

using Codec = PieceCodec;

struct Block {
  uint64_t offset, count;
};
std::vector<Block> even(uint64_t count, uint64_t n) {
  std::vector<Block> b;
  uint64_t off = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t c = count / n + (i < count % n ? 1 : 0);
    b.push_back({off, c});
    off += c;
  }
  return b;
}

// The documented algorithms, run serially on every rank's input, for buffers that fit in one pipelined
// piece per block. Returns what every rank must hold.
std::vector<float> emulate(const Codec& c, const std::vector<std::vector<float>>& x, gw_reduce_op op, uint64_t seed) {
  const int n = g_size;
  const uint64_t count = x[0].size();
  std::vector<float> out(count, 0.0f);
  const uint32_t flags = c.props.flags;
  if (flags & GW_CODEC_SPARSE) {
    // topk, sparseq: payloads decoded in rank order; randomk: the shared-coordinate values summed (the inputs
    // are small integers there, so the order of that sum does not matter) — decoding each payload in
    // rank order gives the same bits.
    for (int q = 0; q < n; ++q) c.decode(c.encode(x[q].data(), count, 0, seed), out.data(), count, q != 0);
  } else if (flags & GW_CODEC_SUMMABLE) {
    const auto blocks = even(count, n);
    for (int bi = 0; bi < n; ++bi) {
      const Block b = blocks[bi];
      if (b.count == 0) continue;
      // Block bi starts at rank bi + 1 and ends at its owner bi after n - 1 hops.
      std::vector<float> partial(x[(bi + 1) % n].begin() + b.offset, x[(bi + 1) % n].begin() + b.offset + b.count);
      for (int hop = 2; hop <= n; ++hop) {
        const int r = (bi + hop) % n;
        const auto payload = c.encode(partial.data(), b.count, b.offset, seed);
        std::vector<float> next(x[r].begin() + b.offset, x[r].begin() + b.offset + b.count);
        c.decode(payload, next.data(), b.count, true);
        partial = next;
      }
      if (op == GW_REDUCE_AVG)  // the owner averages before its one encoding
        for (float& v : partial) v /= float(n);
      c.decode(c.encode(partial.data(), b.count, b.offset, seed), out.data() + b.offset, b.count, false);
    }
  } else {
    const auto blocks = even(count, n);
    for (int bi = 0; bi < n; ++bi) {
      const Block b = blocks[bi];
      if (b.count == 0) continue;
      std::vector<float> sum(b.count, 0.0f);
      for (int q = 0; q < n; ++q) {
        if (q == bi) {
          for (uint64_t i = 0; i < b.count; ++i) sum[i] = q == 0 ? x[q][b.offset + i] : sum[i] + x[q][b.offset + i];
        } else {
          c.decode(c.encode(x[q].data() + b.offset, b.count, b.offset, seed), sum.data(), b.count, q != 0);
        }
      }
      if (op == GW_REDUCE_AVG)  // the owner averages before its one encoding
        for (float& v : sum) v /= float(n);
      c.decode(c.encode(sum.data(), b.count, b.offset, seed), out.data() + b.offset, b.count, false);
    }
  }
  if (op == GW_REDUCE_AVG && (flags & GW_CODEC_SPARSE))  // sparse: every rank divides after the last decode
    for (float& v : out) v /= float(n);
  return out;
}

// |result - exact| per element, from the codec's documented error (docs/wire-format.md), summed over
// every encoding an element passes through.
double bound(const std::string& codec, const std::vector<std::vector<float>>& x, const std::vector<double>& exact,
             uint64_t i, double max_in, double max_sum) {
  const int n = g_size;
  if (codec == "none") return std::ldexp(max_sum, -23);  // exact sums; only an average's division rounds
  if (codec == "fp16") return 2.0 * n * std::ldexp(max_sum + max_in, -11) + 1e-6;
  if (codec == "bf16") return 2.0 * n * std::ldexp(max_sum + max_in, -8) + 1e-6;
  if (codec == "int8") return (n * max_in + max_sum) / 254.0 * 1.001 + 1e-6;
  if (codec == "onebit") return 2.0 * n * max_in + 2.0 * max_sum;
  double dropped = 0;  // top-k / random-k: at most every rank's value at i is dropped
  for (int q = 0; q < n; ++q) dropped += std::fabs(x[q][i]);
  (void)exact;
  // sparseq: a kept value is off by at most half a step of its group, (max - min) / 2^bits <= max_in / 4.
  if (codec == "sparseq") return dropped + n * max_in / 4.0 + 1e-6;
  return dropped + 1e-6;
}

void test_codec(gw_comm* comm, gw_runtime* rt, const CodecCase& cc, uint64_t count, gw_reduce_op op, bool emulated) {
  const std::string what = std::string(cc.name) + (cc.toml[0] ? " (" + std::string(cc.toml) + ")" : "") + " count " +
                           std::to_string(count) + (op == GW_REDUCE_AVG ? " avg" : " sum");
  Codec c;
  check(gw_codec_create(rt, cc.name, &c.codec), what + ": gw_codec_create");
  check(gw_codec_get_properties(c.codec, &c.props), what + ": properties");
  const bool integers = std::string(cc.name) == "none" || std::string(cc.name) == "randomk";
  const uint64_t seed = 7;
  std::vector<std::vector<float>> x(g_size, std::vector<float>(count));
  for (int q = 0; q < g_size; ++q)
    for (uint64_t i = 0; i < count; ++i) x[q][i] = integers ? small_int(count, q, i) : uniform(count, q, i);
  std::vector<double> exact(count, 0.0);
  double max_in = 0, max_sum = 0;
  for (uint64_t i = 0; i < count; ++i) {
    for (int q = 0; q < g_size; ++q) {
      exact[i] += x[q][i];
      max_in = std::max(max_in, std::fabs(double(x[q][i])));
    }
    max_sum = std::max(max_sum, std::fabs(exact[i]));
  }

  std::vector<float> in = x[g_rank], out(count, -99.0f);
  gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
  ctx.seed = seed;
  gw_tensor ti = f32(in.data(), count), to = f32(out.data(), count);
  check(gw_allreduce_compressed(comm, c.codec, &ctx, &ti, &to, op), what);
  if (in != x[g_rank]) die(what + ": the input buffer was modified");
  check_identical(comm, out.data(), 4 * count, what);

  const double divisor = op == GW_REDUCE_AVG ? g_size : 1;
  for (uint64_t i = 0; i < count; ++i) {
    const double err = std::fabs(double(out[i]) - exact[i] / divisor);
    if (!(err <= bound(cc.name, x, exact, i, max_in, max_sum) / divisor))
      die(what + ": element " + std::to_string(i) + " = " + std::to_string(out[i]) + ", exact " +
          std::to_string(exact[i] / divisor) + ": outside the codec's bound");
  }
  if (c.props.flags & GW_CODEC_SPARSE && !(c.props.flags & GW_CODEC_SHARED_INDICES)) {
    // Gathered only while n payloads weigh at most twice the dense buffer; else a dense ring sums them.
    uint64_t payload = 0;
    check(gw_codec_max_encoded_size(c.codec, GW_DTYPE_F32, count, &payload), "max_encoded_size");
    emulated = emulated && payload * g_size <= 8 * count;
  }
  if (emulated) {
    const std::vector<float> expected = emulate(c, x, op, seed);
    for (uint64_t i = 0; i < count; ++i)
      if (std::memcmp(&out[i], &expected[i], 4) != 0)
        die(what + ": element " + std::to_string(i) + " = " + std::to_string(out[i]) + " but the algorithm gives " +
            std::to_string(expected[i]));
  }
  // In place gives the same bits.
  std::vector<float> inplace = x[g_rank];
  gw_tensor tp = f32(inplace.data(), count);
  check(gw_allreduce_compressed(comm, c.codec, &ctx, &tp, &tp, op), what + " in place");
  if (std::memcmp(inplace.data(), out.data(), 4 * count) != 0) die(what + ": in place differs from out of place");
  check(gw_codec_destroy(c.codec), "gw_codec_destroy");
}

}  // namespace

int main(int argc, char** argv) {
  init_rank_from_env();
  const std::string which = argc > 1 ? argv[1] : "all";
  // Small pieces so that large buffers go through the pipeline in many pieces.
  std::string toml = "[collectives]\npipeline_chunk_bytes = 16384\n";
  for (const CodecCase& cc : kCodecs) toml += cc.toml;
  gw_runtime* rt = make_runtime(toml);
  gw_comm* comm = make_comm(rt);

  if (which == "mismatch") {
    // The last rank compresses with another codec: every rank gets GW_ERR_MISMATCH, nobody hangs.
    gw_codec* codec = nullptr;
    check(gw_codec_create(rt, g_rank == g_size - 1 ? "bf16" : "fp16", &codec), "gw_codec_create");
    std::vector<float> buf(100000, 1.0f);
    gw_tensor t = f32(buf.data(), buf.size());
    expect_error(gw_allreduce_compressed(comm, codec, nullptr, &t, &t, GW_REDUCE_SUM), GW_ERR_MISMATCH,
                 "mismatched codecs");
  }
  if (which == "half") {
    // f16 and bf16 tensors are staged through f32: the result is the f32 algorithm's on the same
    // (exactly converted) values, rounded to the tensor's type once. Checked bit for bit for every codec.
    const auto to_bf16 = [](float f) {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    };
    const auto from_bf16 = [](uint16_t h) {
      const uint32_t u = uint32_t(h) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    };
    const auto to_f16 = [](float f) { return gwtest::half_from_float(f); };
    const auto from_f16 = [](uint16_t h) { return gwtest::float_from_half(h); };
    const uint64_t count = 20011;
    for (const CodecCase& cc : kCodecs) {
      for (gw_dtype dt : {GW_DTYPE_BF16, GW_DTYPE_F16}) {
        const bool bf = dt == GW_DTYPE_BF16;
        const std::string what = std::string(cc.name) + " " + gw_dtype_name(dt);
        std::vector<uint16_t> half(count);
        std::vector<float> exact(count);
        for (uint64_t i = 0; i < count; ++i) {
          const float v = uniform(11, g_rank, i);
          half[i] = bf ? to_bf16(v) : to_f16(v);
          exact[i] = bf ? from_bf16(half[i]) : from_f16(half[i]);
        }
        for (int pass = 0; pass < 2; ++pass) {  // the f32 run and the 16-bit run see the same step
          gw_codec* codec = nullptr;
          check(gw_codec_create(rt, cc.name, &codec), "gw_codec_create");
          gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
          ctx.seed = 5;
          if (pass == 0) {
            gw_tensor t = f32(exact.data(), count);
            check(gw_allreduce_compressed(comm, codec, &ctx, &t, &t, GW_REDUCE_AVG), what + " (f32 reference)");
          } else {
            gw_tensor t = f32(nullptr, count);
            t.dtype = dt;
            t.data = half.data();
            check(gw_allreduce_compressed(comm, codec, &ctx, &t, &t, GW_REDUCE_AVG), what);
          }
          check(gw_codec_destroy(codec), "gw_codec_destroy");
        }
        for (uint64_t i = 0; i < count; ++i) {
          const uint16_t want = bf ? to_bf16(exact[i]) : to_f16(exact[i]);
          if (half[i] != want)
            die(what + ": element " + std::to_string(i) + " is not the f32 result rounded once");
        }
        check_identical(comm, half.data(), 2 * count, what);
      }
    }
  } else if (which == "ef") {
    // Error feedback inside the collective (gw_allreduce_compressed_ef): over T steps the sum of the
    // averages it returned stays within a step's error of the exact sum, where the same codec without
    // error feedback drifts (inputs with a fixed part, so that the rounding errors repeat). Every rank
    // ends bit-identical, and the state saves and loads.
    const uint64_t count = 20011;  // several pipeline pieces per block
    const int steps = 100;
    for (const char* name : {"int8", "onebit", "topk", "sparseq"}) {
      double err_first = 0, err_half = 0, err_ef = 0, err_plain = 0;
      for (int with_ef = 0; with_ef < 2; ++with_ef) {
        gw_codec* codec = nullptr;
        check(gw_codec_create(rt, name, &codec), "gw_codec_create");
        gw_error_feedback* ef = nullptr;
        check(gw_error_feedback_create(codec, &ef), "gw_error_feedback_create");
        std::vector<double> got(count, 0.0), exact(count, 0.0);
        std::vector<float> x(count);
        for (int t = 0; t < steps; ++t) {
          for (uint64_t i = 0; i < count; ++i) {
            double avg = 0;
            for (int q = 0; q < g_size; ++q) {
              const float v = 0.5f * uniform(21, q, i) + 0.1f * uniform(22 + uint64_t(t), q, i);
              avg += v;
              if (q == g_rank) x[i] = v;
            }
            exact[i] += avg / g_size;
          }
          gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
          ctx.seed = 9;
          ctx.step = uint64_t(t);
          gw_tensor tx = f32(x.data(), count);
          const std::string what = std::string(name) + (with_ef ? " with" : " without") + " error feedback, step " +
                                   std::to_string(t);
          if (with_ef)
            check(gw_allreduce_compressed_ef(comm, ef, &ctx, &tx, &tx, GW_REDUCE_AVG), what);
          else
            check(gw_allreduce_compressed(comm, codec, &ctx, &tx, &tx, GW_REDUCE_AVG), what);
          check_identical(comm, x.data(), 4 * count, what);
          double err = 0;  // the root mean square of the summed averages' error
          for (uint64_t i = 0; i < count; ++i) {
            got[i] += x[i];
            err += (got[i] - exact[i]) * (got[i] - exact[i]);
          }
          err = std::sqrt(err / double(count));
          if (t == 0 && with_ef) err_first = err;
          if (t == steps / 2 - 1 && with_ef) err_half = err;
          if (t == steps - 1) (with_ef ? err_ef : err_plain) = err;
        }
        if (with_ef) {
          uint64_t size = 0;
          check(gw_error_feedback_state_size(ef, &size), "gw_error_feedback_state_size");
          std::vector<unsigned char> blob(size);
          check(gw_error_feedback_save(ef, blob.data(), blob.size(), &size), "gw_error_feedback_save");
          if (size < 4 * count) die(std::string(name) + ": the saved state holds less than one residual per element");
          check(gw_error_feedback_load(ef, blob.data(), size), "gw_error_feedback_load");
        }
        check(gw_error_feedback_destroy(ef), "gw_error_feedback_destroy");
        check(gw_codec_destroy(codec), "gw_codec_destroy");
      }
      std::printf("ef %s: rms error of the sum after 1 step %.4g, after %d steps %.4g with, %.4g without error feedback\n",
                  name, err_first, steps, err_ef, err_plain);
      // int8: both of its encodings (a rank's values, the owner's sum) are compensated, so the error
      // stays a step's. top-k and sparseq: a value waits until it is among the largest; the error saturates.
      // one bit: its residuals grow slowly (block scale), but far below the drift without.
      const std::string why = std::string(name) + ": with error feedback the rms error of the summed averages was " +
                              std::to_string(err_first) + " after 1 step, " + std::to_string(err_half) + " after " +
                              std::to_string(steps / 2) + ", " + std::to_string(err_ef) + " after " +
                              std::to_string(steps) + " (" + std::to_string(err_plain) + " without)";
      if (std::strcmp(name, "int8") == 0 && !(err_ef <= 1.5 * err_first)) die(why);
      if ((std::strcmp(name, "topk") == 0 || std::strcmp(name, "sparseq") == 0) && !(err_ef <= 1.2 * err_half))
        die(why);
      if (!(err_ef < 0.25 * err_plain)) die(why);
    }
    if (gw_allreduce_compressed_ef(comm, nullptr, nullptr, nullptr, nullptr, GW_REDUCE_SUM) != GW_ERR_INVALID_ARGUMENT)
      die("a NULL error feedback was not refused");
  } else if (which == "errors") {
    gw_codec* codec = nullptr;
    check(gw_codec_create(rt, "int8", &codec), "gw_codec_create");
    std::vector<double> d(10);
    gw_tensor t = GW_TENSOR_INIT;
    t.dtype = GW_DTYPE_F64;
    t.data = d.data();
    t.count = d.size();
    if (gw_allreduce_compressed(comm, codec, nullptr, &t, &t, GW_REDUCE_SUM) != GW_ERR_UNSUPPORTED ||
        std::string(gw_last_error()).find("f32") == std::string::npos)
      die("an f64 tensor was not refused with a message naming f32");
    std::vector<float> f(10);
    gw_tensor tf = f32(f.data(), f.size());
    if (gw_allreduce_compressed(comm, codec, nullptr, &tf, &tf, GW_REDUCE_MAX) != GW_ERR_UNSUPPORTED)
      die("op max was not refused");
    if (gw_allreduce_compressed(comm, nullptr, nullptr, &tf, &tf, GW_REDUCE_SUM) != GW_ERR_INVALID_ARGUMENT)
      die("a NULL codec was not refused");
    check(gw_codec_destroy(codec), "gw_codec_destroy");
  } else if (which != "half") {
    // Sizes: empty, one element, fewer elements than ranks, a prime, one piece per block (emulated bit
    // for bit), and many pipelined pieces.
    for (const CodecCase& cc : kCodecs) {
      if (which != "all" && which != cc.name) continue;
      for (uint64_t count : {uint64_t(0), uint64_t(1), uint64_t(3), uint64_t(1009), uint64_t(3001)})
        test_codec(comm, rt, cc, count, GW_REDUCE_SUM, count * 4 <= 16384);
      test_codec(comm, rt, cc, 1009, GW_REDUCE_AVG, true);
      test_codec(comm, rt, cc, 200003, GW_REDUCE_AVG, false);
    }
  }
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
