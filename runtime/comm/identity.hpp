// What every rank must agree on before it talks to the others: the plugins loaded (names and versions),
// the transport chosen and the effective configuration (its hash, and its keys so a difference can be
// named). Serialized into the bootstrap record; compared on every rank against rank 0's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "instance/runtime.hpp"

namespace gw::comm {

struct Identity {
  std::map<std::string, std::string> plugins;  // name -> version
  std::string transport;
  uint64_t config_hash = 0;
  std::map<std::string, std::string> config;  // "section.key" -> value, [runtime] excluded

  static Identity of(const Runtime& runtime, const std::string& transport);
  std::string serialize() const;
  static Identity parse(const std::string& text);
};

// Throws GW_ERR_MISMATCH listing, for every rank that differs from rank 0, what differs. Every rank
// computes the same message from the same records.
void check_identities(const std::vector<Identity>& identities);

}  // namespace gw::comm
