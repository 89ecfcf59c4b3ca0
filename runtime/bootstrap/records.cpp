#include <algorithm>
#include <cstring>

#include "bootstrap/rendezvous.hpp"
#include "core/bytes.hpp"
#include "core/error.hpp"

namespace gw::bootstrap {

std::string encode_record_header(const RecordHeader& h) {
  bytes::ByteWriter w;
  w.u32(h.magic);
  w.u32(h.rank);
  w.u32(h.world_size);
  w.u32(h.communicator);
  w.u64(h.length);
  return w.take_string();
}

RecordHeader decode_record_header(const unsigned char* p) {
  RecordHeader h;
  h.magic = uint32_t(bytes::get_le(p, 4));
  h.rank = uint32_t(bytes::get_le(p + 4, 4));
  h.world_size = uint32_t(bytes::get_le(p + 8, 4));
  h.communicator = uint32_t(bytes::get_le(p + 12, 4));
  h.length = bytes::get_le(p + 16, 8);
  return h;
}

std::string encode_reply(int32_t status, const std::string& payload) {
  bytes::ByteWriter w;
  w.u64(sizeof(int32_t) + payload.size());
  w.i32(status);
  w.raw(payload.data(), payload.size());
  return w.take_string();
}

// [n : u32][length : u64] * n [bytes] * n, little-endian.
std::string pack_records(const std::vector<std::string>& records) {
  bytes::ByteWriter w;
  w.u32(uint32_t(records.size()));
  for (const auto& r : records) w.u64(r.size());
  for (const auto& r : records) w.raw(r.data(), r.size());
  return w.take_string();
}

std::vector<std::string> unpack_records(const std::string& packed, uint32_t expected) {
  bytes::ByteReader r(packed.data(), packed.size(), "bootstrap: the gathered record set",
                      "every rank must run the same gradwire version");
  const uint32_t n = r.u32();
  if (n != expected)
    fail(GW_ERR_CORRUPT, "bootstrap: gathered " + std::to_string(n) + " records, expected " + std::to_string(expected));
  if (uint64_t(n) * 8 > r.remaining()) r.corrupt("it is cut off");
  std::vector<uint64_t> lengths(n);
  for (auto& len : lengths) len = r.u64();
  std::vector<std::string> records(n);
  for (uint32_t i = 0; i < n; ++i) {
    const unsigned char* at = r.raw(lengths[i]);
    records[i].assign(reinterpret_cast<const char*>(at), lengths[i]);
  }
  return records;
}

namespace {

// Records are a few kilobytes; a larger size means the callback returned something else.
constexpr uint64_t kMaxRecordBytes = uint64_t(1) << 30;

void call(gw_allgather_fn fn, void* user, const void* in, uint64_t bytes, void* out, uint32_t rank,
          uint32_t world_size, const char* which) {
  const gw_status st = fn(user, in, bytes, out);
  if (st == GW_OK) return;
  fail(st < 0 ? st : GW_ERR_INTERNAL,
       "bootstrap: the application's allgather callback (gw_comm_options.allgather) returned " +
           std::string(gw_status_string(st)) + " on rank " + std::to_string(rank) + " of " +
           std::to_string(world_size) + ", in its " + which +
           ". The runtime cannot see into the application's rendezvous: the callback's own output should say "
           "what failed or which rank it missed; the other ranks' callbacks miss this rank and must fail or time "
           "out on their own (each must bound its waits)");
}

}  // namespace

std::vector<std::string> callback_allgather(gw_allgather_fn fn, void* user, uint32_t rank, uint32_t world_size,
                                            const std::string& mine) {
  const uint64_t my_size = mine.size();
  std::vector<uint64_t> sizes(world_size);
  call(fn, user, &my_size, sizeof(my_size), sizes.data(), rank, world_size,
       "first call (gathering every rank's record size, 8 bytes each)");
  // A callback that does not gather in rank order would connect the ranks to the wrong addresses.
  if (sizes[rank] != my_size)
    fail(GW_ERR_INVALID_ARGUMENT,
         "bootstrap: the application's allgather callback put " + std::to_string(sizes[rank]) + " at index " +
             std::to_string(rank) + " where this rank passed " + std::to_string(my_size) +
             "; out must hold every rank's bytes in rank order (world_size * bytes)");
  uint64_t largest = 0;
  for (uint32_t r = 0; r < world_size; ++r) {
    if (sizes[r] == 0 || sizes[r] > kMaxRecordBytes)
      fail(GW_ERR_CORRUPT, "bootstrap: the application's allgather callback returned a record size of " +
                               std::to_string(sizes[r]) + " bytes for rank " + std::to_string(r) +
                               " (is that rank running another program, or is the callback's output misplaced?)");
    largest = std::max(largest, sizes[r]);
  }
  std::string padded = mine;
  padded.resize(largest);
  std::string all(largest * world_size, '\0');
  call(fn, user, padded.data(), largest, all.data(), rank, world_size,
       ("second call (gathering the records, " + std::to_string(largest) + " bytes each)").c_str());
  std::vector<std::string> records(world_size);
  for (uint32_t r = 0; r < world_size; ++r) records[r] = all.substr(size_t(r) * largest, sizes[r]);
  if (records[rank] != mine)
    fail(GW_ERR_INVALID_ARGUMENT, "bootstrap: the application's allgather callback did not return this rank's record "
                                  "at index " + std::to_string(rank) +
                                  "; out must hold every rank's bytes in rank order (world_size * bytes)");
  return records;
}

}  // namespace gw::bootstrap
