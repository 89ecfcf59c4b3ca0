// One rank of the compressed reduce-scatter and allgather tests, started by
// `gradwire run -n N -- shards_rank CASE`. For every codec and several shard sizes it checks that the
// result equals a serial emulation of the documented algorithm built from gw_codec_encode/decode (every
// rank emulates every rank's part, so every rank's bits are pinned), that the codec none gives
// gw_reduce_scatter's and gw_allgather's bits, that every rank holds the same allgather result, and that
// the result lies within the codec's error bound of the exact one. Prints "OK rank r" at the end; the
// driver is sync_test.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common.hpp"

using namespace synctest;

namespace {

// [collectives] pipeline_chunk_bytes of this test: shards of more than 4096 elements take several pieces.
constexpr uint64_t kChunkElements = 4096;

struct CodecCase {
  const char* name;
  const char* toml;  // its [codec.<name>] section
};

const CodecCase kCodecs[] = {
    {"none", ""},
    {"fp16", ""},
    {"bf16", ""},
    {"int8", ""},
    {"onebit", ""},
    {"topk", "[codec.topk]\nratio = 0.05\nselection = \"exact\"\n"},
    {"randomk", "[codec.randomk]\nratio = 0.1\n"},
};

struct Piece {
  uint64_t offset, count;
};
// The pieces the runtime cuts a shard into: ceil(count / chunk) of them, sizes differing by at most one,
// the larger first.
std::vector<Piece> pieces_of(uint64_t count) {
  const uint64_t n = std::max<uint64_t>(1, (count + kChunkElements - 1) / kChunkElements);
  std::vector<Piece> p;
  uint64_t off = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t c = count / n + (i < count % n ? 1 : 0);
    p.push_back({off, c});
    off += c;
  }
  return p;
}

using Codec = PieceCodec;

// The documented reduce-scatter: every rank's shard b (x[q] holds n shards), as rank b computes it.
std::vector<float> emulate_reduce_scatter(const Codec& c, const std::vector<std::vector<float>>& x, uint64_t count,
                                          gw_reduce_op op, uint64_t seed) {
  const int n = g_size;
  std::vector<float> out(n * count, 0.0f);
  for (int b = 0; b < n; ++b) {
    for (const Piece& p : pieces_of(count)) {
      const uint64_t key = uint64_t(b) * count + p.offset;
      float* res = out.data() + key;
      for (int q = 0; q < n; ++q) {
        const float* mine = x[q].data() + key;
        if (q == b) {
          for (uint64_t i = 0; i < p.count; ++i) res[i] = q == 0 ? mine[i] : res[i] + mine[i];
        } else {
          c.decode(c.encode(mine, p.count, key, seed), res, p.count, q != 0, key, seed);
        }
      }
    }
  }
  if (op == GW_REDUCE_AVG)
    for (float& v : out) v /= float(n);
  return out;
}

// The documented allgather: every rank's shard encoded once, decoded.
std::vector<float> emulate_allgather(const Codec& c, const std::vector<std::vector<float>>& x, uint64_t count,
                                     uint64_t seed) {
  const int n = g_size;
  std::vector<float> out(n * count, 0.0f);
  for (int q = 0; q < n; ++q)
    for (const Piece& p : pieces_of(count)) {
      const uint64_t key = uint64_t(q) * count + p.offset;
      c.decode(c.encode(x[q].data() + p.offset, p.count, key, seed), out.data() + key, p.count, false, key, seed);
    }
  return out;
}

// |result - exact| per element when `encodings` encodings of values up to max_in in magnitude are added
// (the codecs' documented errors, docs/wire-format.md); `dropped`: what a sparse codec may leave out.
double bound(const std::string& codec, int encodings, double max_in, double max_sum, double dropped) {
  if (codec == "none") return std::ldexp(max_sum, -23);  // exact sums; only an average's division rounds
  if (codec == "fp16") return encodings * std::ldexp(max_in, -11) + 1e-6;
  if (codec == "bf16") return encodings * std::ldexp(max_in, -8) + 1e-6;
  if (codec == "int8") return encodings * max_in / 254.0 * 1.001 + 1e-6;
  if (codec == "onebit") return 2.0 * encodings * max_in;
  return dropped + 1e-6;  // top-k / random-k
}

std::vector<float> gather_f32(gw_comm* comm, std::vector<float> mine, const std::string& what) {
  std::vector<float> all(mine.size() * g_size);
  gw_tensor in = f32(mine.data(), mine.size()), out = f32(all.data(), all.size());
  check(gw_allgather(comm, &in, &out), what + ": gw_allgather of the shards");
  return all;
}

void expect_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                 const std::string& whose) {
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], 4) != 0)
      die(what + ": element " + std::to_string(i) + " = " + std::to_string(got[i]) + " but " + whose + " gives " +
          std::to_string(want[i]));
}

void test_codec(gw_comm* comm, gw_runtime* rt, const CodecCase& cc, uint64_t count, gw_reduce_op op) {
  const int n = g_size;
  const std::string name = cc.name;
  const std::string what = name + " shard " + std::to_string(count) + (op == GW_REDUCE_AVG ? " avg" : " sum");
  Codec c;
  check(gw_codec_create(rt, cc.name, &c.codec), what + ": gw_codec_create");
  const bool integers = name == "none" || name == "randomk";
  const uint64_t seed = 7;
  std::vector<std::vector<float>> x(n, std::vector<float>(n * count));
  for (int q = 0; q < n; ++q)
    for (uint64_t i = 0; i < n * count; ++i) x[q][i] = integers ? small_int(count, q, i) : uniform(count, q, i);
  gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
  ctx.seed = seed;

  // Reduce-scatter.
  std::vector<float> in = x[g_rank], out(count, -99.0f);
  gw_tensor ti = f32(in.data(), in.size()), to = f32(out.data(), count);
  check(gw_reduce_scatter_compressed(comm, c.codec, &ctx, &ti, &to, op), what + ": reduce-scatter");
  if (in != x[g_rank]) die(what + ": reduce-scatter modified its input");
  const std::vector<float> rs = gather_f32(comm, out, what);
  expect_bits(rs, emulate_reduce_scatter(c, x, count, op, seed), what + " reduce-scatter", "the algorithm");
  if (name == "none") {
    std::vector<float> dense(count);
    gw_tensor td = f32(dense.data(), count);
    check(gw_reduce_scatter(comm, &ti, &td, op), what + ": gw_reduce_scatter");
    expect_bits(out, dense, what + " reduce-scatter", "gw_reduce_scatter");
  }
  const double divisor = op == GW_REDUCE_AVG ? n : 1;
  for (uint64_t i = 0; i < n * count; ++i) {
    double exact = 0, max_in = 0, dropped = 0;
    for (int q = 0; q < n; ++q) {
      exact += x[q][i];
      max_in = std::max(max_in, std::fabs(double(x[q][i])));
      dropped += std::fabs(x[q][i]);
    }
    // int8 scales each piece by its largest value: bound by the largest input of all.
    if (name == "int8" || name == "onebit") max_in = 1.0;
    const double err = std::fabs(double(rs[i]) - exact / divisor);
    if (!(err <= bound(name, n - 1, max_in, std::fabs(exact), dropped) / divisor))
      die(what + ": reduce-scatter element " + std::to_string(i) + " = " + std::to_string(rs[i]) + ", exact " +
          std::to_string(exact / divisor) + ": outside the codec's bound");
  }
  // In place (the result at the start of the buffer) gives the same bits.
  std::vector<float> inplace = x[g_rank];
  gw_tensor tp = f32(inplace.data(), inplace.size()), tq = f32(inplace.data(), count);
  check(gw_reduce_scatter_compressed(comm, c.codec, &ctx, &tp, &tq, op), what + ": reduce-scatter in place");
  if (std::memcmp(inplace.data(), out.data(), 4 * count) != 0) die(what + ": reduce-scatter in place differs");

  // Allgather of each rank's first shard.
  std::vector<std::vector<float>> shard(n);
  for (int q = 0; q < n; ++q) shard[q].assign(x[q].begin(), x[q].begin() + count);
  std::vector<float> mine = shard[g_rank], all(n * count, -99.0f);
  gw_tensor tm = f32(mine.data(), count), ta = f32(all.data(), all.size());
  check(gw_allgather_compressed(comm, c.codec, &ctx, &tm, &ta), what + ": allgather");
  if (mine != shard[g_rank]) die(what + ": allgather modified its input");
  check_identical(comm, all.data(), 4 * all.size(), what + " allgather");
  expect_bits(all, emulate_allgather(c, shard, count, seed), what + " allgather", "the algorithm");
  if (name == "none") {
    std::vector<float> dense(n * count);
    gw_tensor td = f32(dense.data(), dense.size());
    check(gw_allgather(comm, &tm, &td), what + ": gw_allgather");
    expect_bits(all, dense, what + " allgather", "gw_allgather");
  }
  for (uint64_t i = 0; i < n * count; ++i) {
    const double v = shard[i / std::max<uint64_t>(1, count)][i % std::max<uint64_t>(1, count)];
    const double max_in = name == "int8" || name == "onebit" ? 1.0 : std::fabs(v);
    if (!(std::fabs(all[i] - v) <= bound(name, 1, max_in, std::fabs(v), std::fabs(v))))
      die(what + ": allgather element " + std::to_string(i) + " = " + std::to_string(all[i]) + ", given " +
          std::to_string(v) + ": outside the codec's bound");
  }
  // In place (this rank's shard already at its place in out) gives the same bits.
  std::vector<float> gathered(n * count, -99.0f);
  std::copy(mine.begin(), mine.end(), gathered.begin() + g_rank * count);
  gw_tensor tg_in = f32(gathered.data() + g_rank * count, count), tg = f32(gathered.data(), gathered.size());
  check(gw_allgather_compressed(comm, c.codec, &ctx, &tg_in, &tg), what + ": allgather in place");
  if (gathered != all) die(what + ": allgather in place differs");
  check(gw_codec_destroy(c.codec), "gw_codec_destroy");
}

// Error feedback inside the collectives: over T calls the sum of the results stays within a call's
// error of the exact sum, where the same codec without error feedback drifts (inputs with a fixed part,
// so that the codec's errors repeat).
void test_error_feedback(gw_comm* comm, gw_runtime* rt, const char* name, bool scatter) {
  const int n = g_size;
  const uint64_t count = 5003;  // two pieces per shard
  const int steps = 100;
  const uint64_t in_count = scatter ? n * count : count, out_count = scatter ? count : n * count;
  double err_first = 0, err_ef = 0, err_plain = 0;
  for (int with_ef = 0; with_ef < 2; ++with_ef) {
    gw_codec* codec = nullptr;
    check(gw_codec_create(rt, name, &codec), "gw_codec_create");
    gw_error_feedback* ef = nullptr;
    check(gw_error_feedback_create(codec, &ef), "gw_error_feedback_create");
    std::vector<double> got(out_count, 0.0), exact(out_count, 0.0);
    std::vector<float> x(in_count), out(out_count);
    for (int t = 0; t < steps; ++t) {
      const auto value = [&](int q, uint64_t i) {
        return 0.5f * uniform(21, q, i) + 0.1f * uniform(22 + uint64_t(t), q, i);
      };
      for (uint64_t i = 0; i < in_count; ++i) x[i] = value(g_rank, i);
      for (uint64_t i = 0; i < out_count; ++i) {
        if (scatter) {
          double avg = 0;
          for (int q = 0; q < n; ++q) avg += value(q, g_rank * count + i);
          exact[i] += avg / n;
        } else {
          exact[i] += value(int(i / count), i % count);
        }
      }
      gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
      ctx.seed = 9;
      ctx.step = uint64_t(t);
      gw_tensor tx = f32(x.data(), in_count), to = f32(out.data(), out_count);
      const std::string what = std::string(name) + (scatter ? " reduce-scatter" : " allgather") +
                               (with_ef ? " with" : " without") + " error feedback, step " + std::to_string(t);
      if (scatter) {
        check(with_ef ? gw_reduce_scatter_compressed_ef(comm, ef, &ctx, &tx, &to, GW_REDUCE_AVG)
                      : gw_reduce_scatter_compressed(comm, codec, &ctx, &tx, &to, GW_REDUCE_AVG),
              what);
      } else {
        check(with_ef ? gw_allgather_compressed_ef(comm, ef, &ctx, &tx, &to)
                      : gw_allgather_compressed(comm, codec, &ctx, &tx, &to),
              what);
        check_identical(comm, out.data(), 4 * out_count, what);
      }
      double err = 0;  // the root mean square of the summed results' error
      for (uint64_t i = 0; i < out_count; ++i) {
        got[i] += out[i];
        err += (got[i] - exact[i]) * (got[i] - exact[i]);
      }
      err = std::sqrt(err / double(out_count));
      if (t == 0 && with_ef) err_first = err;
      if (t == steps - 1) (with_ef ? err_ef : err_plain) = err;
    }
    check(gw_error_feedback_destroy(ef), "gw_error_feedback_destroy");
    check(gw_codec_destroy(codec), "gw_codec_destroy");
  }
  const std::string why = std::string(name) + (scatter ? " reduce-scatter" : " allgather") +
                          ": with error feedback the rms error of the summed results was " + std::to_string(err_first) +
                          " after 1 call, " + std::to_string(err_ef) + " after " + std::to_string(steps) + " (" +
                          std::to_string(err_plain) + " without)";
  std::printf("%s\n", why.c_str());
  if (std::strcmp(name, "int8") == 0 && !(err_ef <= 1.5 * err_first)) die(why);
  if (!(err_ef < 0.25 * err_plain)) die(why);
}

void expect_refused(gw_status st, gw_status expected, const std::string& words, const std::string& what) {
  const std::string message = gw_last_error();
  if (st != expected || message.find(words) == std::string::npos)
    die(what + ": expected " + gw_status_string(expected) + " with '" + words + "', got " + gw_status_string(st) +
        ": " + message);
  std::printf("refused %s: %s\n", what.c_str(), message.c_str());
}

void test_errors(gw_comm* comm, gw_runtime* rt) {
  const uint64_t n = g_size;
  gw_codec* codec = nullptr;
  check(gw_codec_create(rt, "int8", &codec), "gw_codec_create");
  std::vector<float> in(n * 10 + 1), out(10), all(n * 10 + 3);
  gw_tensor ti = f32(in.data(), n * 10 + 1), to = f32(out.data(), 10);
  expect_refused(gw_reduce_scatter_compressed(comm, codec, nullptr, &ti, &to, GW_REDUCE_SUM), GW_ERR_INVALID_ARGUMENT,
                 "not divisible by the " + std::to_string(n) + " ranks", "a count that does not divide");
  ti.count = n * 10;
  to.count = 9;
  expect_refused(gw_reduce_scatter_compressed(comm, codec, nullptr, &ti, &to, GW_REDUCE_SUM), GW_ERR_INVALID_ARGUMENT,
                 "it needs in's", "an out of another size");
  to.count = 10;
  expect_refused(gw_reduce_scatter_compressed(comm, codec, nullptr, &ti, &to, GW_REDUCE_MAX), GW_ERR_UNSUPPORTED,
                 "needs gw_reduce_scatter", "op max");
  expect_refused(gw_reduce_scatter_compressed(comm, nullptr, nullptr, &ti, &to, GW_REDUCE_SUM), GW_ERR_INVALID_ARGUMENT,
                 "codec", "a NULL codec");
  expect_refused(gw_reduce_scatter_compressed(comm, codec, nullptr, nullptr, &to, GW_REDUCE_SUM),
                 GW_ERR_INVALID_ARGUMENT, "in", "a NULL input");
  expect_refused(gw_reduce_scatter_compressed_ef(comm, nullptr, nullptr, &ti, &to, GW_REDUCE_SUM),
                 GW_ERR_INVALID_ARGUMENT, "error feedback", "a NULL error feedback");
  std::vector<double> d(n * 10);
  gw_tensor td = GW_TENSOR_INIT;
  td.dtype = GW_DTYPE_F64;
  td.data = d.data();
  td.count = d.size();
  expect_refused(gw_reduce_scatter_compressed(comm, codec, nullptr, &td, &to, GW_REDUCE_SUM), GW_ERR_UNSUPPORTED, "f32",
                 "an f64 tensor");
  std::vector<uint16_t> h(10);
  gw_tensor th = GW_TENSOR_INIT;
  th.dtype = GW_DTYPE_F16;
  th.data = h.data();
  th.count = 10;
  expect_refused(gw_reduce_scatter_compressed(comm, codec, nullptr, &ti, &th, GW_REDUCE_SUM), GW_ERR_INVALID_ARGUMENT,
                 "they must match", "in and out of different dtypes");
  gw_tensor tin = f32(in.data(), 10), tall = f32(all.data(), n * 10 + 3);
  expect_refused(gw_allgather_compressed(comm, codec, nullptr, &tin, &tall), GW_ERR_INVALID_ARGUMENT,
                 "it needs " + std::to_string(n) + " (ranks) x 10", "an allgather out of another size");
  expect_refused(gw_allgather_compressed(comm, nullptr, nullptr, &tin, &tall), GW_ERR_INVALID_ARGUMENT, "codec",
                 "a NULL allgather codec");
  expect_refused(gw_allgather_compressed_ef(comm, nullptr, nullptr, &tin, &tall), GW_ERR_INVALID_ARGUMENT,
                 "error feedback", "a NULL allgather error feedback");
  gw_request* r = nullptr;
  tall.count = n * 10;
  expect_refused(gw_allgather_compressed_start(comm, codec, nullptr, &tin, &tall, nullptr), GW_ERR_INVALID_ARGUMENT,
                 "request", "a NULL request");
  // The communicator is still usable after the refusals: one nonblocking call of each.
  check(gw_allgather_compressed_start(comm, codec, nullptr, &tin, &tall, &r), "allgather_compressed_start");
  check(gw_request_wait(r, -1.0), "wait");
  check(gw_request_free(r), "free");
  check(gw_reduce_scatter_compressed_start(comm, codec, nullptr, &tall, &to, GW_REDUCE_AVG, &r),
        "reduce_scatter_compressed_start");
  check(gw_request_wait(r, -1.0), "wait");
  check(gw_request_free(r), "free");
  check(gw_codec_destroy(codec), "gw_codec_destroy");
}

// bf16 tensors are staged through f32: the result is the f32 call's, rounded once.
void test_bf16(gw_comm* comm, gw_runtime* rt) {
  const uint64_t n = g_size, count = 3001;
  const auto to_bf16 = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  };
  const auto from_bf16 = [](uint16_t v) {
    const uint32_t u = uint32_t(v) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  gw_codec* codec = nullptr;
  check(gw_codec_create(rt, "int8", &codec), "gw_codec_create");
  std::vector<uint16_t> half(n * count), half_out(count), half_all(n * n * count);
  std::vector<float> exact(n * count), out(count), all(n * n * count);
  for (uint64_t i = 0; i < n * count; ++i) {
    half[i] = to_bf16(uniform(31, g_rank, i));
    exact[i] = from_bf16(half[i]);
  }
  const auto bf16 = [](uint16_t* p, uint64_t c) {
    gw_tensor t = GW_TENSOR_INIT;
    t.dtype = GW_DTYPE_BF16;
    t.data = p;
    t.count = c;
    return t;
  };
  gw_tensor fi = f32(exact.data(), exact.size()), fo = f32(out.data(), count), fa = f32(all.data(), all.size());
  gw_tensor hi = bf16(half.data(), half.size()), ho = bf16(half_out.data(), count),
            ha = bf16(half_all.data(), half_all.size());
  check(gw_reduce_scatter_compressed(comm, codec, nullptr, &fi, &fo, GW_REDUCE_AVG), "f32 reduce-scatter");
  check(gw_reduce_scatter_compressed(comm, codec, nullptr, &hi, &ho, GW_REDUCE_AVG), "bf16 reduce-scatter");
  for (uint64_t i = 0; i < count; ++i)
    if (half_out[i] != to_bf16(out[i]))
      die("bf16 reduce-scatter: element " + std::to_string(i) + " is not the f32 result rounded once");
  check(gw_allgather_compressed(comm, codec, nullptr, &fi, &fa), "f32 allgather");
  check(gw_allgather_compressed(comm, codec, nullptr, &hi, &ha), "bf16 allgather");
  for (uint64_t i = 0; i < all.size(); ++i)
    if (half_all[i] != to_bf16(all[i]))
      die("bf16 allgather: element " + std::to_string(i) + " is not the f32 result rounded once");
  check_identical(comm, half_all.data(), 2 * half_all.size(), "bf16 allgather");
  check(gw_codec_destroy(codec), "gw_codec_destroy");
}

}  // namespace

int main(int argc, char** argv) {
  init_rank_from_env();
  const std::string which = argc > 1 ? argv[1] : "all";
  std::string toml = "[collectives]\npipeline_chunk_bytes = " + std::to_string(4 * kChunkElements) + "\n";
  for (const CodecCase& cc : kCodecs) toml += cc.toml;
  gw_runtime* rt = make_runtime(toml);
  gw_comm* comm = make_comm(rt);

  if (which == "mismatch-codec" || which == "mismatch-count" || which == "mismatch-allgather") {
    // The last rank differs: every rank gets GW_ERR_MISMATCH, nobody hangs.
    const bool last = g_rank == g_size - 1;
    gw_codec* codec = nullptr;
    check(gw_codec_create(rt, which == "mismatch-codec" && last ? "fp16" : "int8", &codec), "gw_codec_create");
    const uint64_t count = which == "mismatch-count" && last ? 20000 : 30000;
    std::vector<float> in(g_size * count, 1.0f), out(g_size * count);
    gw_tensor ti = f32(in.data(), g_size * count), to = f32(out.data(), count);
    if (which == "mismatch-allgather") {
      ti.count = last ? 20000 : 30000;
      to.count = g_size * ti.count;
      expect_error(gw_allgather_compressed(comm, codec, nullptr, &ti, &to), GW_ERR_MISMATCH, "mismatched counts");
    }
    expect_error(gw_reduce_scatter_compressed(comm, codec, nullptr, &ti, &to, GW_REDUCE_SUM), GW_ERR_MISMATCH,
                 "mismatched " + which);
  } else if (which == "ef") {
    for (const char* name : {"int8", "topk"}) {
      test_error_feedback(comm, rt, name, true);
      test_error_feedback(comm, rt, name, false);
    }
  } else if (which == "errors") {
    test_errors(comm, rt);
  } else if (which == "bf16") {
    test_bf16(comm, rt);
  } else {
    // Sizes: empty, one element, a prime within one piece, and several pipelined pieces.
    for (const CodecCase& cc : kCodecs) {
      if (which != "all" && which != cc.name) continue;
      for (uint64_t count : {uint64_t(0), uint64_t(1), uint64_t(1009), uint64_t(10007)})
        test_codec(comm, rt, cc, count, GW_REDUCE_SUM);
      test_codec(comm, rt, cc, 1009, GW_REDUCE_AVG);
    }
  }
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
