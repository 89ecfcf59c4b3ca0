#include <cstring>
#include <string>

#include "codec/wire.hpp"
#include "collectives/compressed.hpp"
#include "collectives/pipeline.hpp"
#include "core/bytes.hpp"
#include "core/error.hpp"
#include "kernels/reduce.hpp"

namespace gw::coll {
namespace {

// A GW_CODEC_SHARED_INDICES body is laid out like random-k's (docs/wire-format.md): a 24-byte preamble
// with the value format at byte 0 (0 f32, 1 f16) and k at bytes 4..7, then the k values in coordinate
// order. Every rank that encoded with the same seed, step and count selected the same coordinates, so
// summing the value arrays elementwise sums the sparse vectors.
constexpr uint64_t kPreamble = 24;

uint32_t le32(const unsigned char* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

struct Values {
  uint64_t k = 0;
  const unsigned char* data = nullptr;
  bool half = false;
};

Values parse(const std::string& codec, const PayloadBuffer& payload) {
  const unsigned char* body = payload.data + GW_WIRE_HEADER_SIZE;
  const uint64_t length = payload.size - GW_WIRE_HEADER_SIZE;
  Values v;
  if (length >= kPreamble && body[0] <= 1) {
    v.half = body[0] == 1;
    v.k = le32(body + 4);
    v.data = body + kPreamble;
    if (length == kPreamble + v.k * (v.half ? 2 : 4)) return v;
  }
  fail(GW_ERR_UNSUPPORTED, "codec '" + codec + "' declares GW_CODEC_SHARED_INDICES but its body is not laid out as "
                           "random-k's (24-byte preamble, value format at byte 0, k at byte 4, then the values); "
                           "the compressed allreduce cannot reduce its values");
}

}  // namespace

// For codecs whose ranks all select the same coordinates (random-k with the shared seed): each piece of
// `in` is encoded, the k values of every piece are reduced as one dense f32 array (the dense allreduce)
// and averaged there, and each piece's payload is rewritten with the resulting values in f32 and decoded
// into `buf` on every rank. The values are a small fraction of the buffer, so the pieces are not
// pipelined, and the buffer is touched only by the encoding (read) and the decoding (written once).
Task allreduce_shared_indices(Collective& c, CodecOps& ops, const float* in, float* buf, uint64_t count,
                              gw_reduce_op op, uint64_t chunk_elements, uint64_t ring_threshold_bytes) {
  const Pieces pieces = split_even(0, count, piece_count(count, chunk_elements, 1));
  std::vector<PayloadBuffer> payloads(pieces.size());
  std::vector<uint64_t> first(pieces.size() + 1, 0);  // piece i's values at [first[i], first[i + 1])
  std::vector<float> values;
  for (size_t i = 0; i < pieces.size(); ++i) {
    PayloadBuffer& p = payloads[i];
    p.reserve(ops.max_payload(pieces.count[i]));
    p.size = ops.encode(pieces.offset[i], in + pieces.offset[i], pieces.count[i], p.data, p.capacity);
    const Values v = parse(ops.codec().name(), p);
    for (uint64_t j = 0; j < v.k; ++j) {
      if (v.half) {
        values.push_back(kernels::f16_to_f32(uint16_t(v.data[2 * j] | v.data[2 * j + 1] << 8)));
      } else {
        float f;
        bytes::get_f32s(v.data + 4 * j, &f, 1);
        values.push_back(f);
      }
    }
    first[i + 1] = values.size();
  }
  co_await allreduce_dense(c, values.data(), values.size(), GW_DTYPE_F32, GW_REDUCE_SUM, ring_threshold_bytes);
  // The decoded buffer holds these values and zeros: averaging the values is averaging the buffer.
  if (op == GW_REDUCE_AVG) divide(values.data(), values.size(), GW_DTYPE_F32, c.size());

  PayloadBuffer summed;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const uint64_t k = first[i + 1] - first[i];
    const uint64_t length = kPreamble + 4 * k;
    summed.reserve(GW_WIRE_HEADER_SIZE + length);
    unsigned char* body = summed.data + GW_WIRE_HEADER_SIZE;
    std::memcpy(body, payloads[i].data + GW_WIRE_HEADER_SIZE, kPreamble);
    body[0] = 0;  // the sums travel back as f32, whatever the encoder's value format
    bytes::put_f32s(body + kPreamble, values.data() + first[i], k);
    wire::Header h;
    h.codec_id = ops.codec().id();
    h.dtype = GW_DTYPE_F32;
    h.count = pieces.count[i];
    h.body_length = length;
    wire::write_header(summed.data, h);
    summed.size = GW_WIRE_HEADER_SIZE + length;
    ops.decode(pieces.offset[i], summed.data, summed.size, buf + pieces.offset[i], pieces.count[i], false);
  }
}

}  // namespace gw::coll
