// The cost model: each formula against a value worked out by hand, the file's round trip and errors,
// and the auto codec's choice on a fast and a slow link.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "model/model.hpp"

namespace gw::model {
namespace {

const CodecCost kNone{"none", CodecKind::Dense, 1, 0, 0};

Topology flat(uint64_t n, double alpha, double beta, double gamma = 0, double cores = 1e9) {
  Topology t;
  t.nodes = n;
  t.per_node = 1;
  t.inter = t.intra = Link{alpha, beta};
  t.cores = cores;
  t.gamma = gamma;
  return t;
}

// `nodes` nodes of `per_node` ranks on `cores` cores each, a link inside them and one between them.
Topology nodes_of(uint64_t nodes, uint64_t per_node, Link intra, Link inter, double cores, double gamma = 0) {
  Topology t;
  t.nodes = nodes;
  t.per_node = per_node;
  t.intra = intra;
  t.inter = inter;
  t.cores = cores;
  t.gamma = gamma;
  return t;
}

TEST(ModelFormulas, RingIsTwoNMinusOneAlphaPlusTwoNMinusOneOverNBytes) {
  const Cost c = exchange(kNone, 1e6, flat(4, 1e-5, 1e-8, 1e-9));
  EXPECT_EQ(c.algorithm, Algorithm::Ring);
  EXPECT_NEAR(c.latency, 6e-5, 1e-12);
  EXPECT_NEAR(c.bytes_sent, 1.5e6, 1e-6);
  EXPECT_NEAR(c.wire, 1.5e-2, 1e-12);
  EXPECT_NEAR(c.cpu, 0.75e6 * 1e-9, 1e-12);
  EXPECT_NEAR(c.total, 6e-5 + 1.5e-2 + 0.75e-3, 1e-12);
}

TEST(ModelFormulas, RecursiveDoublingBelowTheThresholdAndFoldForNonPowersOfTwo) {
  const Cost eight = exchange(kNone, 1024, flat(8, 1e-5, 1e-9));
  EXPECT_EQ(eight.algorithm, Algorithm::RecursiveDoubling);
  EXPECT_NEAR(eight.latency, 3e-5, 1e-12);
  EXPECT_NEAR(eight.bytes_sent, 3 * 1024, 1e-9);
  const Cost six = exchange(kNone, 1024, flat(6, 1e-5, 1e-9));
  EXPECT_NEAR(six.latency, 4e-5, 1e-12);  // 2 doubling rounds + fold + unfold
  EXPECT_EQ(exchange(kNone, 1 << 20, flat(6, 1e-5, 1e-9)).algorithm, Algorithm::Ring);
}

TEST(ModelFormulas, SummableRingSendsTheRingsBytesOverTheRatio) {
  const CodecCost fp16{"fp16", CodecKind::Summable, 2, 1e-10, 1e-10};
  const Topology t = flat(4, 0, 1e-8);
  const Cost c = exchange(fp16, 4e6, t);
  EXPECT_EQ(c.algorithm, Algorithm::Summable);
  EXPECT_NEAR(c.bytes_sent, exchange(kNone, 4e6, t).bytes_sent / 2, 1e-6);
  // encode: M/n (e + d) + (n-1)/n M (e + 2d) = 1e6 * 2e-10 + 3e6 * 3e-10 (the owner decodes its own
  // final encoding, as every rank does)
  EXPECT_NEAR(c.encode, 2e-4 + 9e-4, 1e-12);
  // pipelined: the slower stage plus the faster one over the pieces of a block (1 MB: one piece)
  EXPECT_NEAR(c.total, std::max(c.wire, c.cpu) + std::min(c.wire, c.cpu), 1e-12);
}

TEST(ModelFormulas, ScatterReduceAllgatherRequantizesOnce) {
  const CodecCost int8{"int8", CodecKind::Quantized, 4, 1e-10, 2e-10};
  const Cost c = exchange(int8, 8e6, flat(4, 0, 1e-8));
  EXPECT_EQ(c.algorithm, Algorithm::ScatterReduceAllgather);
  EXPECT_NEAR(c.bytes_sent, 2 * 3.0 / 4 * 8e6 / 4, 1e-6);
  // encode (n-1)/n M + M/n (the owner's re-quantization) = M e; decode (n-1)/n M (the contributions)
  // and M (every owner's result, the rank's own block too, so that all ranks hold the same values)
  EXPECT_NEAR(c.encode, 8e6 * 1e-10 + 1.75 * 8e6 * 2e-10, 1e-12);
}

TEST(ModelFormulas, ContributionsAreSummedAsTheyAreDecoded) {
  // The scatter-reduce owner and the summable ring decode contributions onto a buffer
  // (GW_DECODE_ACCUMULATE): measured, that cost replaces a decode followed by a sum (gamma).
  const Topology t = flat(4, 0, 1e-8, 1e-10);
  CodecCost int8{"int8", CodecKind::Quantized, 4, 1e-10, 2e-10};
  Cost c = exchange(int8, 8e6, t);
  // M e + (n-1)/n M (d + gamma) + M d; the owner adds its own values: M/n gamma
  EXPECT_NEAR(c.encode, 8e-4 + 6e6 * 3e-10 + 8e6 * 2e-10, 1e-12);
  EXPECT_NEAR(c.cpu, c.encode + 2e6 * 1e-10, 1e-12);
  int8.decode_accumulate = 2.5e-10;
  c = exchange(int8, 8e6, t);
  EXPECT_NEAR(c.encode, 8e-4 + 6e6 * 2.5e-10 + 8e6 * 2e-10, 1e-12);
  EXPECT_NEAR(c.cpu, c.encode + 2e6 * 1e-10, 1e-12);
  CodecCost fp16{"fp16", CodecKind::Summable, 2, 1e-10, 1e-10};
  fp16.decode_accumulate = 1.5e-10;
  c = exchange(fp16, 4e6, t);
  // M/n (e + d) + (n-1)/n M (e + decode adding + d), and no separate sum
  EXPECT_NEAR(c.encode, 2e-4 + 3e6 * 3.5e-10, 1e-12);
  EXPECT_NEAR(c.cpu, c.encode, 1e-12);
}

TEST(ModelFormulas, SparseAllgatherUntilPayloadsOutweighTheDenseRing) {
  const CodecCost topk{"topk", CodecKind::Sparse, 40, 1e-10, 1e-9};
  const Cost small = exchange(topk, 4e6, flat(8, 0, 1e-8));
  EXPECT_EQ(small.algorithm, Algorithm::SparseAllgather);
  EXPECT_NEAR(small.bytes_sent, 7 * 1e5, 1e-6);
  EXPECT_NEAR(small.encode, 4e6 * 1e-10 + 8 * 1e5 * 1e-9, 1e-12);
  const Cost large = exchange(topk, 4e6, flat(128, 0, 1e-8));  // 128 / 40 > 2
  EXPECT_EQ(large.algorithm, Algorithm::SparseDense);
  EXPECT_NEAR(large.bytes_sent, exchange(kNone, 4e6, flat(128, 0, 1e-8)).bytes_sent, 1e-6);
}

// Where every rank sends to every other at once, the flows that share a link finish unevenly: the
// all-to-all algorithms take the link's measured all-to-all rate (never faster than beta), the rings and
// the shared-index reduction keep beta.
TEST(ModelFormulas, AllToAllAlgorithmsTakeTheLinksAllToAllRate) {
  const CodecCost int8{"int8", CodecKind::Quantized, 4, 0, 0};
  const CodecCost topk{"topk", CodecKind::Sparse, 40, 0, 0};
  const CodecCost fp16{"fp16", CodecKind::Summable, 2, 0, 0};
  Topology t = flat(8, 0, 1e-8);
  const Cost int8_p2p = exchange(int8, 8e6, t), topk_p2p = exchange(topk, 4e6, t), fp16_p2p = exchange(fp16, 8e6, t);
  const Cost none_p2p = exchange(kNone, 8e6, t);
  t.inter.all_to_all_beta = t.intra.all_to_all_beta = 1.25e-8;
  EXPECT_NEAR(exchange(int8, 8e6, t).wire, int8_p2p.bytes_sent * 1.25e-8, 1e-12);
  EXPECT_NEAR(exchange(int8, 8e6, t).wire, 1.25 * int8_p2p.wire, 1e-12);
  EXPECT_NEAR(exchange(topk, 4e6, t).wire, 1.25 * topk_p2p.wire, 1e-12);
  EXPECT_NEAR(exchange(fp16, 8e6, t).wire, fp16_p2p.wire, 1e-12);
  EXPECT_NEAR(exchange(kNone, 8e6, t).wire, none_p2p.wire, 1e-12);
  // A measured all-to-all faster than one flow (the probe's noise) does not make the link faster.
  t.inter.all_to_all_beta = t.intra.all_to_all_beta = 0.5e-8;
  EXPECT_NEAR(exchange(int8, 8e6, t).wire, int8_p2p.wire, 1e-12);
  // A link given another rate forgets the old one's all-to-all rate.
  EXPECT_EQ(with_beta(t.inter, 1e-9).all_to_all_beta, 0);
  // Two ranks, each behind its link: one flow each way, whatever the link's all-to-all rate.
  Topology two = flat(2, 0, 1e-8);
  const double int8_two = exchange(int8, 8e6, two).wire;
  two.inter.all_to_all_beta = two.intra.all_to_all_beta = 1.25e-8;
  EXPECT_NEAR(exchange(int8, 8e6, two).wire, int8_two, 1e-12);
}

// Nodes of g ranks: the flat all-to-all shares a node's link among its ranks' off-node flows, and the
// two-level cross phase sends the node's g shards at once, both at the link's all-to-all rate.
TEST(ModelFormulas, NodesAllToAllTrafficTakesTheUplinksAllToAllRate) {
  const CodecCost int8{"int8", CodecKind::Quantized, 4, 0, 0};
  Link inter{0, 8e-9};
  Topology t = nodes_of(4, 2, Link{0, 1e-10, 1e-10}, inter, 1e9);
  const double M = 1e8;
  const Cost flat_p2p = exchange(int8, M, t, Algorithm::ScatterReduceAllgather);
  const Cost two_p2p = exchange(int8, M, t, Algorithm::TwoLevel);
  t.inter.all_to_all_beta = 1e-8;
  EXPECT_NEAR(exchange(int8, M, t, Algorithm::ScatterReduceAllgather).wire, 1.25 * flat_p2p.wire, 1e-9);
  const Cost two = exchange(int8, M, t, Algorithm::TwoLevel);
  const double intra_wire = 2 * (M / 2) * 1e-10;  // the node's own reduce-scatter and allgather
  EXPECT_NEAR(two.wire - intra_wire, 1.25 * (two_p2p.wire - intra_wire), 1e-9);
}

TEST(ModelFormulas, SharedIndicesReduceTheValuesDensely) {
  const CodecCost randomk{"randomk", CodecKind::SharedIndices, 100, 1e-10, 1e-10};
  const Topology t = flat(4, 1e-5, 1e-8);
  const Cost c = exchange(randomk, 1e8, t);
  const Cost values = exchange(kNone, 1e6, t);
  EXPECT_EQ(c.algorithm, Algorithm::SharedIndices);
  EXPECT_NEAR(c.bytes_sent, values.bytes_sent, 1e-6);
  EXPECT_NEAR(c.total, values.total + 1e8 * 2e-10, 1e-12);
  // With its cost measured while every core runs it, that cost: the ranks encode (and decode) at once.
  CodecCost busy = randomk;
  busy.encode_all_cores = 1.5e-10;
  busy.decode_all_cores = 2.5e-10;
  EXPECT_NEAR(exchange(busy, 1e8, t).total, values.total + 1e8 * 4e-10, 1e-12);
  // Only where measured: either one alone falls back to its own cost alone.
  busy.encode_all_cores = 0;
  EXPECT_NEAR(exchange(busy, 1e8, t).total, values.total + 1e8 * 3.5e-10, 1e-12);
  // The pipelined algorithms keep the costs alone (their ranks' codec work interleaves with transfers).
  CodecCost int8{"int8", CodecKind::Quantized, 4, 1e-10, 1e-10, 1e-10};
  const double alone = exchange(int8, 1e8, t).total;
  int8.encode_all_cores = int8.decode_all_cores = 9e-10;
  EXPECT_DOUBLE_EQ(exchange(int8, 1e8, t).total, alone);
}

// A codec's table by size: each cost interpolated at the bytes the host's ranks keep in the caches (the
// all-cores costs per copy), held at the first size below it, the codec's own figures past the last
// size and for costs the table lacks; exchange() looks it up at twice the buffer per rank of the host.
TEST(ModelFormulas, CodecCostsFollowTheBytesTheHostsRanksKeep) {
  CodecCost randomk{"randomk", CodecKind::SharedIndices, 100, 4e-10, 8e-10};
  randomk.encode_all_cores = 5e-10, randomk.decode_all_cores = 9e-10;
  randomk.sizes = {1e6, 3e6, 5e6};
  randomk.at_sizes = {{1e-10, 2e-10, 0, 1.5e-10, 2.5e-10},
                      {3e-10, 6e-10, 0, 3.5e-10, 6.5e-10},
                      {4e-10, 8e-10, 0, 5e-10, 9e-10}};
  randomk.copies = 2;
  const CodecCost below = codec_at(randomk, 5e5);
  EXPECT_DOUBLE_EQ(below.encode, 1e-10);
  EXPECT_DOUBLE_EQ(below.decode, 2e-10);
  EXPECT_DOUBLE_EQ(below.encode_all_cores, 1.5e-10);
  EXPECT_DOUBLE_EQ(below.decode_accumulate, 0);  // not measured stays not measured
  EXPECT_TRUE(below.sizes.empty());
  EXPECT_TRUE(below.at_sizes.empty());
  const CodecCost mid = codec_at(randomk, 2e6);
  EXPECT_NEAR(mid.encode, 2e-10, 1e-22);
  EXPECT_NEAR(mid.decode, 4e-10, 1e-22);
  EXPECT_NEAR(mid.encode_all_cores, 1.5e-10, 1e-22);  // 1e6 per copy: the first size's
  EXPECT_NEAR(codec_at(randomk, 8e6).decode_all_cores, 7.75e-10, 1e-22);  // 4e6 per copy
  const CodecCost past = codec_at(randomk, 6e6);
  EXPECT_DOUBLE_EQ(past.encode, 4e-10);
  EXPECT_DOUBLE_EQ(past.decode_all_cores, 6.5e-10);  // 3e6 per copy
  EXPECT_DOUBLE_EQ(codec_at(randomk, 1e12).decode_all_cores, 9e-10);
  CodecCost plain = randomk;
  plain.sizes.clear(), plain.at_sizes.clear();
  EXPECT_DOUBLE_EQ(codec_at(plain, 1e5).encode, 4e-10);
  // A cost missing at one size of the table is taken as the codec's own.
  CodecCost gap = randomk;
  gap.at_sizes[1].encode = 0;
  EXPECT_DOUBLE_EQ(codec_at(gap, 2e6).encode, 4e-10);
  // exchange(): shared indices run on every core at once; 2 ranks of 5e5 bytes each on one host keep
  // 2 * 2 * 5e5 = 2e6 bytes, 1e6 per copy.
  Topology t = flat(2, 0, 1e-9);
  t.host_ranks = 2;
  const double M = 5e5;
  const Cost values = exchange(kNone, M / 100, t);
  EXPECT_NEAR(exchange(randomk, M, t).total, values.total + M * (1.5e-10 + 2.5e-10), 1e-15);
  t.host_ranks = 0;  // a node's ranks: one per node here, 1e6 bytes
  EXPECT_NEAR(exchange(randomk, M, t).total, values.total + M * (1.5e-10 + 2.5e-10), 1e-15);
  t.host_ranks = 8;  // 8e6 bytes, 4e6 per copy
  EXPECT_NEAR(exchange(randomk, M, t).total, values.total + M * (4.25e-10 + 7.75e-10), 1e-15);
}

TEST(ModelFormulas, TwoLevelPaysTheInterNodeLatencyPerNodeNotPerRank) {
  Topology t = nodes_of(100, 8, Link{1e-6, 1e-11}, Link{5e-5, 8e-10}, 64);
  const Cost ring = exchange(kNone, 1e8, t, Algorithm::Ring);
  const Cost two = exchange(kNone, 1e8, t, Algorithm::TwoLevel);
  EXPECT_NEAR(ring.latency, 2 * 799 * 5e-5, 1e-9);
  EXPECT_NEAR(two.latency, 2 * 7 * 1e-6 + 2 * 99 * 5e-5, 1e-9);
  // The inter-node link carries each node's 8 shards at once: 2 (N-1)/N M beta in all.
  EXPECT_NEAR(two.wire, 2 * 7.0 / 8 * 1e8 * 1e-11 + 2 * 99.0 / 100 * 1e8 * 8e-10, 1e-9);
  EXPECT_LT(two.total, ring.total);
  // One node: two-level is the flat algorithm.
  Topology one = t;
  one.nodes = 1;
  EXPECT_NEAR(exchange(kNone, 1e8, one, Algorithm::TwoLevel).total, exchange(kNone, 1e8, one).total, 1e-12);
}

// The node's reduce-scatter and allgather run in the same pipeline as the inter-node exchange: behind a
// slow uplink they hide under its wire (only a piece's worth shows); on a node with more ranks than cores
// a shared-memory link, whose bytes are the cores' own copies (cpu = beta), is stretched by their sharing.
TEST(ModelFormulas, TwoLevelPipelinesTheNodesTrafficWithTheUplink) {
  Topology t = nodes_of(2, 2, Link{0, 1e-10, 1e-10}, Link{0, 8e-9}, 2, 1e-10);  // a core per rank
  Settings st;
  const double M = 1e8, pieces = std::ceil(M / 2 / st.chunk_bytes);
  const Cost two = exchange(kNone, M, t, Algorithm::TwoLevel, st);
  const double node = 2 * (M / 2) * 1e-10 + (M / 2) * 1e-10;  // the node's copies and its sum
  const double uplink = (M / 2) * 8e-9 * 2;                    // the 2 shards cross one link at once
  // The cross group gathers the 2 nodes' sums: the other node's added onto this one's, then averaged.
  const double cross_sum = 2 * (M / 2) * 1e-10;
  EXPECT_NEAR(two.total, uplink + (node + cross_sum) / pieces, 1e-9);
  // 4 ranks per core: the node's copies and sums take 4 times as long, still under the uplink here...
  Topology crowded = t;
  crowded.cores = 0.5;
  const Cost shared = exchange(kNone, M, crowded, Algorithm::TwoLevel, st);
  EXPECT_NEAR(shared.total, uplink + 4 * (node + cross_sum) / pieces, 1e-9);
  // ...and pace the exchange once the uplink is fast.
  crowded.inter.beta = 1e-11;
  const Cost fast = exchange(kNone, M, crowded, Algorithm::TwoLevel, st);
  EXPECT_NEAR(fast.total, 4 * (node + cross_sum) + (M / 2) * 1e-11 * 2 / pieces, 1e-9);
}

// The cross phase gathers (two_level_cross): (M - 1) payloads per rank instead of 2 (M - 1) / M, each
// node's sum encoded once and every node's payload decoded; auto gathers with 2 nodes only.
TEST(ModelFormulas, TwoLevelGatherSendsEveryNodesPayloadToEveryNode) {
  const CodecCost int8{"int8", CodecKind::Quantized, 4, 1e-10, 1e-10};
  Topology t = nodes_of(4, 2, Link{0, 1e-10, 1e-10}, Link{0, 8e-9}, 2);
  const double M = 1e8, shard = M / 2;
  Settings st;
  const Cost scatter = exchange(int8, M, t, Algorithm::TwoLevel, st);
  st.two_level_cross = "gather";
  const Cost gather = exchange(int8, M, t, Algorithm::TwoLevel, st);
  const double intra = 2 * (M / 2);  // the node's raw reduce-scatter and allgather
  EXPECT_NEAR(scatter.bytes_sent, intra + 2.0 * 3 / 4 * shard / 4, 1e-3);
  EXPECT_NEAR(gather.bytes_sent, intra + 3 * shard / 4, 1e-3);
  EXPECT_NEAR(gather.encode, shard * 1e-10 + 4 * shard * 1e-10, 1e-12);
  EXPECT_GT(gather.total, 1.9 * scatter.total);  // the uplink paces both, and carries twice the bytes
  st.two_level_cross = "scatter";
  EXPECT_NEAR(exchange(int8, M, t, Algorithm::TwoLevel, st).total, scatter.total, 1e-12);
  t.nodes = 2;
  st.two_level_cross = "auto";
  EXPECT_NEAR(exchange(int8, M, t, Algorithm::TwoLevel, st).bytes_sent, intra + shard / 4, 1e-3);
}

// gw_allreduce_compressed's two-level allreduce sends "none" through its cross phase like any codec:
// each node's sum copied into a payload, gathered (2 nodes) or scatter-reduced (more), copied out; with
// none's copies measured the model prices them.
TEST(ModelFormulas, TwoLevelCrossCopiesUncompressedSums) {
  const CodecCost none{"none", CodecKind::Dense, 1, 1e-10, 2e-10, 3e-10};
  Topology t = nodes_of(2, 2, Link{0, 1e-10, 1e-10}, Link{0, 1e-11}, 2, 1e-10);
  const double M = 1e8, shard = M / 2;
  const Cost gather = exchange(none, M, t, Algorithm::TwoLevel);
  EXPECT_NEAR(gather.encode, shard * (1e-10 + 2e-10 + 3e-10), 1e-12);  // copy in, copy out, add
  EXPECT_NEAR(gather.bytes_sent, 2 * (M / 2) + shard, 1e-3);
  EXPECT_GT(gather.total, exchange(kNone, M, t, Algorithm::TwoLevel).total);
  // 4 nodes: scatter-reduce-allgather on the shard, 2 (N - 1) / N of it per rank.
  t.nodes = 4;
  const Cost scatter = exchange(none, M, t, Algorithm::TwoLevel);
  EXPECT_NEAR(scatter.bytes_sent, 2 * (M / 2) + 2.0 * 3 / 4 * shard, 1e-3);
  EXPECT_NEAR(scatter.encode, 3.0 / 4 * shard * 1e-10 + shard / 4 * 1e-10 + 3.0 / 4 * shard * 3e-10 + shard * 2e-10, 1e-12);
  // The flat dense allreduce (what gw_sync runs uncompressed) copies nothing, and one rank does nothing.
  EXPECT_EQ(exchange(none, M, t).encode, 0);
  EXPECT_EQ(exchange(none, M, flat(1, 1e-6, 1e-9)).total, 0);
}

// A flat algorithm over nodes of several ranks: the wire is the slower link's, but the cores' transport
// work is each link's own for the bytes it carries (a ring sends 1 / g of a rank's bytes off the node, an
// all-to-all (n - g) / (n - 1)).
TEST(ModelFormulas, FlatAlgorithmsPayEachLinksCpuForItsBytes) {
  Topology t = nodes_of(2, 2, Link{0, 1e-10, 1e-10}, Link{0, 1e-9, 8e-10}, 2);  // a core per rank
  const double M = 1e8;
  const Cost ring = exchange(kNone, M, t, Algorithm::Ring);
  EXPECT_NEAR(ring.transport, 1.5 * M * (0.5 * 8e-10 + 0.5 * 1e-10), 1e-9);
  EXPECT_NEAR(ring.wire, 1.5 * M * 1e-9, 1e-9);
  const CodecCost int8{"int8", CodecKind::Quantized, 4, 1e-10, 1e-10};
  const Cost sra = exchange(int8, M, t);
  EXPECT_NEAR(sra.transport, sra.bytes_sent * (2.0 / 3 * 8e-10 + 1.0 / 3 * 1e-10), 1e-9);
}

// The pipeline fills and drains with a piece of codec work; the transport's work per byte happens as
// its bytes travel, so behind a slow wire it adds nothing.
TEST(ModelFormulas, PipelinesFillWithCodecWorkNotTransportWork) {
  const CodecCost int8{"int8", CodecKind::Quantized, 4, 1e-10, 1e-10};
  Topology t = flat(2, 0, 1e-8);
  Settings st;
  const double M = 8e6, pieces = std::ceil(M / 2 / st.chunk_bytes);
  const Cost quiet = exchange(int8, M, t, Algorithm::Auto, st);
  t.intra.cpu = t.inter.cpu = 2e-9;
  const Cost busy = exchange(int8, M, t, Algorithm::Auto, st);
  EXPECT_GT(busy.transport, quiet.cpu);
  EXPECT_LT(busy.transport + busy.cpu, busy.wire);
  EXPECT_NEAR(busy.total, busy.latency + busy.wire + busy.cpu / pieces, 1e-12);
  EXPECT_NEAR(busy.total, quiet.total, 1e-12);
}

TEST(ModelFormulas, RanksSharingCoresStretchTheCpuTerm) {
  const CodecCost int8{"int8", CodecKind::Quantized, 4, 1e-9, 1e-9};
  Topology t = flat(1, 0, 0);
  t.nodes = 1;
  t.per_node = 4;
  t.cores = 4;
  const double alone = exchange(int8, 1e7, t).cpu;
  t.cores = 2;
  EXPECT_NEAR(exchange(int8, 1e7, t).cpu, 2 * alone, 1e-12);
}

TEST(ModelFormulas, TransportCpuPacesTheLinkWhenTheCoresCannotKeepUp) {
  // 4 ranks on 2 cores (s = 2), 1 ns of CPU per byte sent: the ring's 1.5 MB per rank need 3 ms of the
  // shared cores, more than the 1.5 ms of wire, so the transport's work sets the pace.
  Topology t = flat(4, 0, 1e-9, 0, 0.5);
  t.intra.cpu = t.inter.cpu = 1e-9;
  const Cost ring = exchange(kNone, 1e6, t);
  EXPECT_NEAR(ring.wire, 1.5e-3, 1e-12);
  EXPECT_NEAR(ring.transport, 1.5e6 * 1e-9 * 2, 1e-12);
  EXPECT_NEAR(ring.total, ring.transport, 1e-12);
  // With a fast transport the wire paces it, as without the term.
  t.intra.cpu = t.inter.cpu = 1e-10;
  EXPECT_NEAR(exchange(kNone, 1e6, t).total, 1.5e-3, 1e-12);
  // In a pipelined algorithm the transport's work joins the codec's on the cores.
  const CodecCost int8{"int8", CodecKind::Quantized, 4, 1e-9, 1e-9};
  t.intra.cpu = t.inter.cpu = 0;
  const Cost without = exchange(int8, 8e6, t);
  t.intra.cpu = t.inter.cpu = 1e-9;
  const Cost with = exchange(int8, 8e6, t);
  EXPECT_NEAR(with.transport, with.bytes_sent * 1e-9 * 2, 1e-12);
  EXPECT_GT(with.cpu, with.wire);
  EXPECT_NEAR(with.total - without.total, with.transport, 1e-9);
}

// A link with measured message times: the dense algorithms take beta from the time of a message of their
// steps' size (interpolated; past the last size in proportion to its time); ranks sharing cores add
// (s - 1) times the hand-over to alpha: a crowded step's time (two ranks per core) beyond the two-core
// step stretched by 2, held past the last size; the plain fit is untouched.
TEST(ModelFormulas, MeasuredMessageTimesSetTheDenseAlgorithmsLink) {
  Link shm{1e-6, 4e-10, 4e-10};
  shm.sizes = {8, 1 << 20, 4 << 20};
  shm.seconds = {1e-6, 1e-6 + (1 << 20) * 1e-10, 1e-6 + (1 << 20) * 1e-10 + (3 << 20) * 3e-10};
  // Hand-overs of 50 us at 8 B, 20 us at 1 MiB, 10 us at 4 MiB: the crowded step is alpha + 2 (time -
  // alpha) plus them.
  const std::vector<double> hand = {50e-6, 20e-6, 10e-6};
  for (size_t i = 0; i < 3; ++i) shm.crowded_seconds.push_back(2 * shm.seconds[i] - 1e-6 + hand[i]);
  const Link at1 = at_message(shm, 1 << 20, 1);
  EXPECT_NEAR(at1.beta, 1e-10, 1e-16);
  EXPECT_NEAR(at1.cpu, 1e-10, 1e-16);  // in proportion: shared memory's cpu is its beta
  EXPECT_NEAR(at1.alpha, 1e-6, 1e-15);
  const Link at2 = at_message(shm, 2 << 20, 1);  // halfway along the second segment
  EXPECT_NEAR(at2.beta * (2 << 20), (1 << 20) * 1e-10 + (1 << 20) * 3e-10, 1e-12);
  const Link past = at_message(shm, 8 << 20, 1);  // twice the 4 MiB message's time (not its segment's slope)
  EXPECT_NEAR(past.beta * (8 << 20), 2 * shm.seconds[2] - 1e-6, 1e-12);
  EXPECT_LT(past.beta * (8 << 20), (1 << 20) * 1e-10 + (7 << 20) * 3e-10);
  // 4 ranks on 2 cores (s = 2): one hand-over per step; 8 ranks on 2 (s = 4): three; none on their own.
  EXPECT_NEAR(at_message(shm, 8, 2).alpha, 1e-6 + 50e-6, 1e-12);
  EXPECT_NEAR(at_message(shm, 8, 4).alpha, 1e-6 + 3 * 50e-6, 1e-12);
  EXPECT_NEAR(at_message(shm, 8, 1).alpha, 1e-6, 1e-15);
  EXPECT_NEAR(at_message(shm, (1 << 20) + (3 << 19), 2).alpha, 1e-6 + 15e-6, 1e-12);  // halfway to 4 MiB
  EXPECT_NEAR(at_message(shm, 64 << 20, 2).alpha, 1e-6 + 10e-6, 1e-12);  // held past the last size
  // A crowded step no slower than the stretched one adds no hand-over.
  Link fast = shm;
  fast.crowded_seconds[0] = 1e-6;
  EXPECT_NEAR(at_message(fast, 8, 2).alpha, 1e-6, 1e-15);
  // The ring of 4 ranks on a buffer of 8 MiB: 6 alpha of its 2 MiB messages, and 12 MiB at the beta of
  // the exchange of 4 MiB each way, which sweeps as many bytes per rank as the ring does (not of its 2 MiB
  // messages, which alone would fit the caches), plus the reduction (gamma 0 here).
  Topology t4 = flat(4, 0, 0);
  t4.intra = t4.inter = shm;
  const Cost ring = exchange(kNone, 8 << 20, t4);
  const double at4 = at_message(shm, 4 << 20, 1).beta;
  EXPECT_NEAR(ring.total, 6e-6 + (12 << 20) * at4, 1e-12);
  EXPECT_GT(std::abs(ring.total - (6e-6 + (12 << 20) * at2.beta)), 1e-5);
  // 2 ranks on 4 MiB: the blocks are the buffer's half, and the exchange of 2 MiB each way is their own.
  Topology t = flat(2, 0, 0);
  t.intra = t.inter = shm;
  EXPECT_NEAR(exchange(kNone, 4 << 20, t).total, 2e-6 + (4 << 20) * at2.beta, 1e-12);
  // But a step is never faster than its block's exchange alone: 32 KiB blocks that go by a slower
  // protocol than the 64 KiB buffer's rate.
  Link rndv{1e-6, 1e-10, 1e-10};
  rndv.sizes = {8, 32 << 10, 64 << 10};
  rndv.seconds = {1e-6, 1e-6 + (32 << 10) * 4e-10, 1e-6 + (64 << 10) * 1e-10};
  t.intra = t.inter = rndv;
  EXPECT_NEAR(exchange(kNone, 64 << 10, t).total, 2e-6 + (64 << 10) * 4e-10, 1e-12);
  // A ring with ranks sharing cores takes the crowded table's step of its block, held against the
  // two-core exchange that keeps as many bytes on a core (two ranks per core each send and receive a
  // block: the exchange of two blocks). 4 ranks on 2 cores, 32 KiB: 8 KiB blocks against the exchange of
  // 16 KiB; the crowded step is the slower by its hand-over (once per step with s = 2), and its copies
  // are that exchange's, at the slower of its beta and the 32 KiB buffer's (two ranks per core keep
  // 64 KiB there, as the exchange of 32 KiB each way does).
  const Cost small = exchange(kNone, 32 << 10, nodes_of(1, 4, shm, shm, 2), Algorithm::Ring);
  const auto line = [](double x) {  // the table's first segment, 8 B to 1 MiB
    return 1e-6 + (x - 8) * ((1 << 20) * 1e-10) / ((1 << 20) - 8);
  };
  const double hand8k = 50e-6 + (20e-6 - 50e-6) * ((8 << 10) - 8) / ((1 << 20) - 8);
  const double crowded8k = 2 * line(8 << 10) - 1e-6 + hand8k;
  const double same16k = line(16 << 10);
  ASSERT_GT(crowded8k, same16k);
  const double beta_same = (same16k - 1e-6) / (16 << 10), beta_swept = (line(32 << 10) - 1e-6) / (32 << 10);
  EXPECT_NEAR(small.latency, 6 * (1e-6 + crowded8k - same16k), 1e-12);
  EXPECT_NEAR(small.wire, 1.5 * (32 << 10) * std::max(beta_same, beta_swept), 1e-15);
  // 4 ranks, 16 MiB (4 MiB blocks) on a table whose 16 MiB exchange streams from memory: the crowded step
  // of 4 MiB is faster than the exchange of 8 MiB (no hand-over), and its copies are slowed by the ratio
  // of the swept buffer's beta (the exchange of 16 MiB: two ranks per core keep 32 MiB) to that
  // exchange's: the crowded table's own steps kept 16 MiB on a core.
  Link swept_shm = shm;
  swept_shm.sizes.push_back(16 << 20);
  swept_shm.seconds.push_back(1e-6 + (16 << 20) * 5e-10);
  swept_shm.crowded_seconds.push_back(2 * swept_shm.seconds.back());
  swept_shm.crowded_seconds[2] = 2 * shm.seconds[2] + 300e-6;  // 4 MiB
  const Cost big = exchange(kNone, 16 << 20, nodes_of(1, 4, swept_shm, swept_shm, 2), Algorithm::Ring);
  const double same8m = shm.seconds[2] + (4 << 20) * (swept_shm.seconds[3] - shm.seconds[2]) / (12 << 20);
  ASSERT_LT(swept_shm.crowded_seconds[2], same8m);
  const double slowed = 5e-10 / ((same8m - 1e-6) / (8 << 20));
  ASSERT_GT(slowed, 1.1);
  EXPECT_NEAR(big.latency, 6 * 1e-6, 1e-12);
  EXPECT_NEAR(big.total, 6 * (1e-6 + (swept_shm.crowded_seconds[2] - 1e-6) * slowed), 1e-9);
  EXPECT_GT(at_message(swept_shm, 4 << 20, 2).alpha, 300e-6);  // the block's own step would add it
  // A crowded step faster than the stretched two-core step (half the partners share a core) is the step
  // with 2 ranks per core: its copies' rate, not a negative hand-over; with 4 per core twice its copies.
  Link quick = shm;
  quick.crowded_seconds[1] = shm.seconds[1];  // 1 MiB: as fast as one two-core exchange
  const Link q2 = at_message(quick, 1 << 20, 2), q4 = at_message(quick, 1 << 20, 4);
  EXPECT_NEAR(q2.alpha, 1e-6, 1e-15);
  EXPECT_NEAR(q2.alpha + 2 * (1 << 20) * q2.beta, quick.crowded_seconds[1], 1e-12);
  EXPECT_NEAR(q2.cpu, q2.beta, 1e-18);  // shared memory's cpu stays its beta
  EXPECT_NEAR(q4.alpha + 4 * (1 << 20) * q4.beta, 1e-6 + 2 * (quick.crowded_seconds[1] - 1e-6), 1e-12);
  EXPECT_NEAR(at_message(quick, 1 << 20, 1).beta, at1.beta, 1e-18);  // ranks on cores of their own: untouched
  // A link given another rate drops the table: its times describe the old one.
  t.intra = t.inter = with_beta(shm, 1e-8);
  EXPECT_NEAR(exchange(kNone, 4 << 20, t).total, 2e-6 + (4 << 20) * 1e-8, 1e-12);
  EXPECT_TRUE(with_beta(shm, 1e-8).sizes.empty());
}

// A link with the rings' own passes (Link::ring_seconds, crowded_summed_seconds): ranks on cores of their
// own take the 2-rank ring's step of their block and its sums in place of gamma; ranks two to a core take
// the crowded ring's sums; without a summed table, as before.
TEST(ModelFormulas, TheRingTakesItsStepsAndSumsFromItsOwnPasses) {
  Link shm{1e-6, 4e-10, 4e-10};
  shm.sizes = {8, 1 << 20, 4 << 20};
  shm.seconds = {1e-6, 1e-6 + (1 << 20) * 1e-10, 1e-6 + (4 << 20) * 1e-10};
  shm.ring_seconds = {1e-6, 1e-6 + (1 << 20) * 0.8e-10, 1e-6 + (4 << 20) * 0.9e-10};
  // A pass of 2 steps sums one block: the summed steps take half a block's sum more, at 0, 1 and 2e-10
  // per byte.
  const std::vector<double> sum = {0, 1e-10, 2e-10};
  for (size_t i = 0; i < 3; ++i) shm.ring_summed_seconds.push_back(shm.ring_seconds[i] + shm.sizes[i] * sum[i] / 2);
  Topology two = flat(2, 0, 0, 5e-11);  // gamma 5e-11: not what the ring's sums cost
  two.intra = two.inter = shm;
  const double M = 2 << 20;  // 1 MiB blocks
  const Cost c = exchange(kNone, M, two, Algorithm::Ring);
  EXPECT_NEAR(c.latency, 2e-6, 1e-15);
  EXPECT_NEAR(c.wire, M * 0.8e-10, 1e-15);
  EXPECT_NEAR(c.cpu, M / 2 * 1e-10, 1e-15);
  EXPECT_NEAR(c.total, 2e-6 + M * 0.8e-10 + M / 2 * 1e-10, 1e-12);
  // Halfway to 4 MiB, and past the last size: the step in proportion to its time, the sum held.
  EXPECT_NEAR(exchange(kNone, 5 << 20, two, Algorithm::Ring).cpu, (5 << 19) * 1.5e-10, 1e-12);
  const Cost past = exchange(kNone, 16 << 20, two, Algorithm::Ring);
  EXPECT_NEAR(past.wire, 2 * shm.ring_seconds[2] * 2 - 2e-6, 1e-12);
  EXPECT_NEAR(past.cpu, (8 << 20) * 2e-10, 1e-12);
  // Without the summed steps the table is not read: the exchanges' table and gamma.
  Link plain = shm;
  plain.ring_summed_seconds.clear();
  two.intra = two.inter = plain;
  const Cost before = exchange(kNone, M, two, Algorithm::Ring);
  EXPECT_NEAR(before.wire, M * 1e-10, 1e-15);
  EXPECT_NEAR(before.cpu, M / 2 * 5e-11, 1e-15);
  // 4 ranks on 2 cores: the crowded pass's sums at the block, its 2 ranks per core one after the other
  // (the excess per step is a quarter of a block's sum for each rank: 2 sums of 3 per core over 6 steps).
  shm.crowded_seconds = {20e-6, 20e-6 + (1 << 20) * 2e-10, 20e-6 + (4 << 20) * 2e-10};
  const std::vector<double> crowded_sum = {0, 3e-10, 1e-10};
  for (size_t i = 0; i < 3; ++i)
    shm.crowded_summed_seconds.push_back(shm.crowded_seconds[i] + shm.sizes[i] * crowded_sum[i]);
  const Topology four = nodes_of(1, 4, shm, shm, 2, 5e-11);
  EXPECT_NEAR(exchange(kNone, 4 << 20, four, Algorithm::Ring).cpu, 0.75 * (4 << 20) * 3e-10 * 2, 1e-12);
  Link crowded_plain = shm;
  crowded_plain.crowded_summed_seconds.clear();
  EXPECT_NEAR(exchange(kNone, 4 << 20, nodes_of(1, 4, crowded_plain, crowded_plain, 2, 5e-11), Algorithm::Ring).cpu,
              0.75 * (4 << 20) * 5e-11 * 2, 1e-12);
  // Another rate drops them.
  const Link other = with_beta(shm, 1e-8);
  EXPECT_TRUE(other.ring_seconds.empty() && other.ring_summed_seconds.empty() && other.crowded_summed_seconds.empty());
}

// The dense algorithms sum at the speed of their buffer's size where the machine has a table of sums by
// size (buffers that fit the caches are summed faster); past its last size, and without one, gamma.
TEST(ModelFormulas, DenseReductionsSumAtTheirBuffersSpeed) {
  Topology t = flat(4, 0, 1e-10, 1e-10);
  t.sum_sizes = {1 << 20, 4 << 20};
  t.sum_seconds = {2e-11, 5e-11};
  EXPECT_NEAR(gamma_at(t, 512 << 10), 2e-11, 1e-20);
  EXPECT_NEAR(gamma_at(t, 2.5 * (1 << 20)), 3.5e-11, 1e-20);
  EXPECT_NEAR(gamma_at(t, 4 << 20), 5e-11, 1e-20);
  EXPECT_NEAR(gamma_at(t, 8 << 20), 1e-10, 1e-20);
  const double M = 2 << 20;
  const Cost ring = exchange(kNone, M, t, Algorithm::Ring);
  EXPECT_NEAR(ring.cpu, 0.75 * M * gamma_at(t, M), 1e-15);
  const Cost doubling = exchange(kNone, M, t, Algorithm::RecursiveDoubling);
  EXPECT_NEAR(doubling.cpu, 2 * M * gamma_at(t, M), 1e-15);
  // The ranks of a node share its caches: 4 ranks on one node sweep 4 M between them.
  Topology node = nodes_of(1, 4, t.intra, t.inter, 1e9, 1e-10);
  node.sum_sizes = t.sum_sizes, node.sum_seconds = t.sum_seconds;
  EXPECT_NEAR(exchange(kNone, 512 << 10, node, Algorithm::Ring).cpu, 0.75 * (512 << 10) * gamma_at(t, 2 << 20), 1e-15);
  Topology plain = t;
  plain.sum_sizes.clear(), plain.sum_seconds.clear();
  EXPECT_NEAR(gamma_at(plain, M), 1e-10, 1e-20);
  EXPECT_NEAR(exchange(kNone, M, plain, Algorithm::Ring).cpu, 0.75 * M * 1e-10, 1e-15);
}

// The pipelined compressed allreduces average each piece as it is finished, while it is in the caches:
// that average is priced at the machine's sum of a piece (the pipeline's piece size), the other sums at
// gamma; without a table of sums, gamma throughout.
TEST(ModelFormulas, AFinishedPieceIsAveragedAtThePiecesSumSpeed) {
  const CodecCost int8{"int8", CodecKind::Quantized, 4, 1e-10, 1e-10};
  const double M = 1e8, piece_gamma = 2e-11, gamma = 1e-10;
  Settings st;  // pieces of 1 MiB
  Topology t = flat(4, 0, 1e-10, gamma);
  t.sum_sizes = {1 << 20, 4 << 20};
  t.sum_seconds = {piece_gamma, 5e-11};
  const Cost sra = exchange(int8, M, t, Algorithm::ScatterReduceAllgather, st);
  EXPECT_NEAR(sra.cpu, sra.encode + M / 4 * piece_gamma, 1e-12);
  Topology plain = t;
  plain.sum_sizes.clear(), plain.sum_seconds.clear();
  EXPECT_NEAR(exchange(int8, M, plain, Algorithm::ScatterReduceAllgather, st).cpu, sra.encode + M / 4 * gamma, 1e-12);
  // Two-level with 2 nodes gathers: the node's reduce-scatter sums its shard at gamma, the gathered
  // payloads' result is averaged piece by piece.
  Topology nodes = nodes_of(2, 2, Link{0, 1e-10, 1e-10}, Link{0, 8e-9}, 2, gamma);
  nodes.sum_sizes = t.sum_sizes, nodes.sum_seconds = t.sum_seconds;
  const Cost two = exchange(int8, M, nodes, Algorithm::TwoLevel, st);
  EXPECT_NEAR(two.cpu, M / 2 * gamma + two.encode + M / 2 * piece_gamma, 1e-12);
}

// A collective call's own cost is paid once per exchange, and not by one rank alone.
TEST(ModelFormulas, EveryExchangePaysOneCallsCost) {
  Topology t = flat(4, 1e-5, 1e-8, 1e-9);
  const double plain = exchange(kNone, 1e6, t).total;
  t.call = 2e-6;
  EXPECT_NEAR(exchange(kNone, 1e6, t).total, plain + 2e-6, 1e-12);
  EXPECT_NEAR(exchange(kNone, 1e6, t, Algorithm::RecursiveDoubling).latency,
              exchange(kNone, 1e6, flat(4, 1e-5, 1e-8, 1e-9), Algorithm::RecursiveDoubling).latency + 2e-6, 1e-12);
  Topology one = flat(1, 1e-5, 1e-8, 1e-9);
  one.call = 2e-6;
  EXPECT_EQ(exchange(kNone, 1e6, one).total, 0);
}

TEST(ModelFormulas, AlgorithmThatDoesNotApplyIsAnError) {
  const CodecCost int8{"int8", CodecKind::Quantized, 4, 1e-9, 1e-9};
  EXPECT_THROW(exchange(int8, 1e6, flat(4, 0, 1e-9), Algorithm::Ring), std::invalid_argument);
  Topology none_ranks;
  none_ranks.nodes = 0;
  EXPECT_THROW(exchange(kNone, 1e6, none_ranks), std::invalid_argument);
}

TEST(ModelStep, OverlapHidesTheExchangeBehindTheBackwardPass) {
  Cost x;
  x.total = 0.05;
  x.encode = 0.02;
  StepShape shape;
  shape.compute = 0.3;  // backward 0.2 s
  EXPECT_NEAR(step_time(x, shape, false), 0.35, 1e-12);
  EXPECT_NEAR(step_time(x, shape, true), 0.3, 1e-12);
  x.total = 0.5;
  EXPECT_NEAR(step_time(x, shape, true), 0.1 + 0.5, 1e-12);
  shape.exchanges_per_step = 0.25;  // local SGD every 4 steps
  EXPECT_NEAR(step_time(x, shape, true), 0.3, 1e-12);
  x.total = 0.05;
  shape.exchanges_per_step = 1;
  shape.codec_shares_compute = true;
  EXPECT_NEAR(step_time(x, shape, true), 0.32, 1e-12);
}

TEST(ModelFit, RecoversAlphaAndBetaAndRejectsOneSize) {
  const Link l = fit_link({8, 1 << 16, 1 << 22}, {2e-5 + 8e-9, 2e-5 + 65536e-9, 2e-5 + 4194304e-9});
  EXPECT_NEAR(l.alpha, 2e-5, 1e-9);
  EXPECT_NEAR(l.beta, 1e-9, 1e-14);
  EXPECT_THROW(fit_link({1024, 1024}, {1e-3, 1e-3}), std::invalid_argument);
  EXPECT_THROW(fit_link({1024}, {1e-3}), std::invalid_argument);
}

TEST(ModelFit, ParsesRatesAndRejectsNonsense) {
  EXPECT_DOUBLE_EQ(parse_rate("100mbit"), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_rate("1gbit"), 125e6);
  EXPECT_DOUBLE_EQ(parse_rate("2.5Gbit"), 312.5e6);
  EXPECT_DOUBLE_EQ(parse_rate("8000"), 1000);
  for (const char* bad : {"", "fast", "-1gbit", "1gbps", "0mbit"}) EXPECT_THROW(parse_rate(bad), std::invalid_argument) << bad;
}

Model sample() {
  Model m;
  m.machine = Machine{2, 2e-10, 1.5e-6};
  m.machine.sum_sizes = {1 << 20};
  m.machine.sum_seconds = {5e-11};
  m.links["shm"] = Link{3e-6, 1e-10};
  m.links["shm"].sizes = {8, 4096};
  m.links["shm"].seconds = {3e-6, 4e-6};
  m.links["shm"].crowded_seconds = {5e-5, 5.1e-5};
  m.links["shm"].crowded_summed_seconds = {5.5e-5, 5.7e-5};
  m.links["shm"].ring_seconds = {2e-6, 3e-6};
  m.links["shm"].ring_summed_seconds = {2.5e-6, 3.5e-6};
  m.links["tcp"] = Link{4e-5, 8e-9, 6e-10};
  m.links["tcp"].all_to_all_beta = 9e-9;
  m.codecs = {kNone,
              {"fp16", CodecKind::Summable, 2, 4e-10, 3e-10},
              {"int8", CodecKind::Quantized, 3.9, 5e-10, 4e-10, 4.5e-10},
              {"topk", CodecKind::Sparse, 40, 3e-9, 2e-9}};
  m.codecs[2].encode_all_cores = 6e-10;
  m.codecs[2].decode_all_cores = 7e-10;
  m.codecs[2].sizes = {1 << 20, 4 << 20};
  m.codecs[2].at_sizes = {{1e-10, 2e-10, 3e-10, 0, 0}, {5e-10, 6e-10, 4.5e-10, 0, 0}};
  m.codecs[2].copies = 2;
  m.source = "test";
  return m;
}

TEST(ModelFile, RoundTripsThroughToml) {
  const Model m = sample();
  const Model back = from_toml(to_toml(m), "mem");
  EXPECT_EQ(back.source, "test");
  EXPECT_DOUBLE_EQ(back.machine.gamma, 2e-10);
  EXPECT_DOUBLE_EQ(back.link("tcp").beta, 8e-9);
  EXPECT_DOUBLE_EQ(back.link("tcp").cpu, 6e-10);
  EXPECT_DOUBLE_EQ(back.link("tcp").all_to_all_beta, 9e-9);
  EXPECT_DOUBLE_EQ(back.link("shm").all_to_all_beta, 0);  // not measured: absent from the file
  EXPECT_DOUBLE_EQ(back.link("shm").cpu, 0);
  EXPECT_DOUBLE_EQ(back.machine.call, 1.5e-6);
  EXPECT_EQ(back.machine.sum_sizes, (std::vector<double>{1 << 20}));
  EXPECT_EQ(back.machine.sum_seconds, (std::vector<double>{5e-11}));
  EXPECT_EQ(back.link("shm").sizes, (std::vector<double>{8, 4096}));
  EXPECT_EQ(back.link("shm").seconds, (std::vector<double>{3e-6, 4e-6}));
  EXPECT_EQ(back.link("shm").crowded_seconds, (std::vector<double>{5e-5, 5.1e-5}));
  EXPECT_EQ(back.link("shm").crowded_summed_seconds, (std::vector<double>{5.5e-5, 5.7e-5}));
  EXPECT_EQ(back.link("shm").ring_seconds, (std::vector<double>{2e-6, 3e-6}));
  EXPECT_EQ(back.link("shm").ring_summed_seconds, (std::vector<double>{2.5e-6, 3.5e-6}));
  EXPECT_TRUE(back.link("tcp").sizes.empty());
  ASSERT_NE(back.codec("topk"), nullptr);
  EXPECT_EQ(back.codec("topk")->kind, CodecKind::Sparse);
  EXPECT_DOUBLE_EQ(back.codec("int8")->ratio, 3.9);
  EXPECT_DOUBLE_EQ(back.codec("int8")->decode_accumulate, 4.5e-10);
  EXPECT_DOUBLE_EQ(back.codec("fp16")->decode_accumulate, 0);  // not measured: absent from the file
  EXPECT_DOUBLE_EQ(back.codec("int8")->encode_all_cores, 6e-10);
  EXPECT_DOUBLE_EQ(back.codec("int8")->decode_all_cores, 7e-10);
  EXPECT_DOUBLE_EQ(back.codec("fp16")->encode_all_cores, 0);
  EXPECT_EQ(back.codec("int8")->sizes, (std::vector<double>{1 << 20, 4 << 20}));
  ASSERT_EQ(back.codec("int8")->at_sizes.size(), 2u);
  EXPECT_DOUBLE_EQ(back.codec("int8")->at_sizes[0].decode, 2e-10);
  EXPECT_DOUBLE_EQ(back.codec("int8")->at_sizes[1].decode_accumulate, 4.5e-10);
  EXPECT_DOUBLE_EQ(back.codec("int8")->at_sizes[1].encode_all_cores, 0);  // not measured: absent
  EXPECT_EQ(to_toml(back).find("table_encode_all_cores"), std::string::npos);
  EXPECT_DOUBLE_EQ(back.codec("int8")->copies, 2);
  EXPECT_TRUE(back.codec("fp16")->sizes.empty());
  EXPECT_THROW(back.link("ib"), std::invalid_argument);
}

TEST(ModelFile, BadFilesSayWhatIsWrong) {
  auto message = [](const std::string& text) {
    try {
      from_toml(text, "m.toml");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("x = 1").find("not a gradwire cost model"), std::string::npos);
  EXPECT_NE(message("format = \"gradwire cost model 1\"").find("[machine]"), std::string::npos);
  const std::string head = "format = \"gradwire cost model 1\"\n[machine]\ncores = 2\ngamma_s_per_byte = 0\n";
  EXPECT_NE(message(head + "[codecs.x]\nkind = \"magic\"\nratio = 1\nencode_s_per_byte = 0\ndecode_s_per_byte = 0\n")
                .find("codecs.x.kind"),
            std::string::npos);
  EXPECT_NE(message(head + "[links.tcp]\nalpha_s = -1\nbeta_s_per_byte = 0\n").find("links.tcp.alpha_s"),
            std::string::npos);
  EXPECT_NE(message(head + "[links.tcp]\nalpha_s = 0\nbeta_s_per_byte = 0\ncpu_s_per_byte = \"x\"\n")
                .find("links.tcp.cpu_s_per_byte"),
            std::string::npos);
  const std::string tcp = head + "[links.tcp]\nalpha_s = 0\nbeta_s_per_byte = 1e-9\n";
  EXPECT_NE(message(tcp + "message_bytes = [8, 4096]\none_way_s = [1e-6]\n").find("as many entries (2 and 1)"),
            std::string::npos);
  EXPECT_NE(message(tcp + "message_bytes = [4096, 8]\none_way_s = [1e-6, 2e-6]\n").find("must be ascending"),
            std::string::npos);
  EXPECT_NE(message(tcp + "message_bytes = [8]\none_way_s = [\"x\"]\n").find("links.tcp.one_way_s"),
            std::string::npos);
  EXPECT_NE(message(tcp + "message_bytes = [8]\none_way_s = [1e-6]\ntwo_per_core_step_s = [1e-6, 2e-6]\n")
                .find("two_per_core_step_s must have as many entries"),
            std::string::npos);
  EXPECT_NE(message(tcp + "message_bytes = [8]\none_way_s = [1e-6]\ntwo_per_core_summed_step_s = [1e-6]\n")
                .find("two_per_core_summed_step_s needs two_per_core_step_s"),
            std::string::npos);
  EXPECT_NE(message(tcp + "message_bytes = [8]\none_way_s = [1e-6]\nring_step_s = [1e-6]\n")
                .find("ring_step_s and ring_summed_step_s go together"),
            std::string::npos);
  EXPECT_NE(message(tcp + "message_bytes = [8]\none_way_s = [1e-6]\nring_step_s = [1e-6, 2e-6]\n"
                          "ring_summed_step_s = [1e-6, 2e-6]\n")
                .find("as many entries as message_bytes"),
            std::string::npos);
  // The one-core ping-pong of an older calibrate is not read as something it is not.
  EXPECT_NE(message(tcp + "message_bytes = [8]\none_way_s = [1e-6]\none_way_shared_core_s = [5e-6]\n")
                .find("run gradwire calibrate again"),
            std::string::npos);
  EXPECT_NE(message(head + "sum_bytes = [8, 4096]\nsum_s_per_byte = [1e-10]\n").find("as many entries (2 and 1)"),
            std::string::npos);
  EXPECT_NE(message(head + "sum_bytes = [4096, 8]\nsum_s_per_byte = [1e-10, 1e-10]\n").find("sum_bytes: must be ascending"),
            std::string::npos);
  const std::string int8 = head + "[codecs.int8]\nkind = \"quantized\"\nratio = 4\nencode_s_per_byte = 1e-10\n"
                                  "decode_s_per_byte = 1e-10\n";
  EXPECT_NE(message(int8 + "table_bytes = [8, 4096]\ntable_decode_s_per_byte = [1e-10]\n")
                .find("codecs.int8.table_decode_s_per_byte: must have as many entries as table_bytes (1 and 2)"),
            std::string::npos);
  EXPECT_NE(message(int8 + "table_bytes = [4096, 8]\n").find("codecs.int8.table_bytes: must be ascending"),
            std::string::npos);
  EXPECT_NE(message(int8 + "table_bytes = [8]\ncopies = 0\n").find("codecs.int8.copies: must be 1 or more"),
            std::string::npos);
  EXPECT_EQ(message(int8 + "table_bytes = [8, 4096]\ntable_decode_s_per_byte = [1e-11, 1e-10]\n"), "no error");
  // A file from before links had cpu_s_per_byte loads, the term absent.
  EXPECT_EQ(message(head + "[links.tcp]\nalpha_s = 0\nbeta_s_per_byte = 1e-9\n"), "no error");
  EXPECT_NE(message("format = = 1").find("m.toml:1"), std::string::npos);
  EXPECT_THROW(load("/nonexistent/model.toml"), std::runtime_error);
}

TEST(ModelChoice, FastLinkKeepsCompressionOffSlowLinkPicksAStrongCodec) {
  const Model m = sample();
  const std::vector<std::string> allowed{"none", "fp16", "int8", "topk"};
  Topology loopback = flat(4, 3e-6, 1e-10, 2e-10, 2);  // 10 GB/s shared memory
  loopback.nodes = 1, loopback.per_node = 4;
  const Choice fast = choose(m, allowed, 25e6, loopback);
  EXPECT_TRUE(fast.codec == "none" || fast.codec == "fp16") << fast.codec << ": " << fast.reason;
  EXPECT_FALSE(fast.reason.empty());
  const Topology slow = flat(4, 4e-5, 8e-8, 2e-10, 2);  // 100 Mbit/s
  const Choice s = choose(m, allowed, 25e6, slow);
  EXPECT_TRUE(s.codec == "int8" || s.codec == "topk") << s.codec << ": " << s.reason;
  EXPECT_LT(s.predicted, s.predicted_none);
  // Only fp16 allowed behind a slow link: fp16. Nothing measured: none, saying so.
  EXPECT_EQ(choose(m, {"fp16"}, 25e6, slow).codec, "fp16");
  const Choice unknown = choose(m, {"onebit"}, 25e6, slow);
  EXPECT_EQ(unknown.codec, "none");
  EXPECT_NE(unknown.reason.find("onebit"), std::string::npos);
}

TEST(ModelChoice, ExplainsWhyCompressionDoesNotPay) {
  const CodecCost slow_codec{"slow", CodecKind::Quantized, 4, 1e-7, 1e-7};
  const Topology t = flat(4, 1e-6, 1e-10);
  const Cost with = exchange(slow_codec, 1e7, t), without = exchange(kNone, 1e7, t);
  EXPECT_NE(explain(slow_codec, with, without).find("encode cost"), std::string::npos);
  const CodecCost chatty{"chatty", CodecKind::Sparse, 100000, 0, 0};  // gathered: n / r <= 2
  const Topology many = flat(100000, 1e-4, 1e-10);
  const Cost w2 = exchange(chatty, 4096, many), wo2 = exchange(kNone, 4096, many);
  EXPECT_GT(w2.total, wo2.total);
  EXPECT_NE(explain(chatty, w2, wo2).find("latency"), std::string::npos) << explain(chatty, w2, wo2);
}

// The sparse allgather's combining as calibrate measured it by rank count: n payloads decoded into the
// buffer cost what the table says at n (interpolated between counts, grown by the last interval's slope
// past the last one), not n payloads at one rate per payload byte. A pricing that ignored the rank count,
// or took the table at another count, fails here.
TEST(ModelFormulas, SparseAllgatherCombinesAtTheMeasuredCostForItsRankCount) {
  CodecCost topk{"topk", CodecKind::Sparse, 100, 1e-10, 1e-9};
  topk.gather_ranks = {2, 4, 8};
  topk.gather_seconds = {1e-10, 3e-10, 9e-10};  // more payloads touch the buffer at more places
  const double M = 4e6;
  const auto combine_of = [&](uint64_t n) {
    const Cost c = exchange(topk, M, flat(n, 0, 1e-8, 0));
    EXPECT_EQ(c.algorithm, Algorithm::SparseAllgather) << n;
    return c.encode - M * topk.encode;
  };
  EXPECT_NEAR(combine_of(2), M * 1e-10, 1e-12);
  EXPECT_NEAR(combine_of(4), M * 3e-10, 1e-12);
  EXPECT_NEAR(combine_of(6), M * 6e-10, 1e-12);                   // between 4 and 8
  EXPECT_NEAR(combine_of(8), M * 9e-10, 1e-12);
  EXPECT_NEAR(combine_of(16), M * (9e-10 + 8 * 1.5e-10), 1e-12);  // past 8: +1.5e-10 per rank
  EXPECT_NEAR(sparse_combine(topk, 1, 0), 0.5e-10, 1e-20);         // below 2: in proportion
  // Without the table: n payloads at decode per payload byte, and a write of the buffer.
  topk.gather_ranks.clear(), topk.gather_seconds.clear();
  EXPECT_NEAR(sparse_combine(topk, 8, 2e-10), 8 * 1e-9 / 100 + 2e-10, 1e-20);
  EXPECT_NEAR(combine_of(8), M * 8 * 1e-9 / 100, 1e-12);
}

// A nominal rate: the link's beta from what the model learned TCP delivers of such a rate (on the
// logarithm of the rate between measured rates, held beyond them), and its all-to-all beta likewise;
// without a delivery the nominal rate as it is. The link's origin says which.
TEST(ModelNominal, ANominalRateIsWhatTcpDeliversOfIt) {
  const Link tcp{4e-6, 1e-9, 1.5e-9};
  Delivery d;
  add_delivery(d, 1.25e9, 0.80, 0);       // 10 Gbit/s
  add_delivery(d, 12.5e6, 0.96, 0.90);    // 100 Mbit/s, inserted before
  add_delivery(d, 125e6, 0.95, 0.70);     // 1 Gbit/s, between
  d.source = "a test";
  ASSERT_EQ(d.rates, (std::vector<double>{12.5e6, 125e6, 1.25e9}));
  EXPECT_EQ(d.all_to_all, (std::vector<double>{0.90, 0.70, 0}));
  Link l = at_nominal_rate(tcp, 125e6, d);
  EXPECT_NEAR(1 / l.beta, 0.95 * 125e6, 1e-3);
  EXPECT_NEAR(1 / l.all_to_all_beta, 0.70 * 125e6, 1e-3);
  EXPECT_DOUBLE_EQ(l.alpha, 4e-6);
  EXPECT_DOUBLE_EQ(l.cpu, 1.5e-9);
  EXPECT_NE(l.origin.find("a test"), std::string::npos) << l.origin;
  // Half-way in log rate between 100 Mbit/s and 1 Gbit/s: half-way in delivery.
  EXPECT_NEAR(delivered_at(d, std::sqrt(12.5e6 * 125e6)).first, 0.955, 1e-9);
  // Past the last rate: held (10 Gbit/s had no all-to-all measurement: the last one that had, 1 Gbit/s's).
  EXPECT_NEAR(delivered_at(d, 12.5e9).first, 0.80, 1e-12);
  EXPECT_NEAR(delivered_at(d, 12.5e9).second, 0.70, 1e-12);
  EXPECT_NEAR(delivered_at(d, 1e6).first, 0.96, 1e-12);
  // Replacing a rate's point.
  add_delivery(d, 125e6, 0.90, 0);
  EXPECT_NEAR(delivered_at(d, 125e6).first, 0.90, 1e-12);
  EXPECT_NEAR(delivered_at(d, 125e6).second, 0.70, 1e-12);  // kept: not measured again
  // No delivery: the nominal rate, and the origin says it was taken as it is.
  l = at_nominal_rate(tcp, 125e6, Delivery{});
  EXPECT_NEAR(1 / l.beta, 125e6, 1e-3);
  EXPECT_DOUBLE_EQ(l.all_to_all_beta, 0);
  EXPECT_NE(l.origin.find("as it is"), std::string::npos) << l.origin;
}

// Where calibrate learned what the TCP stack costs per byte over such a link (a multiple of the host's
// loopback tcp link's), the link at a nominal rate costs the cores that much: interpolated on the
// logarithm of the rate between the rates that have it, held beyond them, 1 where none has it; a rate
// measured again without it keeps the earlier figure.
TEST(ModelNominal, TheTcpCpuPerByteOfSuchALinkIsTheMeasuredMultiple) {
  const Link tcp{4e-6, 1e-10, 0.4e-9};
  Delivery d;
  add_delivery(d, 12.5e6, 0.95, 0.7);           // 100 Mbit/s: the wire paces, no CPU figure
  EXPECT_DOUBLE_EQ(cpu_factor_at(d, 1.25e9), 1.0);
  EXPECT_DOUBLE_EQ(at_nominal_rate(tcp, 1.25e9, d).cpu, 0.4e-9);
  add_delivery(d, 1.25e9, 0.94, 0, 3.0);        // 10 Gbit/s: the cores pace, 3 times loopback's
  add_delivery(d, 125e9, 0.90, 0, 5.0);         // 1 Tbit/s, for the interpolation
  EXPECT_EQ(d.cpu_factor, (std::vector<double>{0, 3.0, 5.0}));
  EXPECT_NEAR(at_nominal_rate(tcp, 1.25e9, d).cpu, 1.2e-9, 1e-21);
  EXPECT_NEAR(cpu_factor_at(d, 12.5e9), 4.0, 1e-9);   // half-way in log rate
  EXPECT_NEAR(cpu_factor_at(d, 12.5e6), 3.0, 1e-12);  // held below the first rate that has it
  EXPECT_NEAR(cpu_factor_at(d, 1e15), 5.0, 1e-12);    // and past the last
  const Link l = at_nominal_rate(tcp, 12.5e6, d);
  EXPECT_NEAR(l.cpu, 1.2e-9, 1e-21);
  EXPECT_NE(l.origin.find("3 times the host's TCP CPU per byte"), std::string::npos) << l.origin;
  add_delivery(d, 1.25e9, 0.93, 0);  // measured again where the cores did not pace: the figure stays
  EXPECT_DOUBLE_EQ(d.cpu_factor[1], 3.0);
  // The file keeps it; a damaged one is refused naming the key.
  Model m = sample();
  m.delivery = d;
  m.delivery.source = "a test";
  EXPECT_EQ(from_toml(to_toml(m), "mem").delivery.cpu_factor, d.cpu_factor);
  const std::string head = "format = \"gradwire cost model 1\"\n[machine]\ncores = 2\ngamma_s_per_byte = 0\n"
                           "[delivery]\nnominal_bytes_per_s = [1e8, 1e9]\nefficiency = [0.9, 0.9]\n";
  for (const char* bad : {"cpu_factor = [1]\n", "cpu_factor = [1, 1e6]\n", "cpu_factor = [1, -1]\n"}) {
    try {
      from_toml(head + bad, "m.toml");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("cpu_factor"), std::string::npos) << e.what();
    }
  }
}

// The delivery, the links' origins and the combining table survive the file; a damaged delivery or
// combining table is refused naming the key.
TEST(ModelFile, KeepsTheDeliveryTheOriginsAndTheCombiningTable) {
  Model m = sample();
  m.links["tcp"].origin = "measured between hosts";
  add_delivery(m.delivery, 125e6, 0.95, 0.7);
  m.delivery.source = "measured at 1gbit";
  m.codecs.push_back(CodecCost{"topk2", CodecKind::Sparse, 50, 1e-9, 1e-9});
  m.codecs.back().gather_ranks = {2, 4};
  m.codecs.back().gather_seconds = {1e-10, 2e-10};
  const Model back = from_toml(to_toml(m), "mem");
  EXPECT_EQ(back.link("tcp").origin, "measured between hosts");
  EXPECT_EQ(back.delivery.rates, m.delivery.rates);
  EXPECT_EQ(back.delivery.efficiency, m.delivery.efficiency);
  EXPECT_EQ(back.delivery.all_to_all, m.delivery.all_to_all);
  EXPECT_EQ(back.delivery.source, "measured at 1gbit");
  ASSERT_NE(back.codec("topk2"), nullptr);
  EXPECT_EQ(back.codec("topk2")->gather_ranks, (std::vector<double>{2, 4}));
  EXPECT_EQ(back.codec("topk2")->gather_seconds, (std::vector<double>{1e-10, 2e-10}));
  const auto message = [](const std::string& text) {
    try {
      from_toml(text, "m.toml");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = "format = \"gradwire cost model 1\"\n[machine]\ncores = 2\ngamma_s_per_byte = 0\n";
  EXPECT_NE(message(head + "[delivery]\nnominal_bytes_per_s = [1e8, 1e9]\nefficiency = [0.9]\n").find("delivery"),
            std::string::npos);
  EXPECT_NE(message(head + "[delivery]\nnominal_bytes_per_s = [1e8]\nefficiency = [0]\n").find("delivery.efficiency"),
            std::string::npos);
  EXPECT_NE(message(head + "[codecs.t]\nkind = \"sparse\"\nratio = 9\nencode_s_per_byte = 0\ndecode_s_per_byte = 0\n"
                           "gather_ranks = [4, 2]\ngather_s_per_byte = [1e-10, 1e-10]\n")
                .find("codecs.t.gather_ranks"),
            std::string::npos);
}

// The embedded reference model: the committed calibration, complete (every codec of the P5 suite, the
// machine, the links) and saying where it came from; what simulate uses without a model file.
TEST(ReferenceModel, IsTheCommittedCalibrationEmbedded) {
  const Model m = reference_model();
  EXPECT_NE(m.source.find("gradwire calibrate"), std::string::npos) << m.source;
  for (const char* codec : {"none", "fp16", "bf16", "int8", "onebit", "topk", "randomk"})
    EXPECT_NE(m.codec(codec), nullptr) << codec;
  EXPECT_GT(m.machine.cores, 0);
  EXPECT_GT(m.machine.gamma, 0);
  EXPECT_NO_THROW(m.link(m.intra));
  EXPECT_NO_THROW(m.link(m.inter));
  EXPECT_EQ(std::string(reference_model_text()).rfind("# gradwire cost model", 0), 0u);
}

}  // namespace
}  // namespace gw::model
