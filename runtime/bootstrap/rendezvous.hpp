// Gathering one blob from every rank before any transport exists: the communicator's creation hands
// each rank's record (its transports' addresses, its plugins and config hash) to an allgather and gets
// every rank's record back, index = rank.
#pragma once

#include <gradwire/gradwire.h>

#include <string>
#include <vector>

#include "bootstrap/launch_env.hpp"

namespace gw::bootstrap {

// Rank 0 opens a UCX listener (UCX's sockaddr connection manager) at the root address; the others
// connect over TCP, send their record, and receive every record. A rank that does not arrive within
// timeout_s ends every waiting rank with GW_ERR_TIMEOUT naming the missing ranks.
// `timeout_source` names where timeout_s came from in the messages.
std::vector<std::string> ucx_allgather(const LaunchInfo& launch, const std::string& mine, double timeout_s,
                                       const std::string& timeout_source = "[runtime] timeout_s");

// The application's own rendezvous (gw_comm_options.allgather): first the record sizes, then the
// records padded to the largest. A failing call throws its status (a positive one: GW_ERR_INTERNAL);
// output that does not hold this rank's size and record at index `rank` is GW_ERR_INVALID_ARGUMENT, a
// record size of 0 or over 1 GiB GW_ERR_CORRUPT.
std::vector<std::string> callback_allgather(gw_allgather_fn fn, void* user, uint32_t rank, uint32_t world_size,
                                            const std::string& mine);

// What a member of the rendezvous sends first: [magic : u32][rank : u32][world size : u32]
// [communicator : u32][record length : u64], little-endian. `communicator` numbers the rendezvous of a
// process (1, 2, ...): every rank creates its communicators in the same order, so the root serves one at
// a time and answers a member that arrives for another one with "retry".
struct RecordHeader {
  uint32_t magic = 0;
  uint32_t rank = 0;
  uint32_t world_size = 0;
  uint32_t communicator = 0;
  uint64_t length = 0;
};
constexpr size_t kRecordHeaderBytes = 24;
std::string encode_record_header(const RecordHeader& h);
RecordHeader decode_record_header(const unsigned char* p);  // kRecordHeaderBytes bytes
// The root's reply: [length : u64][status : i32][payload], length counting status and payload.
std::string encode_reply(int32_t status, const std::string& payload);

// Records as one byte string and back; parse throws GW_ERR_CORRUPT on malformed input.
std::string pack_records(const std::vector<std::string>& records);
std::vector<std::string> unpack_records(const std::string& bytes, uint32_t expected);

}  // namespace gw::bootstrap
