// gw_reduce_scatter_compressed* / gw_allgather_compressed* of the C ABI (since 1.3).
#include <gradwire/gradwire.h>

#include <memory>
#include <string>
#include <vector>

#include "capi/blocking.hpp"
#include "codec/codec.hpp"
#include "codec/staging.hpp"
#include "collectives/compressed.hpp"
#include "comm/allreduce_start.hpp"
#include "comm/communicator.hpp"
#include "core/abi_struct.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"
#include "ef/error_feedback.hpp"

namespace {

using gw::comm::CollectiveKind;

const char* call_name(CollectiveKind kind) {
  return kind == CollectiveKind::ReduceScatter ? "the compressed reduce-scatter" : "the compressed allgather";
}

gw_tensor checked_tensor(const gw_tensor* t, const char* what, CollectiveKind kind) {
  const gw_tensor out = gw::read_tensor(t, what);
  const std::string hint =
      kind == CollectiveKind::ReduceScatter ? "use gw_reduce_scatter for others" : "use gw_allgather for others";
  gw::require_dtype(out, what, (1u << GW_DTYPE_F32) | (1u << GW_DTYPE_F16) | (1u << GW_DTYPE_BF16), call_name(kind),
                    "it takes f32, f16 and bf16; " + hint);
  return out;
}

std::string str(uint64_t v) { return std::to_string(v); }

// Starts the collective; throws gw::Error (the C functions below turn it into their status). f32 host
// tensors are used where they are; f16, bf16 and device tensors are staged through f32 host buffers
// (codec/staging.hpp): the input read now, the result written back when the algorithm completes.
gw_status start(CollectiveKind kind, gw_comm* comm, gw::Codec* codec, gw::ErrorFeedback* ef,
                const gw_codec_context* context, const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                gw_request** request) {
  gw::require(comm, "comm");
  gw::require(request, "request (output)");
  *request = nullptr;
  gw::comm::Communicator& c = *comm->impl;
  const bool scatter = kind == CollectiveKind::ReduceScatter;
  const gw_codec_context given = gw::abi::read_or_default(context, "context");
  gw_codec_context ctx = gw::abi::Struct<gw_codec_context>::defaults();
  ctx.seed = given.seed;
  ctx.step = given.step;
  const gw_tensor i = checked_tensor(in, "in", kind);
  const gw_tensor o = checked_tensor(out, "out", kind);
  if (i.dtype != o.dtype)
    gw::fail(GW_ERR_INVALID_ARGUMENT, std::string("in is ") + gw_dtype_name(i.dtype) + " but out is " +
                                          gw_dtype_name(o.dtype) + "; they must match");
  const uint64_t n = c.size();
  if (scatter) {
    if (i.count % n != 0)
      gw::fail(GW_ERR_INVALID_ARGUMENT, "reduce_scatter_compressed: in has " + str(i.count) +
                                            " elements, which is not divisible by the " + str(n) +
                                            " ranks; in holds one shard of out->count elements per rank");
    if (o.count != i.count / n)
      gw::fail(GW_ERR_INVALID_ARGUMENT, "reduce_scatter_compressed: out has " + str(o.count) +
                                            " elements; it needs in's " + str(i.count) + " / " + str(n) +
                                            " (ranks) = " + str(i.count / n));
    if (op != GW_REDUCE_SUM && op != GW_REDUCE_AVG)
      gw::fail(GW_ERR_UNSUPPORTED, std::string("the compressed reduce-scatter sums or averages; op ") +
                                       gw::comm::op_name(op) + " needs gw_reduce_scatter");
  } else if (o.count != i.count * n) {
    gw::fail(GW_ERR_INVALID_ARGUMENT, "allgather_compressed: out has " + str(o.count) + " elements; it needs " +
                                          str(n) + " (ranks) x " + str(i.count) + " (in)");
  }
  gw::coll::ShardArgs a;
  a.codec = codec;
  a.ef = ef;
  a.ctx = ctx;
  a.op = scatter ? op : GW_REDUCE_SUM;
  a.count = scatter ? o.count : i.count;
  const bool direct = i.memory == GW_MEMORY_HOST && o.memory == GW_MEMORY_HOST && i.dtype == GW_DTYPE_F32;
  if (direct) {
    a.in = static_cast<const float*>(i.data);
    a.out = static_cast<float*>(o.data);
    *request = gw::comm::start_shards_compressed(c, kind, a);
    return GW_OK;
  }
  auto staged_in = std::make_shared<std::vector<float>>(i.count);
  auto staged_out = std::make_shared<std::vector<float>>(o.count);
  gw::staging::read_f32(i, staged_in->data());
  a.in = staged_in->data();
  a.out = staged_out->data();
  const gw_tensor target = o;
  *request = gw::comm::start_shards_compressed(
      c, kind, a, [staged_in, staged_out, target] { gw::staging::write_f32(staged_out->data(), target); });
  return GW_OK;
}

gw::Codec* codec_of(gw_codec* codec) { return gw::require(codec, "codec")->impl.get(); }
gw::ErrorFeedback& ef_of(gw_error_feedback* ef) { return gw::require(ef, "error feedback")->impl; }

}  // namespace

extern "C" {

GW_API gw_status gw_reduce_scatter_compressed_start(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                                    const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                                                    gw_request** request) {
  return gw::guard([&] {
    return start(CollectiveKind::ReduceScatter, comm, codec_of(codec), nullptr, context, in, out, op, request);
  });
}

GW_API gw_status gw_reduce_scatter_compressed(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                              const gw_tensor* in, gw_tensor* out, gw_reduce_op op) {
  return gw::capi::blocking(
      comm, [&](gw_request** r) { return gw_reduce_scatter_compressed_start(comm, codec, context, in, out, op, r); });
}

GW_API gw_status gw_reduce_scatter_compressed_ef_start(gw_comm* comm, gw_error_feedback* ef,
                                                       const gw_codec_context* context, const gw_tensor* in,
                                                       gw_tensor* out, gw_reduce_op op, gw_request** request) {
  return gw::guard([&] {
    gw::ErrorFeedback& e = ef_of(ef);
    return start(CollectiveKind::ReduceScatter, comm, &e.codec(), &e, context, in, out, op, request);
  });
}

GW_API gw_status gw_reduce_scatter_compressed_ef(gw_comm* comm, gw_error_feedback* ef, const gw_codec_context* context,
                                                 const gw_tensor* in, gw_tensor* out, gw_reduce_op op) {
  return gw::capi::blocking(
      comm, [&](gw_request** r) { return gw_reduce_scatter_compressed_ef_start(comm, ef, context, in, out, op, r); });
}

GW_API gw_status gw_allgather_compressed_start(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                               const gw_tensor* in, gw_tensor* out, gw_request** request) {
  return gw::guard([&] {
    return start(CollectiveKind::Allgather, comm, codec_of(codec), nullptr, context, in, out, GW_REDUCE_SUM, request);
  });
}

GW_API gw_status gw_allgather_compressed(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                         const gw_tensor* in, gw_tensor* out) {
  return gw::capi::blocking(
      comm, [&](gw_request** r) { return gw_allgather_compressed_start(comm, codec, context, in, out, r); });
}

GW_API gw_status gw_allgather_compressed_ef_start(gw_comm* comm, gw_error_feedback* ef, const gw_codec_context* context,
                                                  const gw_tensor* in, gw_tensor* out, gw_request** request) {
  return gw::guard([&] {
    gw::ErrorFeedback& e = ef_of(ef);
    return start(CollectiveKind::Allgather, comm, &e.codec(), &e, context, in, out, GW_REDUCE_SUM, request);
  });
}

GW_API gw_status gw_allgather_compressed_ef(gw_comm* comm, gw_error_feedback* ef, const gw_codec_context* context,
                                            const gw_tensor* in, gw_tensor* out) {
  return gw::capi::blocking(
      comm, [&](gw_request** r) { return gw_allgather_compressed_ef_start(comm, ef, context, in, out, r); });
}

}  // extern "C"
