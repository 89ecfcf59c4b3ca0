/*
 * gradwire/plugin_codec.h — the codec's vtable and the header of its encoded bytes. All a codec
 * author includes (with plugin_core.h, which it includes). The guide: docs/plugin-guide.md.
 */
#ifndef GRADWIRE_PLUGIN_CODEC_H
#define GRADWIRE_PLUGIN_CODEC_H

#include "plugin_core.h"

GW_EXTERN_C_BEGIN

/* ------------------------------------------------------------------------------------------------
 * Codecs: a dense fp32/fp16/bf16 buffer to bytes and back.
 *
 * The runtime writes and checks the wire header (see gw_wire_header); a codec writes and reads only
 * the body. A CUDA implementation must write the same body bytes as the CPU implementation so that
 * any rank can decode any other rank's payload.
 * ---------------------------------------------------------------------------------------------- */

/* The most rounds one codec's sequence may have. Since 1.4. */
#define GW_CODEC_MAX_ROUNDS 8u

/* What round_plan reports. Since 1.4. */
typedef struct gw_codec_round_plan {
  uint32_t struct_size;
  uint32_t rounds;                          /* reductions, 1 .. GW_CODEC_MAX_ROUNDS */
  uint64_t elements[GW_CODEC_MAX_ROUNDS];   /* f32 elements of each round's vector (0: the round is skipped) */
  /* How the vectors travel: NULL or "none": summed exactly in f32; the name of another codec
   * ("fp16", "int8"): its compressed allreduce sums them (lossy, bit-identical on every rank). The same
   * for every count; static storage or the codec's, valid while it lives. */
  const char* wire_codec;
} gw_codec_round_plan;

#define GW_CODEC_ROUND_PLAN_INIT {(uint32_t)sizeof(gw_codec_round_plan), 0u, {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u}, NULL}

typedef struct gw_codec_vtable {
  uint32_t struct_size;

  /* Creates a codec instance from its validated configuration.
   * thread: any; instances are independent. */
  gw_status (*create)(void* plugin_state, const gw_host* host, const gw_config* config, void** codec);
  /* thread: exclusive: no call on the codec in flight. */
  void (*destroy)(void* codec);

  /* thread: any. */
  gw_status (*properties)(void* codec, gw_codec_properties* out);

  /* Upper bound of the body size in bytes for `count` elements of `dtype`, and the workspace needed.
   * thread: any. */
  gw_status (*max_encoded_size)(void* codec, gw_dtype dtype, uint64_t count, uint64_t* body_bytes,
                                uint64_t* workspace_bytes);

  /* Encodes `in` into `body` (capacity `body_capacity`), sets *body_size. For CUDA tensors the work is
   * ordered on in->stream and *body_size is valid once the call returns.
   * thread: serialized. */
  gw_status (*encode)(void* codec, const gw_codec_context* ctx, const gw_tensor* in, void* body,
                      uint64_t body_capacity, uint64_t* body_size);

  /* Decodes `body` into `out` (count and dtype given by out). Must check every length and index
   * against body_size and out->count and return GW_ERR_CORRUPT for anything malformed.
   * thread: serialized. */
  gw_status (*decode)(void* codec, const gw_codec_context* ctx, const void* body, uint64_t body_size,
                      gw_tensor* out, uint32_t flags);

  /* Reserved; this version of the host never calls it. Set NULL. thread: any. */
  const void* (*get_extension)(void* codec, const char* id);

  /* ---- since 1.4: codecs whose allreduce is a sequence of linear reductions ("rounds") ----------
   * Optional, all NULL for a codec of one exchange (or a vtable whose struct_size ends before them).
   * A codec that sets round_plan must set round. The compressed allreduce of such a codec runs, for
   * each buffer: round(0) writes round 0's f32 vector from the input; the runtime sums it over the
   * ranks (every rank gets the same bits); round(k) reads that sum, does local work and writes round
   * k's vector; ...; round(R) reads the last sum and writes the buffer's sum over the ranks into out
   * (the runtime divides it for an average). Other buffers' rounds run between them, so one buffer's
   * local work overlaps another's transfer. docs/plugin-guide.md. */

  /* The rounds for `count` elements with ctx's shapes: fills *plan (plan->struct_size is the host's).
   * A shape the codec cannot take (rank too large, sizes that do not add up) is GW_ERR_INVALID_ARGUMENT
   * with set_error. Since 1.4. thread: serialized. */
  gw_status (*round_plan)(void* codec, const gw_codec_context* ctx, uint64_t count, gw_codec_round_plan* plan);
  /* One round, as above: `in` the input (every call of one buffer's sequence gets the same one),
   * `reduced` the sum of round - 1's vector (NULL for round 0), `next` round's vector to write (NULL
   * for the last round), `out` the result (NULL but for the last round; it may be `in`). Rounds of one
   * buffer_id come in order; a sequence is never left unfinished but by an error.
   * Since 1.4. thread: serialized. */
  gw_status (*round)(void* codec, const gw_codec_context* ctx, uint32_t round, const gw_tensor* in,
                     const gw_tensor* reduced, gw_tensor* next, gw_tensor* out);
  /* The state the codec keeps between calls (warm starts, residuals) as a blob, for checkpoints: with
   * buf NULL, *size is the bytes needed; otherwise writes at most `capacity` bytes (too few:
   * GW_ERR_BUFFER_TOO_SMALL). load_state replaces the state by such a blob (a damaged one is
   * GW_ERR_CORRUPT, the state unchanged). Optional (NULL: the codec keeps no state).
   * Since 1.4. thread: serialized. */
  gw_status (*save_state)(void* codec, void* buf, uint64_t capacity, uint64_t* size);
  gw_status (*load_state)(void* codec, const void* buf, uint64_t size);
} gw_codec_vtable;

/* ------------------------------------------------------------------------------------------------
 * Wire format: every encoded payload starts with this header, little-endian, 32 bytes. Written and
 * checked by the runtime; described byte by byte in docs/wire-format.md.
 * ---------------------------------------------------------------------------------------------- */

#define GW_WIRE_MAGIC 0x52574747u /* "GGWR" read as a little-endian u32: bytes 'G','G','W','R' */
#define GW_WIRE_FORMAT_VERSION 1u
#define GW_WIRE_HEADER_SIZE 32u

typedef struct gw_wire_header {
  uint32_t magic;
  uint16_t format_version;
  uint16_t flags;       /* reserved, 0 */
  uint32_t codec_id;    /* FNV-1a 32-bit hash of the codec's name */
  uint32_t dtype;       /* gw_dtype of the decoded elements */
  uint64_t count;       /* decoded element count */
  uint64_t body_length; /* bytes following the header */
} gw_wire_header;

GW_EXTERN_C_END

#endif /* GRADWIRE_PLUGIN_CODEC_H */
