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

#include "comm/communicator.hpp"
#include "core/runtime.hpp"

namespace gw::sync {

struct AutoChoice {
  std::string codec;
  std::string reason;
  double predicted = 0;  // seconds, the chosen codec's exchange of the bucket
};

// Collective: every rank calls it with the same bucket sizes (f32 elements). Returns one choice per
// bucket. A codec in `allow` that does not exist, or a bad model file, is GW_ERR_CONFIG. `measure_now`
// measures codecs and link even when [codec] model names a file (a re-decision: the file was wrong).
std::vector<AutoChoice> choose_auto_codecs(comm::Communicator& comm, const Runtime& runtime,
                                           const std::vector<uint64_t>& bucket_counts, bool measure_now = false);

// Collective: every rank passes, per auto bucket, its measured exchange time over the predicted one (> 0;
// 1 where it has no measurement). Returns, alike on every rank, the largest max(r, 1/r) over the ranks
// and buckets, and in `worst` the ratio r that gave it.
double auto_drift(comm::Communicator& comm, const std::vector<double>& ratios, double* worst);

}  // namespace gw::sync
