/*
 * gradwire/plugin.h — the whole contract of a gradwire plugin, every kind.
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
 * One header per kind, the way CLAP splits its headers: plugin_core.h (what every kind shares),
 * plugin_codec.h, plugin_transport.h, plugin_schedule.h. A plugin of one kind may include only its
 * kind's header; this one includes them all.
 *
 * The guides that explain this file with working examples: docs/plugin-guide.md (codecs, the basics)
 * and docs/transport-guide.md (the transport contract, and the shorter schedule contract).
 */
#ifndef GRADWIRE_PLUGIN_H
#define GRADWIRE_PLUGIN_H

#include "plugin_core.h"
#include "plugin_codec.h"
#include "plugin_transport.h"
#include "plugin_schedule.h"

#endif /* GRADWIRE_PLUGIN_H */
