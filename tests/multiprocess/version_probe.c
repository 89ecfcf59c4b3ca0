/* A plugin without components whose version is set at build time: built twice (1.0.0 and 2.0.0) into
 * two folders, so that ranks loading different copies must refuse to form a communicator. */
#include <gradwire/plugin.h>

static const gw_plugin_descriptor kDescriptor = {
    (uint32_t)sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "mp_version_probe",
    PROBE_VERSION, "test plugin: only a version", NULL, NULL, NULL, 0u, NULL};

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t major, uint32_t minor) {
  (void)minor;
  return major == GW_ABI_VERSION_MAJOR ? &kDescriptor : NULL;
}
