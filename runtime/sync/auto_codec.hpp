// The `auto` codec of gw_sync ([codec] name = "auto", or a rule's codec = "auto"): at gw_sync_finalize,
// each such bucket gets the codec among `[codec] allow` that the cost model (runtime/model,
// docs/cost-model.md) predicts fastest for its size, uncompressed unless a codec wins by more than 5 %.
// The model's numbers come from `[codec] model` (a file `gradwire calibrate` wrote) or are measured
// now: every rank times the allowed codecs and dense allreduces at once (so ranks sharing cores are
// measured sharing them); the numbers are then maxed over the ranks, so every rank evaluates the same
// model and makes the same choice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codec/codec.hpp"
#include "comm/communicator.hpp"
#include "instance/runtime.hpp"

namespace gw::sync {

// A codec must be predicted this much faster than uncompressed to be chosen (noise does not switch
// compression on).
inline constexpr double kAutoMargin = 0.05;

// Whether buckets compressed with `codec` keep error-feedback residuals: [codec] error_feedback on, the
// codec lossy (nullptr, uncompressed, is not), and listed in [codec] error_feedback_codecs (when that
// list is not empty).
bool keeps_error_feedback(const config::Config& cfg, const Codec* codec);

// One candidate's predicted exchange of a bucket, split into what scales with the link (latency and
// wire time) and the rest (codec and reduction work), in seconds.
struct AutoCandidate {
  std::string codec;
  double link = 0;
  double fixed = 0;
};

struct AutoChoice {
  std::string codec;
  std::string reason;
  double predicted = 0;  // seconds, the chosen codec's exchange of the bucket
  std::vector<AutoCandidate> candidates;  // none first, then the allowed codecs that were measured
};

// The codec the choice rule (the fastest codec unless it is not `margin` faster than uncompressed) picks
// once the candidates are rescaled so that `chosen` takes `measured` seconds: with the gap put on the
// link (every candidate's link part scaled alike) and, separately, on the work (every fixed part). ""
// when the two disagree or no candidate is `chosen`: the drift may change the choice, measure again.
std::string choice_under_drift(const std::vector<AutoCandidate>& candidates, const std::string& chosen,
                               double measured, double margin);

// Collective: every rank calls it with the same bucket sizes (f32 elements). Returns one choice per
// bucket. A codec in `allow` that does not exist, or a bad model file, is GW_ERR_CONFIG. `measure_now`
// measures codecs and link even when [codec] model names a file (a re-decision: the file was wrong).
// `machine`, when given, keeps the numbers of memory and codecs measured by an earlier call (they do not
// change with the link): an empty one is filled once they were measured, a filled one spares measuring
// them again, and only the link is measured.
std::vector<AutoChoice> choose_auto_codecs(comm::Communicator& comm, const Runtime& runtime,
                                           const std::vector<uint64_t>& bucket_counts, bool measure_now = false,
                                           std::vector<double>* machine = nullptr);

// Collective: every rank passes, per auto bucket, its measured exchange time over the expected one (> 0;
// 1 where it has no measurement). Returns, alike on every rank, per bucket the smallest ratio over the
// ranks (the rank that arrived last did not wait for the others: its time is the exchange's own).
std::vector<double> auto_drift(comm::Communicator& comm, const std::vector<double>& ratios);

// After a re-measurement: whether it confirms the earlier choice (the same codec, and a prediction within
// a factor `drift` of the earlier one, either way). Then the link is what it was, and a gap between the
// times measured in place and the prediction belongs to the place (ranks that compute between exchanges,
// cores they share), not to the link.
bool remeasure_confirms(const std::string& codec_before, double predicted_before, const AutoChoice& now,
                        double drift);

}  // namespace gw::sync
