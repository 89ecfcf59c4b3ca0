// toml++ (Debian's shared libtomlplusplus) and the configuration's helpers around it.
#pragma once

#include <toml++/toml.h>

#include <string>

#include "config/schema.hpp"

namespace gw::config {

// Parses a key's default (a TOML literal) and checks it against the key's type, range and choices;
// throws GW_ERR_PLUGIN naming `section` and the key when it does not fit.
void check_default(const KeySpec& key, const std::string& section);
// The default as a TOML node.
toml::table parse_default(const KeySpec& key);
// "file:line:column" of a node, or "" when it has no source position.
std::string position(const toml::source_region& region);

}  // namespace gw::config
