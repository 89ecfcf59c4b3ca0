// Short measurements the model is fitted from, shared by `gradwire calibrate` (through the C ABI) and
// the auto codec (inside the runtime): a codec's encode and decode cost per byte and its size ratio,
// the machine's elementwise-sum cost. The caller supplies the codec's operations, so this knows no
// runtime.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/model.hpp"

namespace gw::model {

struct CodecProbe {
  std::function<uint64_t(uint64_t count)> max_payload;  // bytes, for `count` f32
  // Encodes x[0, count) (the piece at element `offset`) into payload; returns the payload's size.
  std::function<uint64_t(uint64_t offset, const float* x, uint64_t count, void* payload, uint64_t capacity)> encode;
  // Decodes a payload into out[0, count), adding when `accumulate`.
  std::function<void(uint64_t offset, const void* payload, uint64_t size, float* out, uint64_t count, bool accumulate)>
      decode;
};

// The kind of a codec from its properties (as collectives/compressed.hpp chooses its algorithm).
CodecKind kind_of(const std::string& name, bool sparse, bool summable, bool shared_indices);

// A gradient-like sample: deterministic, roughly normal values of varied magnitude.
std::vector<float> sample_gradient(uint64_t count, uint64_t seed = 1);

// Times the codec on `total_bytes` of f32 cut into pieces of `chunk_bytes` (as the compressed
// allreduce cuts them), the median of `repetitions` after a warm-up. Sparse codecs' decode is per
// payload byte and adds into a buffer already written (GW_DECODE_ACCUMULATE: the sparse allgather writes
// its buffer once and then adds n payloads), the others' per f32 byte, writing the whole piece; summable
// and quantized codecs' decode_accumulate per f32 byte, adding onto the piece.
CodecCost measure_codec(const std::string& name, CodecKind kind, const CodecProbe& probe, uint64_t total_bytes,
                        uint64_t chunk_bytes, int repetitions);

// The same with every probe (its own codec) measured at once, one thread each with buffers of its own,
// each phase (encoding, decoding, adding) started together in every repetition: a codec's cost per
// core while the other cores run it too, as the ranks of a node run the phases of an allreduce at the
// same moment and share the memory's bandwidth. The median over all threads' repetitions.
CodecCost measure_codec(const std::string& name, CodecKind kind, const std::vector<CodecProbe>& probes,
                        uint64_t total_bytes, uint64_t chunk_bytes, int repetitions);

// The sparse allgather's combining (CodecCost::gather_ranks): for each count n of `ranks`, the median of
// `repetitions` (after a warm-up) of decoding, piece by piece (`chunk_bytes`), the n payloads of n
// different gradients of `total_bytes` into one buffer, the first writing the piece and the others
// adding (GW_DECODE_ACCUMULATE), as allreduce_sparse_allgather combines them; seconds per f32 byte of
// the buffer. The payloads are encoded once from sample_gradient(seed 1 .. max n).
std::vector<double> measure_sparse_combine(const CodecProbe& probe, const std::vector<double>& ranks,
                                           uint64_t total_bytes, uint64_t chunk_bytes, int repetitions);

// Seconds per f32 byte of out[i] += in[i] over `bytes`, the median of `repetitions` after a warm-up.
// (The median, not the fastest: on a shared machine the memory's speed dips for tens of milliseconds at
// a time, and the collectives the model predicts run through those dips.)
double measure_gamma(uint64_t bytes, int repetitions);

// Core-seconds the CPUs of this machine have spent busy: each CPU's time less its idle residency, so
// only a difference between two calls means anything. The difference over a transfer between
// processes that block (rather than poll) is what the transfer cost the machine, the kernel's network
// work included wherever it ran: the basis of a link's cpu per byte (on a quiet machine).
// The idle residencies come from cpuidle (sysfs, microseconds); this thread visits each CPU it may run
// on before reading it, so that an idle period in progress ends and is counted. Where cpuidle is
// missing, /proc/stat's idle and iowait (10 ms units). Not the busy columns of /proc/stat: the kernel
// samples those at its tick, and a tick that stops while a core idles misses short bursts of work (on a
// VM they read the same 10 Gbit/s transfers 4-16 % lower than the residencies). -1 where neither can
// be read.
double busy_core_seconds();

}  // namespace gw::model
