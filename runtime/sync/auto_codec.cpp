#include "sync/auto_codec.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>

#include "codec/codec.hpp"
#include "collectives/compressed.hpp"
#include "core/error.hpp"
#include "ef/error_feedback.hpp"
#include "model/measure.hpp"
#include "model/model.hpp"

namespace gw::sync {
namespace {

using Clock = std::chrono::steady_clock;
namespace gm = gw::model;

void run_collective(comm::Communicator& comm, void* buf, uint64_t count, gw_dtype dtype, gw_reduce_op op) {
  const comm::Signature s{comm::CollectiveKind::Allreduce, op, dtype, count, 0, 0};
  const uint64_t threshold = comm.settings().ring_threshold_bytes;
  gw_request* r = comm.start_collective(
      s, [=](comm::Collective& c) { return coll::allreduce_dense(c, buf, count, dtype, op, threshold); });
  const gw_status st = comm.wait(r, -1.0);
  const std::string error = r->error;
  comm.free(r);
  if (st != GW_OK) fail(st, "auto codec: measuring the link: " + error);
}

// The fastest of `reps` dense allreduces of `bytes` (f32), after one warm-up.
double time_allreduce(comm::Communicator& comm, uint64_t bytes, int reps) {
  std::vector<float> buf(bytes / 4, 1.0f);
  double best = 1e300;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = Clock::now();
    run_collective(comm, buf.data(), buf.size(), GW_DTYPE_F32, GW_REDUCE_SUM);
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r > 0) best = std::min(best, t);
  }
  return best;
}

// `feedback`: encode as gw_sync does under error feedback (runtime/ef: the residual added, the payload
// decoded locally, the new residual kept), so the encode time includes those passes as they run.
gm::CodecCost probe(Codec& codec, uint64_t chunk_bytes, bool feedback) {
  ErrorFeedback ef(codec);
  const uint32_t flags = codec.properties().flags;
  const gm::CodecKind kind = gm::kind_of(codec.name(), flags & GW_CODEC_SPARSE, flags & GW_CODEC_SUMMABLE,
                                         flags & GW_CODEC_SHARED_INDICES);
  gm::CodecProbe p;
  p.max_payload = [&](uint64_t count) { return codec.max_payload_size(GW_DTYPE_F32, count); };
  const auto tensor = [](const float* x, uint64_t count) {
    gw_tensor t = GW_TENSOR_INIT;
    t.data = const_cast<float*>(x);
    t.count = count;
    t.dtype = GW_DTYPE_F32;
    return t;
  };
  p.encode = [&](uint64_t offset, const float* x, uint64_t count, void* payload, uint64_t capacity) {
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    ctx.seed = offset;
    return feedback ? ef.encode(offset, ctx, tensor(x, count), payload, capacity)
                    : codec.encode(ctx, tensor(x, count), payload, capacity);
  };
  p.decode = [&](uint64_t offset, const void* payload, uint64_t size, float* out, uint64_t count, bool acc) {
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    ctx.seed = offset;
    gw_tensor t = tensor(out, count);
    codec.decode(ctx, payload, size, t, acc ? GW_DECODE_ACCUMULATE : 0);
  };
  return gm::measure_codec(codec.name(), kind, p, 8 * chunk_bytes, chunk_bytes, 2);  // 8 pieces: past the caches
}

std::string mb(double bytes) {
  std::ostringstream o;
  o.precision(3);
  o << bytes / 1e6 << " MB";
  return o.str();
}

}  // namespace

bool keeps_error_feedback(const config::Config& cfg, const Codec* codec) {
  // A codec of rounds (powersgd) keeps its own residuals: the runtime's error feedback wraps an encoding.
  if (!codec || !cfg.get_bool("codec", "error_feedback") || (codec->properties().flags & GW_CODEC_LOSSLESS) ||
      codec->has_rounds())
    return false;
  const std::vector<std::string> listed = cfg.get_strings("codec", "error_feedback_codecs");
  return listed.empty() || std::find(listed.begin(), listed.end(), codec->name()) != listed.end();
}

std::vector<AutoChoice> choose_auto_codecs(comm::Communicator& comm, const Runtime& runtime,
                                           const std::vector<uint64_t>& bucket_counts, bool measure_now,
                                           std::vector<double>* machine) {
  const config::Config& cfg = runtime.config();
  std::vector<std::string> allowed = cfg.get_strings("codec", "allow");
  const std::string model_path = measure_now ? std::string() : cfg.get_string("codec", "model");
  const uint32_t n = comm.size();
  if (allowed.empty()) fail(GW_ERR_CONFIG, "[codec] name = \"auto\" needs [codec] allow to list at least one codec");
  std::vector<std::unique_ptr<Codec>> codecs;  // the allowed compressing codecs, in `allowed` order
  for (const std::string& name : allowed) {
    if (name == "auto") fail(GW_ERR_CONFIG, "[codec] allow lists \"auto\"; list real codecs (none, fp16, int8, ...)");
    if (name == "none") continue;
    try {
      codecs.push_back(runtime.make_codec(name));
    } catch (const Error& e) {
      fail(GW_ERR_CONFIG, "[codec] allow lists '" + name + "', which cannot be used: " + e.what());
    }
  }
  std::vector<AutoChoice> out;
  if (n == 1) {
    for (size_t i = 0; i < bucket_counts.size(); ++i) out.push_back({"none", "one rank: nothing is exchanged"});
    return out;
  }

  // The numbers every rank contributes; maxed over the ranks below.
  // [0] gamma, [1] alpha, [2] beta, [3] t_small, [4] t_large, [5] the link's cpu per byte (from a file;
  // 0 when measured: the ring's times include it), then per codec: ratio, encode, decode.
  gm::Model file;
  const bool from_file = !model_path.empty();
  if (from_file) {
    try {
      file = gm::load(model_path);
      (void)file.link(file.inter);
    } catch (const std::exception& e) {
      fail(GW_ERR_CONFIG, std::string("[codec] model: ") + e.what());
    }
  }
  const uint64_t chunk = comm.settings().pipeline_chunk_bytes;
  // A codec that keeps error feedback also pays the residual's passes on every exchange.
  const auto feedback = [&](const Codec& c) { return keeps_error_feedback(cfg, &c); };
  constexpr size_t kCodec0 = 6, kPer = 4;  // per codec: ratio, encode, decode, decode adding
  std::vector<double> v(kCodec0 + kPer * codecs.size(), 0.0);
  // Start together, so ranks that share cores are timed sharing them.
  run_collective(comm, v.data(), 1, GW_DTYPE_F64, GW_REDUCE_MAX);
  // The codecs' and the memory's numbers do not change with the link: measured once (alike on every
  // rank, so every rank skips alike), a re-decision measures only the link.
  const bool known_machine = !from_file && machine && machine->size() == 1 + kPer * codecs.size();
  if (known_machine) {
    v[0] = (*machine)[0];
    std::copy(machine->begin() + 1, machine->end(), v.begin() + kCodec0);
  } else {
    v[0] = from_file ? file.machine.gamma : gm::measure_gamma(4 << 20, 2);
    for (size_t i = 0; i < codecs.size(); ++i) {
      const gm::CodecCost* known = from_file ? file.codec(codecs[i]->name()) : nullptr;
      gm::CodecCost c = known ? *known : probe(*codecs[i], chunk, feedback(*codecs[i]));
      // A file's codec numbers are the codec alone: error feedback's passes are estimated from the
      // memory's (two elementwise passes and a local decode; a sparse decode writes its buffer once more).
      if (known && feedback(*codecs[i]))
        c.encode += 2 * v[0] + (c.kind == gm::CodecKind::Sparse ? v[0] : c.decode);
      double* at = &v[kCodec0 + kPer * i];
      at[0] = c.ratio, at[1] = c.encode, at[2] = c.decode, at[3] = c.decode_accumulate;
    }
  }
  constexpr double kSmall = 256 << 10, kMedium = 1 << 20, kLarge = 16 << 20;
  double large = kMedium;
  if (from_file) {
    const gm::Link l = file.link(file.inter);
    v[1] = l.alpha, v[2] = l.beta, v[5] = l.cpu;
  } else {
    v[3] = time_allreduce(comm, uint64_t(kSmall), 3);
    v[4] = time_allreduce(comm, uint64_t(kMedium), 3);
    // On a fast link a 1 MiB allreduce lasts about as long as a scheduler's hiccup: time 16 MiB too
    // when that costs little (decided from every rank's maximum, so all ranks agree).
    double probe = v[4];
    run_collective(comm, &probe, 1, GW_DTYPE_F64, GW_REDUCE_MAX);
    if (probe * (kLarge / kMedium) < 0.05) {
      v[4] = time_allreduce(comm, uint64_t(kLarge), 3);
      large = kLarge;
    }
  }
  run_collective(comm, v.data(), v.size(), GW_DTYPE_F64, GW_REDUCE_MAX);
  if (machine && !from_file && !known_machine) {
    machine->assign(1, v[0]);
    machine->insert(machine->end(), v.begin() + kCodec0, v.end());
  }

  gm::Model m;
  m.machine.gamma = v[0];
  gm::Topology t;
  t.nodes = n;
  t.per_node = 1;  // every rank behind its own link: the pessimistic flat case
  t.gamma = v[0];
  gm::Link link{v[1], v[2], v[5]};
  std::string link_source;
  if (from_file) {
    // File numbers are of one process alone: ranks sharing this host's cores take turns.
    const double ranks_here = std::max<uint32_t>(1, comm.settings().ranks_here);
    t.cores = std::max<double>(1, comm.settings().cpus) / ranks_here;
    link_source = "model " + model_path + " (link '" + file.inter + "')";
  } else {
    // Fitted from two ring allreduces (256 KiB and 1 or 16 MiB):
    // t = 2 (n-1) alpha + 2 (n-1)/n M beta + (n-1)/n M gamma. The
    // measurements were made with all ranks busy, so no further sharing of cores is modelled.
    t.cores = 1;
    const double dn = double(n), slope = (v[4] - v[3]) / (large - kSmall);
    link.beta = std::max(1e-13, (slope - (dn - 1) / dn * v[0]) / (2 * (dn - 1) / dn));
    link.alpha = std::max(0.0, (v[3] - 2 * (dn - 1) / dn * kSmall * link.beta - (dn - 1) / dn * kSmall * v[0]) /
                                   (2 * (dn - 1)));
    link_source = known_machine ? "measured now (codecs as measured before)" : "measured now";
  }
  t.inter = t.intra = link;
  std::string charged;  // the codecs timed with error feedback's passes
  for (size_t i = 0; i < codecs.size(); ++i) {
    const uint32_t flags = codecs[i]->properties().flags;
    gm::CodecCost c;
    c.name = codecs[i]->name();
    c.kind = gm::kind_of(c.name, flags & GW_CODEC_SPARSE, flags & GW_CODEC_SUMMABLE, flags & GW_CODEC_SHARED_INDICES);
    const double* at = &v[kCodec0 + kPer * i];
    c.ratio = at[0], c.encode = at[1], c.decode = at[2], c.decode_accumulate = at[3];
    if (feedback(*codecs[i])) charged += (charged.empty() ? "" : ", ") + c.name;
    m.codecs.push_back(c);
  }
  if (!charged.empty()) link_source += "; error feedback's passes counted for " + charged;
  gm::Settings st;
  st.chunk_bytes = double(chunk);
  st.ring_threshold_bytes = double(comm.settings().ring_threshold_bytes);
  st.two_level_cross = comm.settings().two_level_cross;
  std::ostringstream link_text;
  link_text.precision(3);
  link_text << "link " << (link.beta > 0 ? 1e-6 / link.beta : 0) << " MB/s, alpha " << link.alpha * 1e6 << " us, "
            << link_source;
  for (size_t b = 0; b < bucket_counts.size(); ++b) {
    const double bytes = 4.0 * double(bucket_counts[b]);
    const gm::Choice c = gm::choose(m, allowed, bytes, t, kAutoMargin, st);
    out.push_back({c.codec, c.reason + "; " + link_text.str(), c.predicted, {}});
    for (const auto& [name, x] : c.candidates) {
      const double link_part = std::min(x.total, x.latency + x.wire);
      out.back().candidates.push_back({name, link_part, x.total - link_part});
    }
    runtime.logger().info("sync", "auto codec: bucket " + std::to_string(b) + " (" + mb(bytes) + "): " + c.codec +
                                      ": " + out.back().reason);
  }
  return out;
}

std::vector<double> auto_drift(comm::Communicator& comm, const std::vector<double>& ratios) {
  // An exchange's time on a rank includes its wait for the ranks that arrived later (they computed
  // longer). The rank that arrived last waited least: per bucket, the smallest ratio over the ranks is
  // the exchange's own, alike on every rank after one reduction.
  std::vector<double> v = ratios;
  if (!v.empty()) run_collective(comm, v.data(), v.size(), GW_DTYPE_F64, GW_REDUCE_MIN);
  return v;
}

bool remeasure_confirms(const std::string& codec_before, double predicted_before, const AutoChoice& now,
                        double drift) {
  if (now.codec != codec_before || predicted_before <= 0 || now.predicted <= 0) return false;
  return std::max(now.predicted / predicted_before, predicted_before / now.predicted) <= drift;
}

std::string choice_under_drift(const std::vector<AutoCandidate>& candidates, const std::string& chosen,
                               double measured, double margin) {
  const AutoCandidate* mine = nullptr;
  for (const AutoCandidate& c : candidates)
    if (c.codec == chosen) mine = &c;
  if (!mine || measured <= 0) return "";
  // The rule of gm::choose over rescaled candidates: scale(c) is a candidate's time.
  const auto pick = [&](auto scale) {
    const AutoCandidate* best = nullptr;
    double none = -1;
    for (const AutoCandidate& c : candidates) {
      if (c.codec == "none") {
        none = scale(c);
      } else if (!best || scale(c) < scale(*best)) {
        best = &c;
      }
    }
    if (!best) return std::string("none");
    if (none < 0) return best->codec;
    return gm::beats_uncompressed(scale(*best), none, margin) ? best->codec : std::string("none");
  };
  const double on_link = mine->link > 0 ? std::max(0.0, (measured - mine->fixed) / mine->link) : -1;
  const double on_work = mine->fixed > 0 ? std::max(0.0, (measured - mine->link) / mine->fixed) : -1;
  if (on_link < 0 || on_work < 0) return "";
  const std::string a = pick([&](const AutoCandidate& c) { return c.fixed + on_link * c.link; });
  const std::string b = pick([&](const AutoCandidate& c) { return on_work * c.fixed + c.link; });
  return a == chosen && b == chosen ? chosen : "";
}

}  // namespace gw::sync
