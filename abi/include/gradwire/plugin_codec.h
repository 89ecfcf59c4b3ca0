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
