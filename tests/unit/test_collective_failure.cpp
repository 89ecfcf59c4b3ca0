// White-box: a collective whose transport fails one message while others are still in flight must keep
// (and on destruction free) every operation it still owns — the killed-rank tests found a crash there.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "core/error.hpp"
#include "group/collective.hpp"
#include "group/p2p.hpp"

namespace {

using gw::comm::Collective;
using gw::comm::PointToPoint;

// Operations are numbers 1, 2, 3 ... in the order started. test(): the first completes, the second
// stays in flight, the third fails like a dead peer.
class ScriptedP2P final : public PointToPoint {
 public:
  uint32_t rank() const override { return 0; }
  uint32_t size() const override { return 2; }
  Op* send(uint32_t, uint64_t, const void*, uint64_t) override { return next(); }
  Op* recv(uint32_t, uint64_t, void*, uint64_t) override { return next(); }
  bool test(Op* op, uint64_t* bytes) override {
    const auto id = reinterpret_cast<uintptr_t>(op);
    if (bytes) *bytes = 0;
    if (id == 3) gw::fail(GW_ERR_TRANSPORT, "rank 1 is gone");
    return id == 1;
  }
  void free(Op* op) noexcept override {
    if (op) freed.insert(reinterpret_cast<uintptr_t>(op));
  }
  void progress() override {}
  void abort() noexcept override {}

  std::set<uintptr_t> freed;

 private:
  Op* next() { return reinterpret_cast<Op*>(++started_); }
  uintptr_t started_ = 0;
};

gw::comm::Task three_sends(Collective& c) {
  static const char payload[8] = {};
  for (uint32_t step = 0; step < 3; ++step) c.send(1, step, payload, sizeof payload);
  co_await c.all();
}

TEST(CollectiveFailure, AFailedMessageLeavesEveryOtherOperationOwnedAndFreed) {
  ScriptedP2P p2p;
  {
    gw::comm::Signature s;
    s.kind = gw::comm::CollectiveKind::Barrier;
    Collective c(p2p, 0, s, 60.0);
    c.start(three_sends(c));
    EXPECT_THROW(c.poll(), gw::Error);
    EXPECT_EQ(p2p.freed, (std::set<uintptr_t>{1}));  // the completed send only
  }  // the destructor frees what is still in flight: the pending send and the failed one
  EXPECT_EQ(p2p.freed, (std::set<uintptr_t>{1, 2, 3}));
}

}  // namespace
