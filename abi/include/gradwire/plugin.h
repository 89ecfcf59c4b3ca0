/*
 * gradwire/plugin.h — the whole contract of a gradwire plugin.
 *
 * A plugin is a shared library that exports one symbol, gw_plugin_entry, returning a constant
 * descriptor. The descriptor names the plugin, says which ABI it was built against, and lists its
 * components: codecs (how a buffer becomes bytes), schedules (what is communicated at each step) and
 * transports (how bytes move). Every vtable below starts with struct_size; the host treats a member
 * past struct_size, or a NULL optional member, as absent. No C++ type and no exception may cross this
 * boundary: every function returns a gw_status and reports details through gw_host.set_error.
 *
 * Object lifetimes: whoever creates an object destroys it. The host keeps the library loaded while any
 * object a plugin created is alive. Strings in the descriptor must stay valid while the library is
 * loaded (string literals are the usual choice).
 *
 * The guides that explain this file with working examples: docs/plugin-guide.md (codecs, the basics)
 * and docs/transport-guide.md (the transport contract, and the shorter schedule contract).
 */
#ifndef GRADWIRE_PLUGIN_H
#define GRADWIRE_PLUGIN_H

#include "types.h" /* same folder: works installed, in the tree, with or without -I */

GW_EXTERN_C_BEGIN

/* ------------------------------------------------------------------------------------------------
 * Configuration keys: each component declares its keys once. The host parses, validates, dumps and
 * documents them from this table; the component reads the validated values through gw_host.
 * ---------------------------------------------------------------------------------------------- */

typedef enum gw_config_type {
  GW_CONFIG_BOOL = 0,
  GW_CONFIG_INT = 1,    /* int64 */
  GW_CONFIG_FLOAT = 2,  /* double; integers are accepted */
  GW_CONFIG_STRING = 3,
  GW_CONFIG_TYPE_FORCE_32BIT = 0x7fffffff
} gw_config_type;

typedef struct gw_config_key {
  uint32_t struct_size;
  const char* name;          /* lower_snake_case, unique within the component */
  gw_config_type type;
  const char* default_value; /* TOML literal text: "true", "256", "0.01", "\"fp32\"" */
  const char* help;          /* one sentence */
  double min_value;          /* numeric keys: inclusive range; min_value > max_value means unbounded */
  double max_value;
  const char* choices;       /* string keys: allowed values separated by '|', or NULL for any */
} gw_config_key;

#define GW_CONFIG_KEY_INIT {(uint32_t)sizeof(gw_config_key), NULL, GW_CONFIG_BOOL, NULL, NULL, 1.0, 0.0, NULL}

/* The validated values of one component's section, owned by the host. Valid during the call it is
 * passed to (create); a component copies what it keeps. */
typedef struct gw_config gw_config;

/* ------------------------------------------------------------------------------------------------
 * Host services: what the runtime offers a plugin. Passed to init and to every create.
 * ---------------------------------------------------------------------------------------------- */

typedef struct gw_host {
  uint32_t struct_size;
  uint32_t abi_major; /* the host's ABI version; a plugin may refuse a host that is too old */
  uint32_t abi_minor;
  void* ctx;          /* host data; pass back unchanged */

  /* Writes a log line through the application's logger.
   * thread: any. */
  void (*log)(void* ctx, gw_log_level level, const char* component, const char* message);

  /* Sets the human message that goes with the error status the plugin is about to return: what was
   * wrong and what to do. Copied; kept per thread.
   * thread: any. */
  void (*set_error)(void* ctx, const char* message);

  /* Typed getters for a component's configuration. Return GW_ERR_NOT_FOUND for an undeclared key and
   * GW_ERR_INVALID_ARGUMENT for a key of another type. A returned string stays valid as long as the
   * gw_config it came from.
   * thread: any, during the call that received the gw_config. */
  gw_status (*config_get_bool)(const gw_config* config, const char* key, int32_t* out);
  gw_status (*config_get_int)(const gw_config* config, const char* key, int64_t* out);
  gw_status (*config_get_float)(const gw_config* config, const char* key, double* out);
  gw_status (*config_get_string)(const gw_config* config, const char* key, const char** out);

  /* Reserved for optional host services by string id in later minor versions. This version offers
   * none: it returns NULL for every id. thread: any. */
  const void* (*get_extension)(void* ctx, const char* id);
} gw_host;

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
  /* thread: the one that owns the codec; no call may be in flight. */
  void (*destroy)(void* codec);

  /* thread: any. */
  gw_status (*properties)(void* codec, gw_codec_properties* out);

  /* Upper bound of the body size in bytes for `count` elements of `dtype`, and the workspace needed.
   * thread: any. */
  gw_status (*max_encoded_size)(void* codec, gw_dtype dtype, uint64_t count, uint64_t* body_bytes,
                                uint64_t* workspace_bytes);

  /* Encodes `in` into `body` (capacity `body_capacity`), sets *body_size. For CUDA tensors the work is
   * ordered on in->stream and *body_size is valid once the call returns.
   * thread: one per codec instance at a time. */
  gw_status (*encode)(void* codec, const gw_codec_context* ctx, const gw_tensor* in, void* body,
                      uint64_t body_capacity, uint64_t* body_size);

  /* Decodes `body` into `out` (count and dtype given by out). Must check every length and index
   * against body_size and out->count and return GW_ERR_CORRUPT for anything malformed.
   * thread: one per codec instance at a time. */
  gw_status (*decode)(void* codec, const gw_codec_context* ctx, const void* body, uint64_t body_size,
                      gw_tensor* out, uint32_t flags);

  /* Reserved; this version of the host never calls it. Set NULL. */
  const void* (*get_extension)(void* codec, const char* id);
} gw_codec_vtable;

/* ------------------------------------------------------------------------------------------------
 * Transports: nonblocking tagged point-to-point, progress, optional native collectives.
 * A call that would block returns GW_IN_PROGRESS; nothing here blocks.
 * ---------------------------------------------------------------------------------------------- */

typedef struct gw_transport_request gw_transport_request; /* opaque, owned by the transport */

typedef struct gw_transport_init {
  uint32_t struct_size;
  uint32_t rank;
  uint32_t world_size;
  uint32_t local_rank; /* this rank's index among the ranks of its host, from the launcher (0 when unknown) */
  uint32_t local_size; /* 1 in this version: the ranks per host are known only after the address exchange */
  double timeout_s; /* how long a peer may stay silent before its requests fail */
} gw_transport_init;

#define GW_TRANSPORT_INIT_INIT {(uint32_t)sizeof(gw_transport_init), 0u, 1u, 0u, 1u, 300.0}

typedef struct gw_transport_vtable {
  uint32_t struct_size;
  uint32_t memory_kinds; /* bit (1u << gw_memory_kind) for every kind send/recv accept */

  /* thread: init only. */
  gw_status (*create)(void* plugin_state, const gw_host* host, const gw_config* config,
                      const gw_transport_init* init, void** transport);
  /* Closes every endpoint and frees the transport. thread: the owner; no request may be alive. */
  void (*destroy)(void* transport);

  /* This rank's address blob for the bootstrap to gather. Valid until destroy.
   * thread: init only. */
  gw_status (*local_address)(void* transport, const void** blob, uint64_t* size);
  /* Connects to every peer from their gathered blobs (index = rank). May return GW_IN_PROGRESS;
   * the host then calls progress and connect again.
   * thread: init only. */
  gw_status (*connect)(void* transport, const void* const* blobs, const uint64_t* sizes);

  /* Starts sending `buf` to `peer` with `tag` / receiving from `peer` a message with `tag` into
   * `buf`. The buffer belongs to the transport until the request completes.
   * thread: one per transport at a time. */
  gw_status (*send_start)(void* transport, uint32_t peer, uint64_t tag, const gw_tensor* buf,
                          gw_transport_request** request);
  gw_status (*recv_start)(void* transport, uint32_t peer, uint64_t tag, gw_tensor* buf,
                          gw_transport_request** request);
  /* GW_OK when done (for a receive, *bytes is what arrived), GW_IN_PROGRESS, or the error.
   * thread: one per transport at a time. */
  gw_status (*test)(void* transport, gw_transport_request* request, uint64_t* bytes);
  /* Frees a request, cancelling it if it has not completed. thread: one per transport at a time. */
  void (*request_free)(void* transport, gw_transport_request* request);
  /* Advances communication. thread: one per transport at a time. */
  gw_status (*progress)(void* transport);
  /* Makes every pending and future request fail with GW_ERR_ABORTED. thread: any. */
  gw_status (*abort)(void* transport);

  /* Optional native collectives (NULL when absent); same ownership and test/request_free rules.
   * The host uses them only when no codec is in the way. thread: one per transport at a time. */
  gw_status (*allreduce_start)(void* transport, const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                               gw_transport_request** request);
  gw_status (*allgather_start)(void* transport, const gw_tensor* in, gw_tensor* out,
                               gw_transport_request** request);
  gw_status (*broadcast_start)(void* transport, gw_tensor* buf, uint32_t root,
                               gw_transport_request** request);
  gw_status (*reduce_scatter_start)(void* transport, const gw_tensor* in, gw_tensor* out,
                                    gw_reduce_op op, gw_transport_request** request);

  /* Reserved; this version of the host never calls it. Set NULL. */
  const void* (*get_extension)(void* transport, const char* id);
} gw_transport_vtable;

/* ------------------------------------------------------------------------------------------------
 * Schedules: at each training step, decide what is communicated. A schedule never talks to a
 * transport; it calls back into the runtime through gw_schedule_runtime.
 * ---------------------------------------------------------------------------------------------- */

/* What the runtime does for a schedule, for the step being decided. Each call returns GW_OK or an
 * error to pass on. thread: inside on_step only. */
typedef struct gw_schedule_runtime {
  uint32_t struct_size;
  void* ctx;
  uint64_t step;      /* steps counted so far (skipped steps excluded), starting at 0 */
  uint32_t world_size;
  /* Averages the gradients across ranks now (through the codec and error feedback). */
  gw_status (*sync_gradients)(void* ctx);
  /* Adds this step's gradients to the local accumulator; nothing is sent. */
  gw_status (*accumulate_gradients)(void* ctx);
  /* Replaces the gradients by the accumulator averaged across ranks, and clears the accumulator. */
  gw_status (*sync_accumulated)(void* ctx);
  /* Averages the parameters across ranks now (local SGD / model averaging). */
  gw_status (*sync_parameters)(void* ctx);
  /* Starts averaging this step's gradients in the background, identified by `slot`. */
  gw_status (*start_gradient_exchange)(void* ctx, uint64_t slot);
  /* Waits for the exchange started under `slot` and applies its result to the gradients. */
  gw_status (*finish_gradient_exchange)(void* ctx, uint64_t slot);
  /* Leaves the gradients as they are (a purely local step). */
  gw_status (*keep_local)(void* ctx);
} gw_schedule_runtime;

typedef struct gw_schedule_vtable {
  uint32_t struct_size;

  /* thread: init only. */
  gw_status (*create)(void* plugin_state, const gw_host* host, const gw_config* config, void** schedule);
  void (*destroy)(void* schedule);

  /* Called once per training step after the gradients are computed; calls back into rt.
   * thread: one per schedule at a time. */
  gw_status (*on_step)(void* schedule, const gw_schedule_runtime* rt);
  /* The application skipped this step (e.g. loss-scale overflow): count nothing.
   * thread: one per schedule at a time. */
  gw_status (*step_skipped)(void* schedule);

  /* Checkpoint: writes the counters into buf (capacity *size in, bytes written out). With buf NULL,
   * only sets *size to the bytes needed. thread: one per schedule at a time. */
  gw_status (*save_state)(void* schedule, void* buf, uint64_t* size);
  /* Restores what save_state wrote; GW_ERR_CORRUPT for anything else. */
  gw_status (*load_state)(void* schedule, const void* buf, uint64_t size);

  /* Reserved; this version of the host never calls it. Set NULL. */
  const void* (*get_extension)(void* schedule, const char* id);
} gw_schedule_vtable;

/* ------------------------------------------------------------------------------------------------
 * The descriptor and the entry symbol.
 * ---------------------------------------------------------------------------------------------- */

typedef enum gw_component_kind {
  GW_COMPONENT_CODEC = 0,
  GW_COMPONENT_SCHEDULE = 1,
  GW_COMPONENT_TRANSPORT = 2,
  GW_COMPONENT_KIND_FORCE_32BIT = 0x7fffffff
} gw_component_kind;

typedef struct gw_component {
  uint32_t struct_size;
  gw_component_kind kind;
  const char* name;                 /* [a-z0-9_]+, unique per kind across all loaded plugins */
  const char* help;                 /* one sentence */
  const gw_config_key* config_keys; /* its [codec.<name>] / [schedule.<name>] / [transport.<name>] keys */
  uint32_t num_config_keys;
  const void* vtable;               /* const gw_codec_vtable*, gw_schedule_vtable* or gw_transport_vtable* */
} gw_component;

#define GW_COMPONENT_INIT {(uint32_t)sizeof(gw_component), GW_COMPONENT_CODEC, NULL, NULL, NULL, 0u, NULL}

typedef struct gw_plugin_descriptor {
  uint32_t struct_size;
  uint32_t abi_major; /* GW_ABI_VERSION_MAJOR the plugin was built against */
  uint32_t abi_minor;
  const char* name;    /* unique across loaded plugins */
  const char* version; /* the plugin's own version, e.g. "1.2.0"; compared across ranks */
  const char* description;

  /* Optional. Called once after loading, before any component is created; *plugin_state is passed to
   * every create. Returns an error (with set_error) to refuse this host.
   * thread: init only. */
  gw_status (*init)(const gw_host* host, void** plugin_state);
  /* Optional. Called once after the last component object is destroyed. thread: init only. */
  void (*fini)(void* plugin_state);

  const gw_component* components;
  uint32_t num_components;

  /* Reserved; this version of the host never calls it. Set NULL. */
  const void* (*get_extension)(void* plugin_state, const char* id);
} gw_plugin_descriptor;

#define GW_PLUGIN_DESCRIPTOR_INIT                                                                    \
  {(uint32_t)sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, NULL, NULL, \
   NULL, NULL, NULL, NULL, 0u, NULL}

/* The one symbol a plugin exports. The host passes its ABI version; the plugin returns its constant
 * descriptor, or NULL to refuse the host. Valid while the library is loaded.
 * thread: init only. */
#define GW_PLUGIN_ENTRY_NAME "gw_plugin_entry"
typedef const gw_plugin_descriptor* (*gw_plugin_entry_fn)(uint32_t host_abi_major, uint32_t host_abi_minor);

/* The check every gw_plugin_entry makes: nonzero when a host of ABI (host_abi_major, host_abi_minor)
 * can load a plugin built against these headers (same major; a plugin that uses members added in a later
 * minor checks their struct_size). */
static inline int gw_plugin_abi_compatible(uint32_t host_abi_major, uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == GW_ABI_VERSION_MAJOR;
}

#if defined(__cplusplus)
#define GW_PLUGIN_EXPORT extern "C" GW_EXPORT
#else
#define GW_PLUGIN_EXPORT GW_EXPORT
#endif

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

#endif /* GRADWIRE_PLUGIN_H */
