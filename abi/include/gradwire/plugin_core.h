/*
 * gradwire/plugin_core.h — what every plugin kind shares: configuration keys, the host's services
 * (gw_host), the component list, the descriptor and the entry symbol, the ABI check. Included by each
 * kind's header (plugin_codec.h, plugin_transport.h, plugin_schedule.h) and by plugin.h.
 *
 * Every callback carries one thread tag: "thread: any", "serialized", "exclusive", "init" or "in-call",
 * defined at the top of gradwire.h.
 */
#ifndef GRADWIRE_PLUGIN_CORE_H
#define GRADWIRE_PLUGIN_CORE_H

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
   * thread: any; during the call that received the gw_config. */
  gw_status (*config_get_bool)(const gw_config* config, const char* key, int32_t* out);
  gw_status (*config_get_int)(const gw_config* config, const char* key, int64_t* out);
  gw_status (*config_get_float)(const gw_config* config, const char* key, double* out);
  gw_status (*config_get_string)(const gw_config* config, const char* key, const char** out);

  /* Reserved for optional host services by string id in later minor versions. This version offers
   * none: it returns NULL for every id. thread: any. */
  const void* (*get_extension)(void* ctx, const char* id);
} gw_host;

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
   * thread: init. */
  gw_status (*init)(const gw_host* host, void** plugin_state);
  /* Optional. Called once after the last component object is destroyed. thread: exclusive. */
  void (*fini)(void* plugin_state);

  const gw_component* components;
  uint32_t num_components;

  /* Reserved; this version of the host never calls it. Set NULL. thread: any. */
  const void* (*get_extension)(void* plugin_state, const char* id);
} gw_plugin_descriptor;

#define GW_PLUGIN_DESCRIPTOR_INIT                                                                    \
  {(uint32_t)sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, NULL, NULL, \
   NULL, NULL, NULL, NULL, 0u, NULL}

#define GW_PLUGIN_ENTRY_NAME "gw_plugin_entry"
/* The one symbol a plugin exports. The host passes its ABI version; the plugin returns its constant
 * descriptor, or NULL to refuse the host. Valid while the library is loaded.
 * thread: init. */
typedef const gw_plugin_descriptor* (*gw_plugin_entry_fn)(uint32_t host_abi_major, uint32_t host_abi_minor);

/* The check every gw_plugin_entry makes: nonzero when a host of ABI (host_abi_major, host_abi_minor)
 * can load a plugin built against these headers (same major; a plugin that uses members added in a later
 * minor checks their struct_size). thread: any. */
static inline int gw_plugin_abi_compatible(uint32_t host_abi_major, uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == GW_ABI_VERSION_MAJOR;
}

#if defined(__cplusplus)
#define GW_PLUGIN_EXPORT extern "C" GW_EXPORT
#else
#define GW_PLUGIN_EXPORT GW_EXPORT
#endif

GW_EXTERN_C_END

#endif /* GRADWIRE_PLUGIN_CORE_H */
