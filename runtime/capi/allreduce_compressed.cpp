// gw_allreduce_compressed_start / gw_allreduce_compressed of the C ABI.
#include <gradwire/gradwire.h>

#include <cstring>
#include <functional>
#include <string>
#include <memory>
#include <vector>

#include "capi/blocking.hpp"
#include "codec/codec.hpp"
#include "codec/device.hpp"
#include "codec/staging.hpp"
#include "collectives/compressed.hpp"
#include "collectives/two_level.hpp"
#include "comm/allreduce_start.hpp"
#include "comm/communicator.hpp"
#include "core/abi_struct.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"
#include "ef/error_feedback.hpp"

namespace {

// f32, f16 or bf16 in host or CUDA memory. Anything but f32 host memory is staged through an f32 host
// buffer (codec/staging.hpp): the reduction accumulates in f32 and the result is rounded once.
gw_tensor checked_tensor(const gw_tensor* t, const char* what) {
  const gw_tensor out = gw::read_tensor(t, what);
  gw::require_dtype(out, what, (1u << GW_DTYPE_F32) | (1u << GW_DTYPE_F16) | (1u << GW_DTYPE_BF16),
                    "the compressed allreduce", "it reduces f32, f16 and bf16; use gw_allreduce for others");
  return out;
}

// Whether the compressed allreduce runs on the device: f32 CUDA tensors on one device and stream, a codec
// with CUDA kernels (error feedback keeps its residuals on the device then) and the flat algorithms (the
// two-level one sums the node's values on the host). Anything else is staged through host memory.
bool on_device(gw::comm::Communicator& comm, gw::Codec& codec, const gw_tensor& i, const gw_tensor& o) {
  return i.memory == GW_MEMORY_CUDA && o.memory == GW_MEMORY_CUDA && i.dtype == GW_DTYPE_F32 &&
         o.dtype == GW_DTYPE_F32 && i.device == o.device && i.stream == o.stream &&
         (codec.properties().flags & GW_CODEC_CUDA) &&
         !gw::coll::use_two_level(comm.topology(), comm.settings().two_level);
}

// Starts the collective; throws gw::Error (the C functions below turn it into their status).
gw_status start(gw_comm* comm, gw::Codec* codec, gw::ErrorFeedback* ef, const gw_codec_context* context,
                const gw_tensor* in, gw_tensor* out, gw_reduce_op op, gw_request** request) {
  gw::require(comm, "comm");
  gw::require(request, "request (output)");
  *request = nullptr;
  const gw_codec_context given = gw::abi::read_or_default(context, "context");
  gw_codec_context ctx = gw::abi::Struct<gw_codec_context>::defaults();
  ctx.seed = given.seed;
  ctx.step = given.step;
  ctx.buffer_id = given.buffer_id;
  const gw_tensor i = checked_tensor(in, "in");
  const gw_tensor o = checked_tensor(out, "out");
  if (i.count != o.count)
    gw::fail(GW_ERR_INVALID_ARGUMENT, "in has " + std::to_string(i.count) + " elements, out " +
                                          std::to_string(o.count) + "; allreduce needs the same count");
  if (op != GW_REDUCE_SUM && op != GW_REDUCE_AVG)
    gw::fail(GW_ERR_UNSUPPORTED, std::string("the compressed allreduce sums or averages; op ") +
                                     gw::comm::op_name(op) + " needs gw_allreduce");
  gw::coll::check_shapes(given.shapes, given.num_shapes, o.count);
  if (ef != nullptr && codec->has_rounds())
    gw::fail(GW_ERR_UNSUPPORTED, "codec '" + codec->name() + "' keeps its own error feedback inside its rounds ([codec." +
                                     codec->name() + "]); use gw_allreduce_compressed without gw_error_feedback");
  gw::coll::CompressedArgs a;
  if (given.num_shapes > 0) a.shapes.assign(given.shapes, given.shapes + given.num_shapes);
  a.codec = codec;
  a.ef = ef;
  a.ctx = ctx;
  a.count = o.count;
  a.op = op;
  const bool direct = i.memory == GW_MEMORY_HOST && o.memory == GW_MEMORY_HOST && i.dtype == GW_DTYPE_F32 &&
                      o.dtype == GW_DTYPE_F32;
  if (on_device(*comm->impl, *codec, i, o)) {
    // Encoded and decoded on the device by the codec's CUDA kernels; only payloads cross to the host.
    // The request completes once the result is in device memory (the stream is waited for). A device
    // this process cannot use is refused here, on the caller's thread, before anything starts.
    gw::device::use_device(o.device);
    a.buf = static_cast<float*>(o.data);
    if (i.data != o.data) a.in = static_cast<const float*>(i.data);
    a.memory = gw::coll::cuda_memory(o.device, o.stream);
    const int device = o.device;
    void* stream = o.stream;
    *request = gw::comm::start_allreduce_compressed(*comm->impl, a, std::nullopt, [device, stream] {
      gw::device::use_device(device);
      gw::device::synchronize(stream);
    });
    return GW_OK;
  }
  if (direct) {
    a.buf = static_cast<float*>(o.data);
    if (i.data != o.data) a.in = static_cast<const float*>(i.data);
    *request = gw::comm::start_allreduce_compressed(*comm->impl, a);
    return GW_OK;
  }
  // Staged: the input read into f32 host memory now, the result written back into `out` when the
  // algorithm completes (the staging buffer lives as long as the collective's closure).
  auto staged = std::make_shared<std::vector<float>>(o.count);
  gw::staging::read_f32(i, staged->data());
  a.buf = staged->data();
  const gw_tensor target = o;
  *request = gw::comm::start_allreduce_compressed(*comm->impl, a, std::nullopt,
                                                  [staged, target] { gw::staging::write_f32(staged->data(), target); });
  return GW_OK;
}

// gw_allreduce_compressed_batch_start: the tensors' rounds in one collective per round
// (coll::allreduce_rounds over several buffers).
gw_status start_batch(gw_comm* comm, uint32_t n, gw_codec* const* codecs, const gw_codec_context* const* contexts,
                      gw_tensor* const* tensors, gw_reduce_op op, gw_request** request) {
  gw::require(comm, "comm");
  gw::require(request, "request (output)");
  *request = nullptr;
  if (n == 0) gw::fail(GW_ERR_INVALID_ARGUMENT, "n is 0; a batch holds at least one tensor");
  gw::require(codecs, "codecs");
  gw::require(tensors, "tensors");
  if (op != GW_REDUCE_SUM && op != GW_REDUCE_AVG)
    gw::fail(GW_ERR_UNSUPPORTED, std::string("the compressed allreduce sums or averages; op ") +
                                     gw::comm::op_name(op) + " needs gw_allreduce");
  std::vector<gw::coll::CompressedArgs> buffers(n);
  std::vector<gw_tensor> targets(n);
  // Tensors that are not f32 host memory are staged: read now, written back when the batch completes.
  auto staged = std::make_shared<std::vector<std::vector<float>>>(n);
  std::vector<uint32_t> staged_tensors;
  for (uint32_t k = 0; k < n; ++k) {
    const std::string which = "tensors[" + std::to_string(k) + "]";
    gw::Codec* codec = gw::require(codecs[k], ("codecs[" + std::to_string(k) + "]").c_str())->impl.get();
    if (!codec->has_rounds())
      gw::fail(GW_ERR_UNSUPPORTED, "codec '" + codec->name() + "' does not reduce in rounds; a batch concatenates "
                                       "the round vectors of codecs of rounds (powersgd): use "
                                       "gw_allreduce_compressed for each tensor");
    if (codec->name() != codecs[0]->impl->name())
      gw::fail(GW_ERR_INVALID_ARGUMENT, "codecs[" + std::to_string(k) + "] is '" + codec->name() + "' but codecs[0] '" +
                                            codecs[0]->impl->name() + "'; a batch takes codecs of one name");
    const gw_codec_context given =
        gw::abi::read_or_default(contexts ? contexts[k] : nullptr, ("contexts[" + std::to_string(k) + "]").c_str());
    const gw_tensor t = checked_tensor(gw::require(tensors[k], which.c_str()), which.c_str());
    gw::coll::check_shapes(given.shapes, given.num_shapes, t.count);
    gw::coll::CompressedArgs& a = buffers[k];
    a.ctx = gw::abi::Struct<gw_codec_context>::defaults();
    a.ctx.seed = given.seed;
    a.ctx.step = given.step;
    a.ctx.buffer_id = given.buffer_id;
    if (given.num_shapes > 0) a.shapes.assign(given.shapes, given.shapes + given.num_shapes);
    a.codec = codec;
    a.count = t.count;
    a.op = op;
    if (t.memory == GW_MEMORY_HOST && t.dtype == GW_DTYPE_F32) {
      a.buf = static_cast<float*>(t.data);
    } else {
      (*staged)[k].resize(t.count);
      gw::staging::read_f32(t, (*staged)[k].data());
      a.buf = (*staged)[k].data();
      targets[k] = t;
      staged_tensors.push_back(k);
    }
  }
  std::function<void()> finish;
  if (!staged_tensors.empty())
    finish = [staged, targets, staged_tensors] {
      for (uint32_t k : staged_tensors) gw::staging::write_f32((*staged)[k].data(), targets[k]);
    };
  *request = gw::comm::start_allreduce_rounds(*comm->impl, std::move(buffers), std::nullopt, std::move(finish));
  return GW_OK;
}

}  // namespace

extern "C" {

GW_API gw_status gw_allreduce_compressed_batch_start(gw_comm* comm, uint32_t n, gw_codec* const* codecs,
                                                     const gw_codec_context* const* contexts,
                                                     gw_tensor* const* tensors, gw_reduce_op op,
                                                     gw_request** request) {
  return gw::guard([&] { return start_batch(comm, n, codecs, contexts, tensors, op, request); });
}

GW_API gw_status gw_allreduce_compressed_batch(gw_comm* comm, uint32_t n, gw_codec* const* codecs,
                                               const gw_codec_context* const* contexts, gw_tensor* const* tensors,
                                               gw_reduce_op op) {
  return gw::capi::blocking(comm, [&](gw_request** r) {
    return gw_allreduce_compressed_batch_start(comm, n, codecs, contexts, tensors, op, r);
  });
}

GW_API gw_status gw_allreduce_compressed_start(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                               const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                                               gw_request** request) {
  return gw::guard(
      [&] { return start(comm, gw::require(codec, "codec")->impl.get(), nullptr, context, in, out, op, request); });
}

GW_API gw_status gw_allreduce_compressed_ef_start(gw_comm* comm, gw_error_feedback* ef,
                                                  const gw_codec_context* context, const gw_tensor* in,
                                                  gw_tensor* out, gw_reduce_op op, gw_request** request) {
  return gw::guard([&] {
    gw::ErrorFeedback& e = gw::require(ef, "error feedback")->impl;
    return start(comm, &e.codec(), &e, context, in, out, op, request);
  });
}

GW_API gw_status gw_allreduce_compressed(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                         const gw_tensor* in, gw_tensor* out, gw_reduce_op op) {
  return gw::capi::blocking(
      comm, [&](gw_request** r) { return gw_allreduce_compressed_start(comm, codec, context, in, out, op, r); });
}

GW_API gw_status gw_allreduce_compressed_ef(gw_comm* comm, gw_error_feedback* ef, const gw_codec_context* context,
                                            const gw_tensor* in, gw_tensor* out, gw_reduce_op op) {
  return gw::capi::blocking(
      comm, [&](gw_request** r) { return gw_allreduce_compressed_ef_start(comm, ef, context, in, out, op, r); });
}

}  // extern "C"
