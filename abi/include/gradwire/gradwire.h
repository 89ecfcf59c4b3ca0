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
 *   - the "thread:" line of each function says who may call it.
 */
#ifndef GRADWIRE_GRADWIRE_H
#define GRADWIRE_GRADWIRE_H

#include "gradwire/types.h"

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
 * thread: any, once no other call on this runtime is in flight. */
GW_API gw_status gw_runtime_destroy(gw_runtime* runtime);

/* Writes the effective configuration as text into buf (capacity `capacity`, NUL included), sets
 * *length to the bytes needed without the NUL. With buf NULL only sets *length; with a capacity too
 * small returns GW_ERR_BUFFER_TOO_SMALL.
 * thread: any. */
typedef enum gw_config_format {
  GW_CONFIG_FORMAT_TOML = 0,      /* every key with its value, defaults included, help as comments */
  GW_CONFIG_FORMAT_REFERENCE = 1, /* Markdown reference of every key of every loaded component */
  GW_CONFIG_FORMAT_FORCE_32BIT = 0x7fffffff
} gw_config_format;
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
/* thread: the owner; no call on the codec in flight. */
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
 * thread: one per codec at a time. */
GW_API gw_status gw_codec_encode(gw_codec* codec, const gw_codec_context* context, const gw_tensor* in,
                                 void* payload, uint64_t capacity, uint64_t* size);
/* Checks the payload's header against this codec and `out` (codec, dtype, count, lengths), then
 * decodes into `out`; flags: GW_DECODE_ACCUMULATE adds instead of overwriting. A malformed payload
 * is GW_ERR_CORRUPT, another codec's or dtype's GW_ERR_MISMATCH, another format version
 * GW_ERR_VERSION; `out` is then unchanged or partly written, never read out of bounds.
 * thread: one per codec at a time. */
GW_API gw_status gw_codec_decode(gw_codec* codec, const gw_codec_context* context, const void* payload,
                                 uint64_t size, gw_tensor* out, uint32_t flags);

GW_EXTERN_C_END

#endif /* GRADWIRE_GRADWIRE_H */
