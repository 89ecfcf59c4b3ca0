/* An "old" libgradwire.so.0 for the symbol-version test: the same SONAME, linked with the version nodes
 * of abi/libgradwire.map up to GRADWIRE_1.1 only (the build cuts the later ones), as a 1.1 library would
 * be. Only what the test programs call is defined; it is a stand-in for the loader, not a runtime. */
#include <gradwire/gradwire.h>

uint32_t gw_abi_version_major(void) { return 1u; }
uint32_t gw_abi_version_minor(void) { return 1u; }
const char* gw_status_string(gw_status status) { return status == GW_OK ? "GW_OK" : "GW_ERR"; }
