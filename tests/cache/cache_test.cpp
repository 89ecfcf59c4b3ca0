// Drives tests/cache/cache_rank through `gradwire run -n N`: a case passes when every rank that should
// finish printed "OK rank r", and, for a failure case, every rank reported the expected error with the
// expected words.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "gw_test.hpp"

namespace {

gwtest::CommandResult run(int ranks, const std::string& args, const std::string& run_options = "") {
  return gwtest::run_command(gwtest::launch_command(ranks, GW_CACHE_RANK, args, run_options));
}

gwtest::CommandResult expect_ok(int ranks, const std::string& args, const std::string& run_options = "") {
  const auto r = run(ranks, args, run_options);
  gwtest::expect_every_rank_ok(r, ranks);
  return r;
}

// The line rank `rank` printed starting with `word`.
std::string line_of(const std::string& output, int rank, const std::string& word) {
  const std::string prefix = "[" + std::to_string(rank) + "] " + word;
  const size_t at = output.find(prefix);
  if (at == std::string::npos) return "";
  return output.substr(at, output.find('\n', at) - at);
}

// Every rank printed EXPECTED-ERROR with every one of `words`.
void expect_error_everywhere(int ranks, const std::string& args, const std::vector<std::string>& words) {
  const auto r = run(ranks, args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string line = line_of(r.output, rank, "EXPECTED-ERROR");
    ASSERT_FALSE(line.empty()) << "rank " << rank << " did not report the error:\n" << r.output;
    for (const auto& w : words) EXPECT_NE(line.find(w), std::string::npos) << "no \"" << w << "\" in: " << line;
  }
}

// The value after `key` on rank `rank`'s CHECKSUM line.
std::string field(const std::string& output, int rank, const std::string& key) {
  const std::string line = line_of(output, rank, "CHECKSUM");
  const size_t at = line.find(key + " ");
  if (at == std::string::npos) return "";
  const size_t from = at + key.size() + 1;
  return line.substr(from, line.find(' ', from) - from);
}

}  // namespace

// Random batches (other ranks' shards, repeats, empty lists) give every byte right, and the stats add up
// (checked on each rank); the data set's checksum does not depend on the number of ranks.
TEST(Cache, FetchesEveryByteOfRandomBatches) {
  const auto four = expect_ok(4, "fetch");
  const auto three = expect_ok(3, "fetch");
  const std::string checksum = field(four.output, 0, "CHECKSUM");
  ASSERT_FALSE(checksum.empty()) << four.output;
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(field(four.output, rank, "CHECKSUM"), checksum) << four.output;
  EXPECT_EQ(field(three.output, 0, "CHECKSUM"), checksum) << three.output;
  EXPECT_NE(field(four.output, 0, "FETCHED"), "0") << four.output;
}

// Node-shared: the same bytes; no rank holds a private copy, each node's segment holds its ranks' shards,
// and only samples of another node travel in messages (none on one node).
TEST(Cache, NodeSharedGivesTheSameBytesWithoutPrivateCopies) {
  const auto one_node = expect_ok(4, "fetch 4");
  const auto two_nodes = expect_ok(4, "fetch 2", "--ranks-per-node 2");
  const auto plain = expect_ok(4, "fetch");
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(field(one_node.output, rank, "PRIVATE"), "0") << one_node.output;
    EXPECT_EQ(field(one_node.output, rank, "FETCHED"), "0") << one_node.output;
    EXPECT_EQ(field(two_nodes.output, rank, "PRIVATE"), "0") << two_nodes.output;
    EXPECT_NE(field(two_nodes.output, rank, "FETCHED"), "0") << two_nodes.output;
    EXPECT_EQ(field(plain.output, rank, "PRIVATE"), std::to_string(250 * 37)) << plain.output;
    EXPECT_EQ(field(one_node.output, rank, "CHECKSUM"), field(plain.output, rank, "CHECKSUM"));
  }
  EXPECT_EQ(field(one_node.output, 0, "SHARED"), std::to_string(1000 * 37)) << one_node.output;
  EXPECT_EQ(field(two_nodes.output, 3, "SHARED"), std::to_string(500 * 37)) << two_nodes.output;
}

// An index out of range on one rank is an error on every rank, naming the rank, the index and the range;
// the next call works.
TEST(Cache, OutOfRangeIndexIsAnErrorOnEveryRank) {
  const auto r = expect_ok(3, "bad-index");
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_NE(line_of(r.output, rank, "EXPECTED-ERROR GW_ERR_INVALID_ARGUMENT"), "") << r.output;
}

// Ranks that disagree on the sample count or size: GW_ERR_MISMATCH naming the odd rank.
TEST(Cache, RanksWithAnotherShapeAreAMismatch) {
  expect_error_everywhere(4, "shape-mismatch count", {"GW_ERR_MISMATCH", "number of samples", "rank 2: 1001", "ranks 0, 1 and 3: 1000"});
  expect_error_everywhere(4, "shape-mismatch size", {"GW_ERR_MISMATCH", "bytes per sample", "rank 2: 38"});
}

// A rank whose storage holds other bytes: a checksum mismatch naming it and its neighbours.
TEST(Cache, DifferentContentIsAChecksumMismatchNamingTheRanks) {
  expect_error_everywhere(4, "content-mismatch", {"GW_ERR_MISMATCH", "checksum mismatch", "rank 1 and rank 2", "rank 2 and rank 3"});
  expect_error_everywhere(3, "wrong-checksum", {"GW_ERR_MISMATCH", "checksum mismatch", "options->checksum expects 0x0000000000001234"});
}

// A rank whose options are invalid, or whose loader fails: every rank fails at once, naming it.
TEST(Cache, BadOptionsOrAFailingLoaderFailEveryRankNamingIt) {
  const auto r = run(3, "bad-options");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(line_of(r.output, 1, "EXPECTED-ERROR GW_ERR_INVALID_ARGUMENT").find("options->load is NULL"), std::string::npos)
      << r.output;
  for (int rank : {0, 2})
    EXPECT_NE(line_of(r.output, rank, "EXPECTED-ERROR GW_ERR_INVALID_ARGUMENT").find("rank 1 refused its options"),
              std::string::npos) << r.output;
  expect_error_everywhere(3, "loader-fails", {"GW_ERR_NOT_FOUND", "load its shard"});
  const auto l = run(3, "loader-fails");
  EXPECT_NE(line_of(l.output, 2, "EXPECTED-ERROR").find("the loader returned GW_ERR_NOT_FOUND for samples [666, 1000)"),
            std::string::npos) << l.output;
  EXPECT_NE(line_of(l.output, 0, "EXPECTED-ERROR").find("rank 2 could not load its shard"), std::string::npos) << l.output;
}

namespace {

// Ranks 0 and 1 reported `status` naming rank 2, which left after creating the cache.
void expect_rank_2_named(const std::string& args, const std::string& status) {
  const auto r = run(3, args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int rank : {0, 1}) {
    const std::string line = line_of(r.output, rank, "EXPECTED-ERROR");
    ASSERT_FALSE(line.empty()) << "rank " << rank << " did not report rank 2:\n" << r.output;
    EXPECT_NE(line.find(status), std::string::npos) << line;
    EXPECT_NE(line.find("rank 2"), std::string::npos) << line;
  }
}

}  // namespace

// A rank that dies: the others' gw_cache_get fails with GW_ERR_TRANSPORT naming it.
TEST(Cache, DeadRankIsATransportErrorNamingIt) { expect_rank_2_named("dead-rank", "GW_ERR_TRANSPORT"); }

// A rank that never calls gw_cache_get (alive, elsewhere): the others' call ends after timeout_s (3 s
// here) with GW_ERR_TIMEOUT naming it, not a hang.
TEST(Cache, RankThatNeverCallsGetIsATimeoutNamingIt) { expect_rank_2_named("absent-rank", "GW_ERR_TIMEOUT"); }
