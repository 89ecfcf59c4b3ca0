/*
 * gradwire/types.h — the vocabulary shared by applications and plugins.
 *
 * Plain C (C99 and later, C++11 and later). Included by gradwire.h and plugin.h; an application or a
 * plugin never needs to include it directly. Conventions (docs/abi.md):
 *   - every options / descriptor struct starts with `uint32_t struct_size`, set by its *_INIT macro;
 *     structs only grow at the end, and a field past `struct_size` counts as absent;
 *   - enums are 32-bit (each has a *_FORCE_32BIT member) so they may sit in structs;
 *   - every function and callback says which thread may call it with a thread tag (the list is at
 *     the top of gradwire.h).
 */
#ifndef GRADWIRE_TYPES_H
#define GRADWIRE_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* ABI version of these headers. A plugin built against major M loads only into a host of major M. */
#define GW_ABI_VERSION_MAJOR 1
#define GW_ABI_VERSION_MINOR 6

#if defined(_WIN32)
#define GW_EXPORT __declspec(dllexport)
#define GW_IMPORT __declspec(dllimport)
#else
#define GW_EXPORT __attribute__((visibility("default")))
#define GW_IMPORT
#endif

/* GW_API marks functions exported by libgradwire. */
#if defined(GW_BUILDING_LIBRARY)
#define GW_API GW_EXPORT
#else
#define GW_API GW_IMPORT
#endif

#ifdef __cplusplus
#define GW_EXTERN_C_BEGIN extern "C" {
#define GW_EXTERN_C_END }
#else
#define GW_EXTERN_C_BEGIN
#define GW_EXTERN_C_END
#endif

/* Whether the struct at `p` (of type `type`) carries `member`: its struct_size covers the member. A
 * receiver accepts any struct_size that covers the members of the struct's first version, and treats a
 * later member the size does not cover as absent (its default). */
#define GW_STRUCT_HAS(p, type, member) \
  ((size_t)(p)->struct_size >= offsetof(type, member) + sizeof(((type*)0)->member))

GW_EXTERN_C_BEGIN

/* The one status type. 0 is success, 1 "not finished yet", 2 "done, but the membership changed" (elastic
 * mode only), negative values are errors. After an error, gw_last_error() on the same thread says what
 * was wrong and what to do. */
typedef enum gw_status {
  GW_OK = 0,
  GW_IN_PROGRESS = 1,
  /* Since 1.5. Elastic mode only ([elastic] enabled): a rank failed, the survivors agreed on a new
   * membership and rebuilt the communicator; the step was discarded and the state put back to the last
   * step every member completed. Re-read gw_comm_rank and gw_comm_size, then redo the step. Not an
   * error; never returned to an application that did not opt in (docs/elastic.md). */
  GW_MEMBERSHIP_CHANGED = 2,
  GW_ERR_INVALID_ARGUMENT = -1,  /* NULL handle, struct_size 0, value out of range */
  GW_ERR_NO_MEMORY = -2,
  GW_ERR_NOT_FOUND = -3,         /* no such plugin, component, key, extension */
  GW_ERR_PLUGIN = -4,            /* a plugin could not be loaded or is malformed */
  GW_ERR_VERSION = -5,           /* ABI or format version not supported */
  GW_ERR_CONFIG = -6,            /* configuration invalid */
  GW_ERR_UNSUPPORTED = -7,       /* valid request this build or component cannot do */
  GW_ERR_TIMEOUT = -8,
  GW_ERR_MISMATCH = -9,          /* ranks disagree (count, dtype, op, config, plugin versions) */
  GW_ERR_TRANSPORT = -10,        /* I/O failure, a peer died */
  GW_ERR_CORRUPT = -11,          /* a payload is malformed */
  GW_ERR_ABORTED = -12,          /* gw_comm_abort was called */
  GW_ERR_BUFFER_TOO_SMALL = -13,
  GW_ERR_STATE = -14,            /* call not valid in the object's current state */
  GW_ERR_INTERNAL = -15,
  GW_STATUS_FORCE_32BIT = 0x7fffffff
} gw_status;

/* Element types. Values are part of the wire format and never change. */
typedef enum gw_dtype {
  GW_DTYPE_F32 = 0,
  GW_DTYPE_F64 = 1,
  GW_DTYPE_F16 = 2,
  GW_DTYPE_BF16 = 3,
  GW_DTYPE_I32 = 4,
  GW_DTYPE_I64 = 5,
  GW_DTYPE_U8 = 6, /* raw bytes */
  GW_DTYPE_FORCE_32BIT = 0x7fffffff
} gw_dtype;

/* Where a buffer lives. */
typedef enum gw_memory_kind {
  GW_MEMORY_HOST = 0,
  GW_MEMORY_CUDA = 1,
  GW_MEMORY_FORCE_32BIT = 0x7fffffff
} gw_memory_kind;

typedef enum gw_reduce_op {
  GW_REDUCE_SUM = 0,
  GW_REDUCE_AVG = 1,
  GW_REDUCE_MIN = 2,
  GW_REDUCE_MAX = 3,
  GW_REDUCE_FORCE_32BIT = 0x7fffffff
} gw_reduce_op;

typedef enum gw_log_level {
  GW_LOG_ERROR = 0,
  GW_LOG_WARN = 1,
  GW_LOG_INFO = 2,
  GW_LOG_DEBUG = 3,
  GW_LOG_TRACE = 4,
  GW_LOG_FORCE_32BIT = 0x7fffffff
} gw_log_level;

/* Receives log lines. `component` and `message` are valid only during the call.
 * thread: any: called from any thread that logs, so it must be thread-safe. */
typedef void (*gw_log_fn)(void* user, gw_log_level level, const char* component, const char* message);

/* A buffer: pointer, element count, element type, memory kind and, for CUDA memory, the device and
 * the stream its work is ordered on (NULL: the legacy default stream). The struct describes memory
 * it does not own. */
typedef struct gw_tensor {
  uint32_t struct_size;
  gw_memory_kind memory;
  gw_dtype dtype;
  int32_t device; /* CUDA device ordinal; ignored for host memory */
  void* data;
  uint64_t count; /* elements, not bytes */
  void* stream;   /* cudaStream_t or NULL */
} gw_tensor;

#define GW_TENSOR_INIT {(uint32_t)sizeof(gw_tensor), GW_MEMORY_HOST, GW_DTYPE_F32, 0, NULL, 0, NULL}

/* Codec properties, shared by the application API (gw_codec_properties) and codec plugins. */
enum {
  GW_CODEC_LOSSLESS = 1u << 0,        /* decode(encode(x)) == x bit for bit */
  GW_CODEC_SPARSE = 1u << 1,          /* the body holds a subset of the coordinates */
  GW_CODEC_SUMMABLE = 1u << 2,        /* encoded bodies can be reduced elementwise (fp16, bf16) */
  GW_CODEC_SHARED_INDICES = 1u << 3,  /* every rank selects the same coordinates (random-k) */
  GW_CODEC_CUDA = 1u << 4,            /* encode/decode accept GW_MEMORY_CUDA tensors */
  GW_CODEC_STATEFUL = 1u << 5,        /* output depends on gw_codec_context.step / seed */
  /* since 1.4. Reduced in rounds (the codec vtable's round_plan): set by the runtime, not by a plugin. Such
   * a codec keeps its own error feedback (gw_allreduce_compressed_ef refuses it) and its own state
   * (gw_codec_save_state). */
  GW_CODEC_ROUNDS = 1u << 6
};

typedef struct gw_codec_properties {
  uint32_t struct_size;
  uint32_t flags;       /* GW_CODEC_* bits */
  gw_dtype sum_dtype;   /* SUMMABLE codecs: the element type of the encoded body */
  uint32_t dtypes;      /* bit (1u << gw_dtype) for every input dtype accepted */
} gw_codec_properties;

#define GW_CODEC_PROPERTIES_INIT {(uint32_t)sizeof(gw_codec_properties), 0u, GW_DTYPE_F32, 0u}

/* The 2-D view of one tensor inside a buffer handed to a codec: elements [offset, offset + rows * cols)
 * of the buffer, row-major. A tensor of rank k >= 2 is viewed as dims[0] x (dims[1] * ... * dims[k-1]), a
 * vector of n elements as n x 1, a scalar as 1 x 1 (gw_sync_register_shape). A fixed layout: it never
 * grows. Since 1.4. */
typedef struct gw_tensor_shape {
  uint64_t offset;
  uint64_t rows;
  uint64_t cols;
} gw_tensor_shape;

/* Per-call context. */
typedef struct gw_codec_context {
  uint32_t struct_size;
  uint64_t seed;        /* the same on every rank: random-k coordinates, stochastic rounding */
  uint64_t step;        /* training step or call counter, mixed into random streams */
  uint32_t rank;
  uint32_t world_size;  /* for pre-division (fp16 overflow) */
  void* workspace;      /* scratch of the size workspace_size asked for, in the tensor's memory */
  uint64_t workspace_bytes;
  /* since 1.4. Names the buffer across calls, the same on every rank (gw_sync: the bucket's index): a
   * codec that keeps state between calls (PowerSGD's warm-started factors) keeps it under this id. */
  uint64_t buffer_id;
  /* since 1.4. The tensors inside the buffer, by increasing offset, non-overlapping; elements outside
   * every shape are plain vectors. NULL (num_shapes 0): the buffer is one flat vector. Valid during
   * the call. */
  const gw_tensor_shape* shapes;
  uint32_t num_shapes; /* since 1.4 */
} gw_codec_context;

/* gw_codec decode flags */
enum {
  GW_DECODE_ACCUMULATE = 1u << 0 /* out += decoded, instead of out = decoded */
};

#define GW_CODEC_CONTEXT_INIT {(uint32_t)sizeof(gw_codec_context), 0u, 0u, 0u, 1u, NULL, 0u, 0u, NULL, 0u}

GW_EXTERN_C_END

#endif /* GRADWIRE_TYPES_H */
