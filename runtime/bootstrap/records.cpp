#include <cstring>

#include "bootstrap/rendezvous.hpp"
#include "core/error.hpp"

namespace gw::bootstrap {

// [n : u32][length : u64] * n [bytes] * n, little-endian.
std::string pack_records(const std::vector<std::string>& records) {
  std::string out(sizeof(uint32_t) + records.size() * sizeof(uint64_t), '\0');
  const uint32_t n = uint32_t(records.size());
  std::memcpy(out.data(), &n, sizeof(n));
  for (size_t i = 0; i < records.size(); ++i) {
    const uint64_t len = records[i].size();
    std::memcpy(out.data() + sizeof(n) + i * sizeof(len), &len, sizeof(len));
  }
  for (const auto& r : records) out += r;
  return out;
}

std::vector<std::string> unpack_records(const std::string& bytes, uint32_t expected) {
  uint32_t n = 0;
  if (bytes.size() < sizeof(n)) fail(GW_ERR_CORRUPT, "bootstrap: the gathered records are truncated");
  std::memcpy(&n, bytes.data(), sizeof(n));
  if (n != expected)
    fail(GW_ERR_CORRUPT, "bootstrap: gathered " + std::to_string(n) + " records, expected " + std::to_string(expected));
  size_t pos = sizeof(n) + size_t(n) * sizeof(uint64_t);
  if (bytes.size() < pos) fail(GW_ERR_CORRUPT, "bootstrap: the gathered records are truncated");
  std::vector<std::string> records(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t len = 0;
    std::memcpy(&len, bytes.data() + sizeof(n) + i * sizeof(len), sizeof(len));
    if (len > bytes.size() - pos) fail(GW_ERR_CORRUPT, "bootstrap: the gathered records are truncated");
    records[i] = bytes.substr(pos, len);
    pos += len;
  }
  return records;
}

std::vector<std::string> callback_allgather(gw_allgather_fn fn, void* user, uint32_t rank, uint32_t world_size,
                                            const std::string& mine) {
  (void)rank;
  const uint64_t my_size = mine.size();
  std::vector<uint64_t> sizes(world_size);
  gw_status st = fn(user, &my_size, sizeof(my_size), sizes.data());
  if (st != GW_OK)
    fail(st < 0 ? st : GW_ERR_INTERNAL, "bootstrap: the application's allgather callback failed with " +
                                            std::string(gw_status_string(st)) + " (gathering record sizes)");
  uint64_t largest = 0;
  for (uint64_t s : sizes) largest = std::max(largest, s);
  std::string padded = mine;
  padded.resize(largest);
  std::string all(largest * world_size, '\0');
  st = fn(user, padded.data(), largest, all.data());
  if (st != GW_OK)
    fail(st < 0 ? st : GW_ERR_INTERNAL, "bootstrap: the application's allgather callback failed with " +
                                            std::string(gw_status_string(st)) + " (gathering records)");
  std::vector<std::string> records(world_size);
  for (uint32_t r = 0; r < world_size; ++r) {
    if (sizes[r] > largest) fail(GW_ERR_CORRUPT, "bootstrap: the allgather callback returned inconsistent sizes");
    records[r] = all.substr(size_t(r) * largest, sizes[r]);
  }
  return records;
}

}  // namespace gw::bootstrap
