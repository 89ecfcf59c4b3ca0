// libFuzzer target of the bootstrap records (runtime/bootstrap/records.cpp and the identity text of
// runtime/comm/identity.cpp): what every rank receives from the others at communicator creation. The
// input's first byte is the number of records expected (0-7), the rest the gathered bytes. unpack_records
// must return that many records or throw GW_ERR_CORRUPT; records it returns pack back to bytes that
// unpack to the same records; the first record, parsed as an identity, is accepted or GW_ERR_CORRUPT,
// and an accepted one serializes to a text that parses to the same identity. Any other exception, a
// crash or an out-of-bounds access (ASan) is a finding.
#include <gradwire/gradwire.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "bootstrap/rendezvous.hpp"
#include "comm/identity.hpp"
#include "core/error.hpp"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "finding: %s\n", what.c_str());
  std::abort();
}

bool same(const gw::comm::Identity& a, const gw::comm::Identity& b) {
  return a.plugins == b.plugins && a.transport == b.transport && a.config_hash == b.config_hash && a.config == b.config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint32_t expected = data[0] % 8;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const std::vector<std::string> records = gw::bootstrap::unpack_records(bytes, expected);
    if (records.size() != expected) finding("unpack_records returned another number of records than expected");
    if (gw::bootstrap::unpack_records(gw::bootstrap::pack_records(records), expected) != records)
      finding("records do not survive pack and unpack");
    if (!records.empty()) {
      const gw::comm::Identity id = gw::comm::Identity::parse(records[0]);
      const gw::comm::Identity back = gw::comm::Identity::parse(id.serialize());
      if (!same(id, back)) finding("an identity does not survive serialize and parse");
      gw::comm::check_identities({id, back});  // equal identities are never a mismatch
    }
  } catch (const gw::Error& e) {
    if (e.status() != GW_ERR_CORRUPT) finding(std::string("status ") + gw_status_string(e.status()) + ": " + e.what());
  } catch (const std::exception& e) {
    finding(std::string("an exception that is not a gw::Error: ") + e.what());
  }
  return 0;
}
