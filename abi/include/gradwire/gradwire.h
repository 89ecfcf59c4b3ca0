/*
 * gradwire/gradwire.h — the application API of gradwire.
 *
 * Plain C (C99 and later, C++11 and later); the same functions serve the C++, Rust, Go, Julia and
 * Python bindings. Conventions (docs/abi.md):
 *   - every function returns gw_status unless it cannot fail; on error, gw_last_error() on the same
 *     thread holds a message naming what was wrong and what to do. No exception or abort crosses it.
 *   - options structs start with struct_size; fill them with their *_INIT macro.
 *   - whoever creates an object destroys it, with the paired *_destroy call. Every returned pointer
 *     says how long it stays valid.
 *   - every function, and every callback of this header and the plugin headers, carries exactly one
 *     thread tag, "thread: <tag>", from the list below (tests/abi/check_header_tags.py checks it):
 *       thread: any        any thread, also concurrently with other calls on the same object.
 *       thread: serialized any thread, one call at a time per object (codec, error feedback, transport,
 *                          schedule instance): the caller serializes the calls on one object.
 *       thread: comm       the communicator's thread (the one that created it), for the communicator
 *                          and for everything over it (requests, synchronizer, parameter server, cache).
 *       thread: exclusive  any thread, with no other call on the object in flight (destroy calls).
 *       thread: init       plugins: while the runtime loads the plugin or creates the component's
 *                          object, on that call's thread; never concurrently with another call on it.
 *       thread: in-call    a callback: on the thread of the call it was handed to, during that call.
 *     Details may follow the tag ("thread: any; runtimes are independent.").
 *   - a function or struct member added after ABI 1.0 says so: "since 1.1". A "since" note on a struct
 *     covers the members it had then; members appended later carry their own (docs/abi.md).
 */
#ifndef GRADWIRE_GRADWIRE_H
#define GRADWIRE_GRADWIRE_H

#include "types.h" /* same folder: works installed, in the tree, with or without -I */

GW_EXTERN_C_BEGIN

/* ------------------------------------------------------------------------------------------------
 * Versions and errors
 * ---------------------------------------------------------------------------------------------- */

/* The library's version as major * 10000 + minor * 100 + patch. thread: any. */
GW_API uint32_t gw_version(void);
/* The library's version as "major.minor.patch"; static storage. thread: any. */
GW_API const char* gw_version_string(void);
/* The ABI version the library implements (GW_ABI_VERSION_MAJOR/MINOR of its headers). thread: any. */
GW_API uint32_t gw_abi_version_major(void);
GW_API uint32_t gw_abi_version_minor(void);

/* A short fixed name for a status ("GW_ERR_CONFIG"); static storage. thread: any. */
GW_API const char* gw_status_string(gw_status status);
/* The message of the last error on this thread, "" if none. Valid until the next gradwire call on
 * this thread. thread: any. */
GW_API const char* gw_last_error(void);

/* Names of enum values, for messages and bindings; static storage, "?" for an unknown value.
 * thread: any. */
GW_API const char* gw_dtype_name(gw_dtype dtype);
/* Size of one element in bytes; 0 for an unknown dtype. thread: any. */
GW_API uint32_t gw_dtype_size(gw_dtype dtype);

/* ------------------------------------------------------------------------------------------------
 * Runtime: the configuration and the loaded plugins.
 * ---------------------------------------------------------------------------------------------- */

typedef struct gw_runtime gw_runtime;

typedef struct gw_runtime_options {
  uint32_t struct_size;
  const char* config_path;          /* TOML file, or NULL */
  const char* config_text;          /* TOML text, or NULL; not both with config_path */
  const char* const* plugin_paths;  /* searched before everything else; may be NULL */
  uint32_t num_plugin_paths;
  gw_log_fn log;                    /* NULL: lines at or above log_level go to stderr */
  void* log_user;
  gw_log_level log_level;
  uint32_t flags;                   /* GW_RUNTIME_* */
} gw_runtime_options;

enum {
  /* Do not apply GRADWIRE_<SECTION>_<KEY> environment overrides. */
  GW_RUNTIME_NO_ENV_OVERRIDES = 1u << 0,
  /* Create the runtime for inspection (what `gradwire plugins` does): plugin name clashes and
   * configured component names that are not loaded are not errors. Use only to list and report. */
  GW_RUNTIME_INSPECT_ONLY = 1u << 1
};

#define GW_RUNTIME_OPTIONS_INIT \
  {(uint32_t)sizeof(gw_runtime_options), NULL, NULL, NULL, 0u, NULL, NULL, GW_LOG_WARN, 0u}

/* Reads and validates the configuration (file or text, then environment overrides), finds and loads
 * the plugins. Fails with GW_ERR_CONFIG (file:line:column and the nearest valid key in the message)
 * or GW_ERR_PLUGIN / GW_ERR_NOT_FOUND (every path tried, the loader's message).
 * thread: any; runtimes are independent. */
GW_API gw_status gw_runtime_create(const gw_runtime_options* options, gw_runtime** runtime);
/* Destroys the runtime. Objects created from it (codecs, communicators) may outlive it; the plugin
 * libraries they come from stay loaded until the last of them is destroyed.
 * thread: exclusive: no other call on this runtime in flight. */
GW_API gw_status gw_runtime_destroy(gw_runtime* runtime);

typedef enum gw_config_format {
  GW_CONFIG_FORMAT_TOML = 0,      /* every key with its value, defaults included, help as comments */
  GW_CONFIG_FORMAT_REFERENCE = 1, /* Markdown reference of every key of every loaded component */
  GW_CONFIG_FORMAT_FORCE_32BIT = 0x7fffffff
} gw_config_format;
/* Writes the effective configuration as text into buf (capacity `capacity`, NUL included), sets
 * *length to the bytes needed without the NUL. With buf NULL only sets *length; with a capacity too
 * small returns GW_ERR_BUFFER_TOO_SMALL.
 * thread: any. */
GW_API gw_status gw_runtime_config_dump(gw_runtime* runtime, gw_config_format format, char* buf,
                                        size_t capacity, size_t* length);

/* What plugin discovery found: every candidate file, loaded or not. Strings stay valid until the
 * runtime is destroyed. */
typedef struct gw_plugin_info {
  uint32_t struct_size;
  const char* path;        /* the file */
  gw_status status;        /* GW_OK when loaded */
  const char* error;       /* why it did not load, "" when loaded */
  const char* name;        /* "" when not loaded */
  const char* version;
  const char* description;
  uint32_t abi_major;      /* what the plugin was built against; 0 when unknown */
  uint32_t abi_minor;
  uint32_t num_components;
} gw_plugin_info;

#define GW_PLUGIN_INFO_INIT {(uint32_t)sizeof(gw_plugin_info), NULL, GW_OK, NULL, NULL, NULL, NULL, 0u, 0u, 0u}

typedef struct gw_component_info {
  uint32_t struct_size;
  uint32_t kind;    /* 0 codec, 1 schedule, 2 transport (gw_component_kind of plugin.h) */
  const char* name;
  const char* help;
} gw_component_info;

#define GW_COMPONENT_INFO_INIT {(uint32_t)sizeof(gw_component_info), 0u, NULL, NULL}

/* thread: any. */
GW_API gw_status gw_runtime_plugin_count(gw_runtime* runtime, uint32_t* count);
GW_API gw_status gw_runtime_plugin_info(gw_runtime* runtime, uint32_t index, gw_plugin_info* info);
GW_API gw_status gw_runtime_component_info(gw_runtime* runtime, uint32_t plugin_index,
                                           uint32_t component_index, gw_component_info* info);
/* The directories and files searched for plugins, in order. Valid until the runtime is destroyed.
 * thread: any. */
GW_API gw_status gw_runtime_search_path_count(gw_runtime* runtime, uint32_t* count);
GW_API gw_status gw_runtime_search_path(gw_runtime* runtime, uint32_t index, const char** path);

/* ------------------------------------------------------------------------------------------------
 * Codecs on their own: encode and decode a buffer by codec name, without a communicator.
 * The payload is the wire format of docs/wire-format.md: a 32-byte header, then the codec's body.
 * ---------------------------------------------------------------------------------------------- */

typedef struct gw_codec gw_codec;

/* Creates the codec `name` with its [codec.<name>] configuration; NULL name: the [codec] name.
 * thread: any. */
GW_API gw_status gw_codec_create(gw_runtime* runtime, const char* name, gw_codec** codec);
/* thread: exclusive: no call on the codec in flight. */
GW_API gw_status gw_codec_destroy(gw_codec* codec);
/* The codec's name; valid while the codec lives. thread: any. */
GW_API const char* gw_codec_name(const gw_codec* codec);
/* thread: any. */
GW_API gw_status gw_codec_get_properties(gw_codec* codec, gw_codec_properties* properties);
/* Worst-case payload size in bytes (header included) for `count` elements of `dtype`. thread: any. */
GW_API gw_status gw_codec_max_encoded_size(gw_codec* codec, gw_dtype dtype, uint64_t count,
                                           uint64_t* bytes);
/* Encodes `in` into `payload` (capacity bytes); *size is the payload's length. context may be NULL
 * (seed 0, step 0, rank 0, world size 1).
 * thread: serialized. */
GW_API gw_status gw_codec_encode(gw_codec* codec, const gw_codec_context* context, const gw_tensor* in,
                                 void* payload, uint64_t capacity, uint64_t* size);
/* Checks the payload's header against this codec and `out` (codec, dtype, count, lengths), then
 * decodes into `out`; flags: GW_DECODE_ACCUMULATE adds instead of overwriting. A malformed payload
 * is GW_ERR_CORRUPT, another codec's or dtype's GW_ERR_MISMATCH, another format version
 * GW_ERR_VERSION; `out` is then unchanged or partly written, never read out of bounds.
 * thread: serialized. */
GW_API gw_status gw_codec_decode(gw_codec* codec, const gw_codec_context* context, const void* payload,
                                 uint64_t size, gw_tensor* out, uint32_t flags);

/* The state a codec keeps between calls (PowerSGD's warm-started factors and residuals, per
 * gw_codec_context.buffer_id), as a versioned blob with a checksum, for checkpoints: with buf NULL only
 * sets *size; a capacity below it is GW_ERR_BUFFER_TOO_SMALL. A codec that keeps none writes an empty
 * state. Since 1.4. thread: serialized. */
GW_API gw_status gw_codec_save_state(gw_codec* codec, void* buf, uint64_t capacity, uint64_t* size);
/* Replaces the codec's state by a blob gw_codec_save_state wrote (of a codec of the same name). A damaged
 * or truncated blob is GW_ERR_CORRUPT, another codec's GW_ERR_MISMATCH; the state is then unchanged.
 * Since 1.4. thread: serialized. */
GW_API gw_status gw_codec_load_state(gw_codec* codec, const void* buf, uint64_t size);

/* ------------------------------------------------------------------------------------------------
 * Error feedback: a service around any lossy codec. Each buffer (named by a caller-chosen id) keeps
 * the residual of its last encoding in host memory (f32) and adds it to the next input:
 *   x' = x + residual;  payload = encode(x');  residual = x' - decode(payload).
 * Over T steps the sum of what was decoded differs from the sum of the inputs by the last residual
 * only, so the gap does not grow with T. The state is saved and restored as a versioned blob with a
 * checksum (a checkpoint must carry it).
 * ---------------------------------------------------------------------------------------------- */

typedef struct gw_error_feedback gw_error_feedback;

/* Creates error feedback around `codec`, which must outlive it. thread: any. */
GW_API gw_status gw_error_feedback_create(gw_codec* codec, gw_error_feedback** ef);
/* thread: exclusive: no call on it in flight. */
GW_API gw_status gw_error_feedback_destroy(gw_error_feedback* ef);
/* Encodes in + residual[buffer_id] into payload (as gw_codec_encode: header included, capacity from
 * gw_codec_max_encoded_size) and updates that residual; `in` is not modified. A buffer id keeps the
 * element count of its first call (another count is GW_ERR_MISMATCH). Host f32 tensors only.
 * thread: serialized. */
GW_API gw_status gw_error_feedback_encode(gw_error_feedback* ef, uint64_t buffer_id, const gw_codec_context* context,
                                          const gw_tensor* in, void* payload, uint64_t capacity, uint64_t* size);
/* Forgets every residual (e.g. after the model was reloaded). thread: serialized. */
GW_API gw_status gw_error_feedback_reset(gw_error_feedback* ef);
/* Bytes gw_error_feedback_save needs now. thread: serialized. */
GW_API gw_status gw_error_feedback_state_size(gw_error_feedback* ef, uint64_t* size);
/* Writes the state (every buffer's residual) into buf; *size is the bytes written. A capacity below
 * gw_error_feedback_state_size is GW_ERR_BUFFER_TOO_SMALL. thread: serialized. */
GW_API gw_status gw_error_feedback_save(gw_error_feedback* ef, void* buf, uint64_t capacity, uint64_t* size);
/* Replaces the state by a blob gw_error_feedback_save wrote. A damaged or truncated blob is
 * GW_ERR_CORRUPT, another blob version GW_ERR_VERSION, a blob of another codec GW_ERR_MISMATCH; the
 * state is then unchanged. thread: serialized. */
GW_API gw_status gw_error_feedback_load(gw_error_feedback* ef, const void* buf, uint64_t size);

/* ------------------------------------------------------------------------------------------------
 * Communicators: a group of ranks, the transport that connects them, and the collectives over it.
 *
 * Every collective has a nonblocking *_start form returning a gw_request and a blocking form. Buffers
 * are gw_tensors in host memory; a buffer handed to a *_start call belongs to the runtime until its
 * request completes. Every rank must start the same collectives in the same order with the same count,
 * dtype and op: a rank that differs ends every rank's collective with GW_ERR_MISMATCH naming the
 * difference. A collective that fails (mismatch, timeout, dead peer) leaves the communicator failed:
 * destroy it. Behaviour and algorithms: docs/collectives.md; rendezvous and launch: docs/bootstrap.md.
 * ---------------------------------------------------------------------------------------------- */

typedef struct gw_comm gw_comm;
typedef struct gw_request gw_request;

/* An application's own rendezvous (MPI_Allgather, a key-value store, ...): gathers `bytes` bytes from
 * every rank into `out` (world_size * bytes, in rank order). Returns GW_OK or an error status, which
 * gw_comm_create then returns. It must bound its own waits: a rank that never calls it would otherwise
 * hang the others. thread: in-call: inside gw_comm_create, twice (docs/bootstrap.md). */
typedef gw_status (*gw_allgather_fn)(void* user, const void* in, uint64_t bytes, void* out);

typedef struct gw_comm_options {
  uint32_t struct_size;
  int64_t rank;               /* < 0: from the environment (GW_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID) */
  int64_t world_size;         /* < 0: from the environment */
  int64_t local_rank;         /* < 0: from the environment */
  const char* root_address;   /* NULL: GW_ROOT_ADDR, else MASTER_ADDR */
  int64_t root_port;          /* < 0: GW_ROOT_PORT, else MASTER_PORT */
  gw_allgather_fn allgather;  /* non-NULL: used instead of the UCX rendezvous at the root address */
  void* allgather_user;
  double timeout_s;           /* <= 0: [runtime] timeout_s. Bounds the rendezvous and every wait */
} gw_comm_options;

#define GW_COMM_OPTIONS_INIT \
  {(uint32_t)sizeof(gw_comm_options), -1, -1, -1, NULL, -1, NULL, NULL, 0.0}

/* Creates a communicator over the [transport] inter transport: every rank gathers every rank's
 * transport address, plugin names and versions and configuration hash; any difference is
 * GW_ERR_MISMATCH on every rank, saying what differs. A rank that does not arrive within the timeout is
 * GW_ERR_TIMEOUT naming it. Collective over all ranks.
 * thread: any; the calling thread becomes the communicator's thread. */
GW_API gw_status gw_comm_create(gw_runtime* runtime, const gw_comm_options* options, gw_comm** comm);
/* Destroys the communicator; GW_ERR_STATE while requests created from it are not freed.
 * thread: comm. */
GW_API gw_status gw_comm_destroy(gw_comm* comm);
/* This process's rank and the number of ranks; 0 for a NULL communicator. thread: any. */
GW_API uint32_t gw_comm_rank(const gw_comm* comm);
GW_API uint32_t gw_comm_size(const gw_comm* comm);
/* Makes every pending and future operation of this communicator fail with GW_ERR_ABORTED.
 * thread: any, also while another thread waits on the communicator. */
GW_API gw_status gw_comm_abort(gw_comm* comm);
/* How many times the membership changed since creation: 0 without elastic mode, and until the first
 * change; after a gw_sync_step that returned GW_MEMBERSHIP_CHANGED, one more on every member.
 * 0 for a NULL communicator. Since 1.5. thread: any. */
GW_API uint64_t gw_comm_membership_epoch(const gw_comm* comm);

/* GW_OK when the request completed, GW_IN_PROGRESS while it runs, or its error (gw_last_error says
 * what happened). Drives the communicator's progress. thread: comm. */
GW_API gw_status gw_request_test(gw_request* request);
/* Waits until the request completes or timeout_s passes (< 0: no limit of its own; the communicator's
 * timeout still ends a stuck collective). GW_ERR_TIMEOUT when timeout_s passed first: the request is
 * still alive. thread: comm. */
GW_API gw_status gw_request_wait(gw_request* request, double timeout_s);
/* Frees the request. Freeing a collective before it completed fails the communicator on every rank.
 * thread: comm. */
GW_API gw_status gw_request_free(gw_request* request);

/* Allreduce: out = in reduced over all ranks (sum, avg, min, max; f32, f64, f16, bf16, i32, i64;
 * f16/bf16 combine in fp32; avg of integers truncates). in == out (same data pointer) is in place.
 * Every rank ends with the same bits. thread: comm. */
GW_API gw_status gw_allreduce_start(gw_comm* comm, const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                                    gw_request** request);
GW_API gw_status gw_allreduce(gw_comm* comm, const gw_tensor* in, gw_tensor* out, gw_reduce_op op);
/* Reduce-scatter: in holds world_size * out->count elements; rank r's out is the reduction of block r.
 * In place: in->data == out->data, the result lands at the start of the buffer.
 * thread: comm. */
GW_API gw_status gw_reduce_scatter_start(gw_comm* comm, const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                                         gw_request** request);
GW_API gw_status gw_reduce_scatter(gw_comm* comm, const gw_tensor* in, gw_tensor* out, gw_reduce_op op);
/* Allgather: out (world_size * in->count elements) receives every rank's in, in rank order. In place:
 * in->data == out->data with this rank's part already at out + rank * in->count.
 * thread: comm. */
GW_API gw_status gw_allgather_start(gw_comm* comm, const gw_tensor* in, gw_tensor* out, gw_request** request);
GW_API gw_status gw_allgather(gw_comm* comm, const gw_tensor* in, gw_tensor* out);
/* Allgatherv: rank r contributes counts[r] elements (in->count == counts[rank]); out holds them all,
 * packed in rank order. `counts` (world_size entries) is copied. In place as for gw_allgather, at the
 * sum of the counts before this rank. thread: comm. */
GW_API gw_status gw_allgatherv_start(gw_comm* comm, const gw_tensor* in, gw_tensor* out, const uint64_t* counts,
                                     gw_request** request);
GW_API gw_status gw_allgatherv(gw_comm* comm, const gw_tensor* in, gw_tensor* out, const uint64_t* counts);
/* Broadcast: root's buf is copied into every rank's buf. thread: comm. */
GW_API gw_status gw_broadcast_start(gw_comm* comm, gw_tensor* buf, uint32_t root, gw_request** request);
GW_API gw_status gw_broadcast(gw_comm* comm, gw_tensor* buf, uint32_t root);
/* Barrier: completes once every rank has started it. thread: comm. */
GW_API gw_status gw_barrier_start(gw_comm* comm, gw_request** request);
GW_API gw_status gw_barrier(gw_comm* comm);

/* Point-to-point: send buf to rank `peer` / receive from `peer` a message with the same tag and the
 * same size in bytes (another size is GW_ERR_MISMATCH). Messages between two ranks with one tag arrive
 * in order. thread: comm. */
GW_API gw_status gw_send_start(gw_comm* comm, const gw_tensor* buf, uint32_t peer, uint32_t tag,
                               gw_request** request);
GW_API gw_status gw_send(gw_comm* comm, const gw_tensor* buf, uint32_t peer, uint32_t tag);
GW_API gw_status gw_recv_start(gw_comm* comm, gw_tensor* buf, uint32_t peer, uint32_t tag, gw_request** request);
GW_API gw_status gw_recv(gw_comm* comm, gw_tensor* buf, uint32_t peer, uint32_t tag);

/* Compressed allreduce: out = in summed (GW_REDUCE_SUM) or averaged (GW_REDUCE_AVG, divided once at the
 * end) over all ranks, moving `codec`'s payloads instead of the elements. The codec's properties choose
 * the algorithm (docs/collectives.md): a codec whose payloads are its f32 values (none) the dense ring
 * on host tensors, summable codecs (fp16, bf16) a ring over encoded pieces, other dense codecs (int8,
 * onebit) scatter-reduce-allgather, sparse codecs (topk) an allgather of the payloads summed in rank
 * order, shared-index codecs (randomk) a dense reduction of the kept values.
 * Every rank decodes the same final bytes, so every rank ends with the same bits. in and out are f32
 * host tensors of one count; in == out is in place. `context` (NULL: seed 0, step 0) gives the seed and
 * step, which every rank must pass alike; rank, world size and workspace come from the communicator.
 * Every rank passes a codec of the same name and configuration (another codec is GW_ERR_MISMATCH). The
 * codec and both buffers belong to the request until it completes.
 * thread: comm. */
GW_API gw_status gw_allreduce_compressed_start(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                               const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                                               gw_request** request);
GW_API gw_status gw_allreduce_compressed(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                         const gw_tensor* in, gw_tensor* out, gw_reduce_op op);
/* Since 1.6. The compressed allreduce of `n` tensors through codecs of rounds (powersgd) in one collective
 * per round: tensor i is reduced in place through codecs[i] with contexts[i] (its seed, step, buffer_id
 * and shapes) as gw_allreduce_compressed_start would, except that each round's vectors of all n tensors
 * are summed in one allreduce, their concatenation in the given order, instead of one collective per
 * tensor per round (PowerSGD: 2 collectives a step instead of 2 n). Each tensor gets the bits its own
 * call gives wherever the dense allreduce adds its elements in the same order (below [collectives]
 * ring_threshold_bytes, or on two ranks; docs/powersgd.md). Every rank passes the same tensors (counts,
 * shapes) in the same order, and codecs of one name and configuration: codecs without rounds are
 * GW_ERR_UNSUPPORTED, codecs of different names GW_ERR_INVALID_ARGUMENT, another batch on another rank
 * GW_ERR_MISMATCH. f32, f16 or bf16 tensors in host or CUDA memory (anything but f32 host memory is
 * staged through f32 host memory). The codecs and tensors belong to the request until it completes.
 * thread: comm. */
GW_API gw_status gw_allreduce_compressed_batch_start(gw_comm* comm, uint32_t n, gw_codec* const* codecs,
                                                     const gw_codec_context* const* contexts,
                                                     gw_tensor* const* tensors, gw_reduce_op op,
                                                     gw_request** request);
/* Since 1.6. gw_allreduce_compressed_batch_start, waited for. thread: comm. */
GW_API gw_status gw_allreduce_compressed_batch(gw_comm* comm, uint32_t n, gw_codec* const* codecs,
                                               const gw_codec_context* const* contexts, gw_tensor* const* tensors,
                                               gw_reduce_op op);
/* Since 1.2. The compressed allreduce with error feedback inside the collective (as gw_sync applies it): every
 * encoding this rank makes adds the residual `ef` keeps for those elements and keeps what the encoding
 * dropped for the next call — the values it sends to other ranks and, for scatter-reduce-allgather
 * (int8, onebit), the sum it encodes once as the owner of a block, which error feedback applied before
 * the call cannot compensate. The codec is the one `ef` was created around. Use one `ef` per tensor,
 * with the same count and communicator size every call (its residuals are keyed by element offset),
 * and not also with gw_error_feedback_encode. `ef` belongs to the request until it completes; its
 * state saves and loads as usual. Otherwise as gw_allreduce_compressed. thread: comm. */
GW_API gw_status gw_allreduce_compressed_ef_start(gw_comm* comm, gw_error_feedback* ef,
                                                  const gw_codec_context* context, const gw_tensor* in,
                                                  gw_tensor* out, gw_reduce_op op, gw_request** request);
GW_API gw_status gw_allreduce_compressed_ef(gw_comm* comm, gw_error_feedback* ef, const gw_codec_context* context,
                                            const gw_tensor* in, gw_tensor* out, gw_reduce_op op);

/* Compressed reduce-scatter (since 1.3): in holds world_size equal shards of out->count elements (a count
 * not divisible by world_size is GW_ERR_INVALID_ARGUMENT); rank r's out is shard r summed (GW_REDUCE_SUM)
 * or averaged (GW_REDUCE_AVG, divided once at the end) over all ranks, moving `codec`'s payloads: every
 * rank encodes each piece of every other rank's shard once and sends it to that shard's owner, which adds
 * the decoded contributions in f32 in rank order 0 .. n - 1 (its own shard unencoded at its place), so the
 * bits are the same whichever rank or run computes them; where [collectives] two_level makes the allreduce
 * two-level, the nodes sum exactly first and only node sums cross between nodes. A codec whose payloads are
 * its f32 values (none) gives gw_reduce_scatter's bits. Every codec works, sparse ones too.
 * f32, f16 or bf16 tensors of one dtype (16-bit ones are staged through f32: the sum is rounded once),
 * host or CUDA memory (staged through host memory). In place: in->data == out->data, the result lands at
 * the start of the buffer; any other overlap works too. `context` (NULL: seed 0, step 0) gives the seed
 * and step, which every rank must pass alike. Every rank passes the same op, count and a codec of the
 * same name (a difference is GW_ERR_MISMATCH on every rank). The codec and both buffers belong to the
 * request until it completes. Behaviour: docs/collectives.md. thread: comm. */
GW_API gw_status gw_reduce_scatter_compressed_start(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                                    const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                                                    gw_request** request);
GW_API gw_status gw_reduce_scatter_compressed(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                              const gw_tensor* in, gw_tensor* out, gw_reduce_op op);
/* The compressed reduce-scatter with error feedback inside the collective (since 1.3): each encoding
 * of another rank's shard adds the residual `ef` keeps for those elements (keyed by their offset in in)
 * and keeps what the encoding dropped for the next call, so each shard's owner receives over the calls
 * the sum of what was given. The codec is the one `ef` was created around. Use one `ef` per tensor, with
 * the same count and communicator size every call, and not also with gw_error_feedback_encode. `ef`
 * belongs to the request until it completes. Otherwise as gw_reduce_scatter_compressed.
 * thread: comm. */
GW_API gw_status gw_reduce_scatter_compressed_ef_start(gw_comm* comm, gw_error_feedback* ef,
                                                       const gw_codec_context* context, const gw_tensor* in,
                                                       gw_tensor* out, gw_reduce_op op, gw_request** request);
GW_API gw_status gw_reduce_scatter_compressed_ef(gw_comm* comm, gw_error_feedback* ef, const gw_codec_context* context,
                                                 const gw_tensor* in, gw_tensor* out, gw_reduce_op op);
/* Compressed allgather (since 1.3): out (world_size * in->count elements) receives every rank's in, in
 * rank order, as `codec` decodes it. Every rank encodes its in once, sends the payload to every other rank
 * and decodes it into its own place of out too, so every rank ends with the same bits of every shard (its
 * own included: the decoded value, not its input); two-level as the reduce-scatter, payloads cross between
 * nodes once per node and are copied exactly inside. None gives gw_allgather's bits; every codec works.
 * Tensors, context, mismatches and ownership as for gw_reduce_scatter_compressed. In place:
 * in->data == out->data + rank * in->count; any other overlap works too. thread: comm. */
GW_API gw_status gw_allgather_compressed_start(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                               const gw_tensor* in, gw_tensor* out, gw_request** request);
GW_API gw_status gw_allgather_compressed(gw_comm* comm, gw_codec* codec, const gw_codec_context* context,
                                         const gw_tensor* in, gw_tensor* out);
/* The compressed allgather with error feedback inside the collective (since 1.3): this rank's encoding
 * adds the residual `ef` keeps for its shard and keeps what the encoding dropped, so over the calls the
 * decoded shards sum to the inputs' sum within one residual. `ef` as for
 * gw_reduce_scatter_compressed_ef. thread: comm. */
GW_API gw_status gw_allgather_compressed_ef_start(gw_comm* comm, gw_error_feedback* ef, const gw_codec_context* context,
                                                  const gw_tensor* in, gw_tensor* out, gw_request** request);
GW_API gw_status gw_allgather_compressed_ef(gw_comm* comm, gw_error_feedback* ef, const gw_codec_context* context,
                                            const gw_tensor* in, gw_tensor* out);

/* ------------------------------------------------------------------------------------------------
 * Synchronizer: what a trainer calls each step. The application registers its tensors once; the
 * synchronizer fuses them into buckets ([bucket] bytes), picks each tensor's codec ([[rules]], else
 * [codec] name; "none" exempts), keeps error feedback per bucket ([codec] error_feedback) and, at each
 * step, does what the schedule ([schedule] name) says: average the gradients through the codec,
 * accumulate micro-steps, average the parameters, or exchange in the background with bounded
 * staleness. Behaviour and decisions: docs/sync.md.
 *
 * A synchronizer drives its communicator: while it exists, the application uses that communicator only
 * through it (a schedule that exchanges in the background progresses it from a thread of its own
 * between gw_sync calls). Create another communicator for the application's own collectives.
 * ---------------------------------------------------------------------------------------------- */

typedef struct gw_sync gw_sync;

typedef struct gw_sync_options {
  uint32_t struct_size;
  gw_runtime* runtime; /* required: the configuration and plugins (codec, schedule, bucket, rules) */
  uint32_t flags;      /* reserved, 0 */
} gw_sync_options;

#define GW_SYNC_OPTIONS_INIT {(uint32_t)sizeof(gw_sync_options), NULL, 0u}

/* All buckets, where a function takes a bucket index. */
#define GW_SYNC_ALL_BUCKETS 0xffffffffu

/* gw_sync_step flags */
enum {
  GW_SYNC_APPLY = 1u << 0,                /* the optimizer should apply this step's gradients */
  GW_SYNC_GRADIENTS_AVERAGED = 1u << 1,   /* the gradients were replaced by an average across ranks */
  GW_SYNC_PARAMETERS_AVERAGED = 1u << 2,  /* the parameters were replaced by their average across ranks */
  GW_SYNC_OUTER_STEP = 1u << 3            /* Since 1.4. An outer step (DiLoCo) set some parameters */
};

/* Creates a synchronizer over `comm` with the runtime's configuration. The runtime must outlive it.
 * thread: comm. */
GW_API gw_status gw_sync_create(gw_comm* comm, const gw_sync_options* options, gw_sync** sync);
/* Waits for exchanges in flight, then destroys the synchronizer. thread: comm. */
GW_API gw_status gw_sync_destroy(gw_sync* sync);

/* Registers a tensor, once, before gw_sync_finalize: its unique name (matched by [[rules]]), its
 * gradient and, for schedules that average parameters (local_sgd), its parameter of the same count
 * (NULL otherwise). f32 host tensors; the memory must stay valid while the synchronizer lives.
 * thread: comm. */
GW_API gw_status gw_sync_register(gw_sync* sync, const char* name, const gw_tensor* gradient,
                                  const gw_tensor* parameter);
/* Gives a registered tensor its shape, before gw_sync_finalize: `ndim` sizes whose product is its
 * count (another product is GW_ERR_INVALID_ARGUMENT). Codecs that work on matrices (powersgd) see it as
 * rows x columns: dims[0] x (dims[1] * ... * dims[ndim - 1]); a tensor without a shape, or of one
 * dimension, is a vector (n x 1), which such codecs send as it is. Every rank must give the same shapes
 * (gw_sync_finalize compares them). Since 1.4. thread: comm. */
GW_API gw_status gw_sync_register_shape(gw_sync* sync, const char* name, uint32_t ndim, const int64_t* dims);
/* Fuses the registered tensors into buckets (registration order; tensors of different codecs never
 * share one) and checks that every rank registered the same names, counts and dtypes in the same order:
 * GW_ERR_MISMATCH naming the first difference otherwise, on every rank. Collective.
 * thread: comm. */
GW_API gw_status gw_sync_finalize(gw_sync* sync);

typedef struct gw_sync_bucket_info {
  uint32_t struct_size;
  const char* codec;    /* the bucket's codec name; valid while the synchronizer lives */
  uint64_t count;       /* f32 elements */
  uint32_t num_tensors;
  uint32_t flags;       /* reserved, 0 */
} gw_sync_bucket_info;

#define GW_SYNC_BUCKET_INFO_INIT {(uint32_t)sizeof(gw_sync_bucket_info), NULL, 0u, 0u, 0u}

/* After gw_sync_finalize: the number of buckets, what a bucket holds, and which bucket holds a tensor.
 * thread: comm. */
GW_API gw_status gw_sync_bucket_count(gw_sync* sync, uint32_t* count);
GW_API gw_status gw_sync_get_bucket_info(gw_sync* sync, uint32_t bucket, gw_sync_bucket_info* info);
GW_API gw_status gw_sync_tensor_bucket(gw_sync* sync, const char* name, uint32_t* bucket);

/* Optional, during a step: the gradients of `bucket` are final, so its exchange may start now and
 * overlap the rest of the backward pass. Nonblocking; buckets complete in any order. Every rank must
 * make the same calls in a step it later skips (the same trainer code does).
 * thread: comm. */
GW_API gw_status gw_sync_bucket_ready(gw_sync* sync, uint32_t bucket);
/* Ends a step: runs the schedule (starting every exchange not started yet) and returns once the
 * gradients (and parameters) are final. *flags (may be NULL) holds GW_SYNC_* bits: apply the optimizer
 * only with GW_SYNC_APPLY (not on a micro-step that only accumulated). Collective.
 * In elastic mode ([elastic] enabled, docs/elastic.md; ABI minor 5 on): GW_MEMBERSHIP_CHANGED when ranks
 * failed and the survivors (a quorum) continue without them, or when processes joined at this step
 * boundary; *flags is then 0, the step was discarded, the registered parameters and the synchronizer's
 * state are those at the start of the last step every member completed. When the quorum is lost, the
 * error as without elastic mode.
 * thread: comm. */
GW_API gw_status gw_sync_step(gw_sync* sync, uint32_t* flags);
/* Instead of gw_sync_step: this step is skipped (e.g. an fp16 loss-scale overflow) and nothing counts
 * it. Exchanges gw_sync_bucket_ready started are completed and discarded, and their error-feedback
 * residuals rolled back. Every rank skips the same steps. thread: comm. */
GW_API gw_status gw_sync_skip_step(gw_sync* sync);

/* Checkpoint: one versioned blob with the schedule's counters, every bucket's error-feedback residuals,
 * accumulator, velocity ([codec] momentum) and parameter anchor (keyed by its tensors' names and counts) and the results of background exchanges in
 * flight (this call waits for them). With buf NULL only sets *size; a capacity below the size is
 * GW_ERR_BUFFER_TOO_SMALL. thread: comm. */
GW_API gw_status gw_sync_save_state(gw_sync* sync, void* buf, uint64_t capacity, uint64_t* size);
/* Restores a blob gw_sync_save_state wrote, after gw_sync_finalize, so the run continues exactly. A
 * damaged blob is GW_ERR_CORRUPT, another version GW_ERR_VERSION, another schedule, codec or tensor
 * layout GW_ERR_MISMATCH naming the difference; the state is then unchanged. A bucket whose codec is
 * auto takes the checkpoint's codec instead, when [codec] allow lists it (or it is none).
 * thread: comm. */
GW_API gw_status gw_sync_load_state(gw_sync* sync, const void* buf, uint64_t size);

typedef struct gw_sync_stats {
  uint32_t struct_size;
  uint64_t raw_bytes;        /* f32 bytes of the tensors exchanged (gradients, accumulators, parameters) */
  uint64_t wire_bytes;       /* payload bytes this rank sent for them */
  double compression_ratio;  /* what an uncompressed ring allreduce of the same data sends from this rank,
                                2 (n - 1) / n * raw_bytes, over wire_bytes; 1 when nothing was sent */
  double encode_seconds;     /* in the codec's encode (error feedback included) */
  double transfer_seconds;   /* exchanges in flight, less encoding and decoding */
  double decode_seconds;
  uint64_t steps;            /* steps counted (skipped ones excluded) */
  uint64_t syncs;            /* exchanges of this bucket (all buckets: summed) */
  const char* codec;         /* since 1.1. The bucket's codec (with [codec] name = "auto": the one chosen); all
                                buckets: their codec when they share one, else "mixed". Valid while
                                the synchronizer lives */
  const char* codec_reason;  /* since 1.1. auto: why that codec (the cost model's prediction), else "" */
} gw_sync_stats;

#define GW_SYNC_STATS_INIT {(uint32_t)sizeof(gw_sync_stats), 0u, 0u, 1.0, 0.0, 0.0, 0.0, 0u, 0u, NULL, NULL}

/* Accounting of one bucket, or of all with GW_SYNC_ALL_BUCKETS. thread: comm. */
GW_API gw_status gw_sync_get_stats(gw_sync* sync, uint32_t bucket, gw_sync_stats* stats);

/* ------------------------------------------------------------------------------------------------
 * Parameter server: ranks 0 .. servers-1 each hold a contiguous shard of the parameters (and of the
 * momentum) and apply SGD with momentum; the other ranks are workers that push their gradients (through
 * the runtime's [codec] name, with error feedback per shard on the worker when [codec] error_feedback
 * is on) and pull the parameters. Synchronous: a server updates a shard once every live worker pushed
 * (the average), so the run equals allreduce training with the same SGD. Asynchronous: every push is
 * applied as it arrives and answered at once with the shard's look-ahead point (where the others' next
 * pushes will take it if they carry the velocity on: the worker's next gradient is computed there); a
 * push computed on parameters more than `staleness` versions of its shard old is dropped (its worker
 * just pulls). A worker that dies is left out; a server
 * that dies is an error naming it on every worker, which tells the other servers. docs/ps.md.
 * Since 1.1: every function, struct and enum of this section.
 * ---------------------------------------------------------------------------------------------- */

typedef struct gw_ps gw_ps;

typedef enum gw_ps_mode {
  GW_PS_SYNC = 0,
  GW_PS_ASYNC = 1,
  GW_PS_MODE_FORCE_32BIT = 0x7fffffff
} gw_ps_mode;

/* What gw_ps_create needs besides the communicator. Since 1.1. */
typedef struct gw_ps_options {
  uint32_t struct_size;
  gw_runtime* runtime; /* required: [codec] name, error_feedback, seed */
  uint32_t servers;    /* ranks 0 .. servers-1 serve; at least 1, fewer than the ranks */
  gw_ps_mode mode;
  uint32_t staleness;  /* asynchronous: the oldest accepted push, in versions of its shard */
  float momentum;      /* the servers' SGD momentum (v = m v + g; p -= lr v) */
  uint32_t flags;      /* reserved, 0 */
} gw_ps_options;

#define GW_PS_OPTIONS_INIT {(uint32_t)sizeof(gw_ps_options), NULL, 1u, GW_PS_SYNC, 8u, 0.9f, 0u}

/* Collective over all ranks of `comm`. `parameters` (f32, host, the whole model, the same size on every
 * rank) stays the caller's: the servers start their shards from it, the workers' pulls write into it.
 * The communicator is the parameter server's until gw_ps_destroy. Since 1.1. thread: comm. */
GW_API gw_status gw_ps_create(gw_comm* comm, const gw_ps_options* options, gw_tensor* parameters, gw_ps** ps);
/* *is_server: 1 on the server ranks; *worker / *workers: this worker's index and how many there are.
 * Since 1.1. thread: comm. */
GW_API gw_status gw_ps_role(gw_ps* ps, int* is_server, uint32_t* worker, uint32_t* workers);
/* Worker: pushes `gradient` (f32, the parameters' size) with learning rate `lr` and pulls the parameters
 * into the tensor given at creation (asynchronous mode: the look-ahead point, above). Synchronous mode
 * returns once every live worker pushed. Since 1.1. thread: comm. */
GW_API gw_status gw_ps_push_pull(gw_ps* ps, const gw_tensor* gradient, float lr);
/* Server: serves until every worker finished (gw_ps_destroy) or died. On GW_OK the server's shard of
 * the `parameters` tensor given at creation holds the shard's final values (the trained model, once
 * every worker finished). Since 1.1. thread: comm. */
GW_API gw_status gw_ps_serve(gw_ps* ps);

/* What gw_ps_get_stats reports. Since 1.1. */
typedef struct gw_ps_stats {
  uint32_t struct_size;
  uint64_t pushes;        /* server: pushes applied; worker: pushes made */
  uint64_t dropped;       /* server: pushes over the staleness bound; worker: its pushes dropped */
  uint64_t wire_bytes;    /* payload bytes this rank sent */
  uint64_t version;       /* server: updates of its shard; worker: the newest shard version it pulled */
  uint32_t dead_workers;  /* server: workers that died */
  uint32_t flags;         /* reserved */
} gw_ps_stats;

#define GW_PS_STATS_INIT {(uint32_t)sizeof(gw_ps_stats), 0u, 0u, 0u, 0u, 0u, 0u}

/* This rank's counters. Since 1.1. thread: comm. */
GW_API gw_status gw_ps_get_stats(gw_ps* ps, gw_ps_stats* stats);
/* Worker: tells the servers it finished. Server: frees. Since 1.1. thread: comm. */
GW_API gw_status gw_ps_destroy(gw_ps* ps);

/* ------------------------------------------------------------------------------------------------
 * Data cache: a data set of fixed-size samples held in the memory of the ranks, sharded (rank r loads
 * only samples [r n / N, (r + 1) n / N) from storage, through the application's loader), and served to
 * any rank over the communicator, so every epoch can shuffle globally without reading storage again.
 * With GW_CACHE_NODE_SHARED the ranks of a node keep their shards in one POSIX shared-memory segment:
 * a sample held on the same node is a memcpy, never a message. docs/cache.md.
 * Since 1.1: every function, struct and callback of this section.
 * ---------------------------------------------------------------------------------------------- */

typedef struct gw_cache gw_cache;

/* Reads samples [first, first + count) from storage into out (count * sample_bytes bytes). Anything but
 * GW_OK fails gw_cache_create on every rank, naming this rank and the samples. Since 1.1.
 * thread: in-call: inside gw_cache_create. */
typedef gw_status (*gw_cache_load_fn)(void* user, uint64_t first, uint64_t count, void* out);

/* gw_cache_options.flags */
enum {
  GW_CACHE_NODE_SHARED = 1u << 0 /* the ranks of a node share one copy of their shards (shm_open) */
};

/* What gw_cache_create needs besides the communicator. Since 1.1. */
typedef struct gw_cache_options {
  uint32_t struct_size;
  uint64_t num_samples;   /* samples in the data set, the same on every rank; at least 1 */
  uint64_t sample_bytes;  /* bytes per sample, the same on every rank; at least 1 */
  gw_cache_load_fn load;  /* required */
  void* load_user;        /* passed to load */
  uint64_t checksum;      /* 0: none; else the data set's checksum (gw_cache_stats.checksum of an earlier
                             run): another one is GW_ERR_MISMATCH */
  uint32_t flags;         /* GW_CACHE_* */
} gw_cache_options;

#define GW_CACHE_OPTIONS_INIT {(uint32_t)sizeof(gw_cache_options), 0u, 0u, NULL, NULL, 0u, 0u}

/* Collective over all ranks of `comm`: checks that every rank passes the same sample count, sample size,
 * flags and checksum (GW_ERR_MISMATCH naming the ranks that differ), loads this rank's shard, and checks
 * that neighbouring ranks read the same bytes from storage (each rank also reads the first sample of
 * the next rank's shard; a difference is GW_ERR_MISMATCH naming both ranks). The communicator is the
 * cache's between its calls, like any collective's. Since 1.1. thread: comm. */
GW_API gw_status gw_cache_create(gw_comm* comm, const gw_cache_options* options, gw_cache** cache);
/* This rank's shard: samples [*first, *first + *count). Either pointer may be NULL. Since 1.1.
 * thread: any. */
GW_API gw_status gw_cache_shard(gw_cache* cache, uint64_t* first, uint64_t* count);
/* Collective: every rank calls it once per batch with its own list (n may differ between ranks, and be
 * 0). out receives n * sample_bytes bytes: sample indices[i] at i * sample_bytes. An index outside
 * [0, num_samples) on any rank is GW_ERR_INVALID_ARGUMENT on every rank, naming the rank, the index
 * and the range, before any sample moves. A rank that died is GW_ERR_TRANSPORT naming it.
 * Since 1.1. thread: comm. */
GW_API gw_status gw_cache_get(gw_cache* cache, const uint64_t* indices, uint64_t n, void* out);

/* What gw_cache_get_stats reports. Since 1.1. */
typedef struct gw_cache_stats {
  uint32_t struct_size;
  uint64_t bytes_private;  /* sample bytes held in this rank's own memory (0 with GW_CACHE_NODE_SHARED) */
  uint64_t bytes_shared;   /* GW_CACHE_NODE_SHARED: bytes of this node's segment (in memory once per
                              node, mapped by each of its ranks); else 0 */
  uint64_t bytes_local;    /* sample bytes gw_cache_get copied from this rank's or this node's memory */
  uint64_t bytes_fetched;  /* sample bytes gw_cache_get received from other ranks in messages */
  uint64_t bytes_served;   /* sample bytes gw_cache_get sent to other ranks in messages */
  uint64_t loads;          /* calls of the loader on this rank */
  uint64_t bytes_loaded;   /* bytes this rank's loader read from storage */
  uint64_t gets;           /* gw_cache_get calls completed */
  uint64_t checksum;       /* the data set's checksum: the same on every rank, for any number of ranks */
  uint32_t flags;          /* reserved */
} gw_cache_stats;

#define GW_CACHE_STATS_INIT {(uint32_t)sizeof(gw_cache_stats), 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u}

/* This rank's counters. Since 1.1. thread: comm. */
GW_API gw_status gw_cache_get_stats(gw_cache* cache, gw_cache_stats* stats);
/* Frees the cache (and this rank's mapping of the node's segment). Not collective. Since 1.1.
 * thread: comm. */
GW_API gw_status gw_cache_destroy(gw_cache* cache);

GW_EXTERN_C_END

#endif /* GRADWIRE_GRADWIRE_H */
