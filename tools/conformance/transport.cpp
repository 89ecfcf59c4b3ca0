// The transport checks of `gradwire conformance`: the point-to-point contract of docs/transport-guide.md
// on local processes, a killed peer, then the runtime's collectives and a compressed allreduce over it.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>

#include "conformance/conformance.hpp"

namespace gwcli::conformance {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

const char* status_text(gw_status s) { return gw_status_string(s); }

// The bytes rank `from` sends rank `to` in message `index` of a check: distinct per message.
unsigned char pattern(uint32_t from, uint32_t to, uint64_t index, uint64_t i) {
  return (unsigned char)((from * 131 + to * 31 + index * 7 + i * 13 + (i >> 8)) & 0xff);
}

void fill(std::vector<unsigned char>& b, uint32_t from, uint32_t to, uint64_t index) {
  for (uint64_t i = 0; i < b.size(); ++i) b[i] = pattern(from, to, index, i);
}

// The first byte that differs from what `from` sent, or -1.
int64_t first_wrong(const unsigned char* b, uint64_t n, uint32_t from, uint32_t to, uint64_t index) {
  for (uint64_t i = 0; i < n; ++i)
    if (b[i] != pattern(from, to, index, i)) return int64_t(i);
  return -1;
}

gw_tensor bytes_tensor(const void* data, uint64_t n) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_U8;
  t.data = const_cast<void*>(data);
  t.count = n;
  return t;
}

// One transport instance in this rank, used the way the runtime uses it.
struct Raw {
  const gw_transport_vtable* v = nullptr;
  void* t = nullptr;
  double timeout_s = 20;
  std::string why;  // the last failure, for the report

  bool started(gw_status st, gw_transport_request* r, const char* what) {
    if (st == GW_OK && r != nullptr) return true;
    why = std::string(what) + " returned " + status_text(st) + (r == nullptr && st == GW_OK ? " without a request" : "") +
          ": " + take_error();
    return false;
  }
  gw_transport_request* send(uint32_t peer, uint64_t tag, const void* data, uint64_t n) {
    gw_tensor b = bytes_tensor(data, n);
    gw_transport_request* r = nullptr;
    clear_error();
    const gw_status st = v->send_start(t, peer, tag, &b, &r);
    return started(st, r, "send_start") ? r : nullptr;
  }
  gw_transport_request* recv(uint32_t peer, uint64_t tag, void* data, uint64_t capacity) {
    gw_tensor b = bytes_tensor(data, capacity);
    gw_transport_request* r = nullptr;
    clear_error();
    const gw_status st = v->recv_start(t, peer, tag, &b, &r);
    return started(st, r, "recv_start") ? r : nullptr;
  }
  // progress + test until the request ends or the timeout; GW_ERR_TIMEOUT (ours) when it never did.
  gw_status wait(gw_transport_request* r, uint64_t* bytes, double timeout = -1) {
    const auto start = Clock::now();
    if (timeout < 0) timeout = timeout_s;
    for (;;) {
      clear_error();
      const gw_status p = v->progress(t);
      if (p < 0) {
        why = std::string("progress returned ") + status_text(p) + ": " + take_error();
        return p;
      }
      clear_error();
      const gw_status st = v->test(t, r, bytes);
      if (st != GW_IN_PROGRESS) {
        if (st < 0) why = take_error();
        return st;
      }
      if (seconds_since(start) > timeout) return GW_ERR_TIMEOUT;
    }
  }
  // Waits for every request (testing them in turn, as the runtime does); the first failure in `why`.
  bool wait_all(std::vector<gw_transport_request*>& rs, std::vector<uint64_t>* bytes = nullptr) {
    if (bytes) bytes->assign(rs.size(), ~uint64_t{0});
    std::vector<bool> done(rs.size(), false);
    size_t left = rs.size();
    const auto start = Clock::now();
    while (left > 0) {
      clear_error();
      const gw_status p = v->progress(t);
      if (p < 0) {
        why = std::string("progress returned ") + status_text(p) + ": " + take_error();
        return false;
      }
      for (size_t i = 0; i < rs.size(); ++i) {
        if (done[i]) continue;
        uint64_t b = 0;
        clear_error();
        const gw_status st = v->test(t, rs[i], &b);
        if (st == GW_IN_PROGRESS) continue;
        if (st != GW_OK) {
          why = "request " + std::to_string(i) + " failed with " + status_text(st) + ": " + take_error();
          return false;
        }
        done[i] = true;
        --left;
        if (bytes) (*bytes)[i] = b;
      }
      if (seconds_since(start) > timeout_s) {
        why = std::to_string(left) + " of " + std::to_string(rs.size()) + " requests still in progress after " +
              std::to_string(int(timeout_s)) + " s";
        return false;
      }
    }
    return true;
  }
  void free_all(std::vector<gw_transport_request*>& rs) {
    for (auto* r : rs)
      if (r) v->request_free(t, r);
    rs.clear();
  }
};

// Creates the instance and connects it to the other ranks (blobs gathered through the link).
std::string create_and_connect(Plugin& plugin, const gw_component& c, RankLink& link, Raw& raw, double timeout_s) {
  raw.v = static_cast<const gw_transport_vtable*>(c.vtable);
  raw.timeout_s = timeout_s;
  if (!plugin.init()) return "the plugin's init failed: " + take_error();
  gw_transport_init init = GW_TRANSPORT_INIT_INIT;
  init.rank = link.rank();
  init.world_size = link.size();
  init.local_rank = link.rank();
  init.local_size = link.size();
  init.timeout_s = timeout_s;
  ConfigView* cfg = make_config(c);
  clear_error();
  const gw_status st = raw.v->create(plugin.state, host(), as_config(cfg), &init, &raw.t);
  free_config(cfg);
  if (st != GW_OK || raw.t == nullptr)
    return std::string("create returned ") + status_text(st) + ": " + take_error();
  const void* blob = nullptr;
  uint64_t size = 0;
  clear_error();
  const gw_status a = raw.v->local_address(raw.t, &blob, &size);
  if (a != GW_OK || blob == nullptr)
    return std::string("local_address returned ") + status_text(a) + ": " + take_error();
  std::vector<std::string> blobs;
  if (!link.allgather(std::string(static_cast<const char*>(blob), size), blobs)) return "a rank is gone (rendezvous)";
  std::vector<const void*> pointers;
  std::vector<uint64_t> sizes;
  for (auto& b : blobs) {
    pointers.push_back(b.data());
    sizes.push_back(b.size());
  }
  const auto start = Clock::now();
  for (;;) {
    clear_error();
    const gw_status s = raw.v->connect(raw.t, pointers.data(), sizes.data());
    if (s == GW_OK) break;
    if (s != GW_IN_PROGRESS) return std::string("connect returned ") + status_text(s) + ": " + take_error();
    if (seconds_since(start) > timeout_s) return "connect still GW_IN_PROGRESS after " + std::to_string(int(timeout_s)) + " s";
    clear_error();
    const gw_status p = raw.v->progress(raw.t);
    if (p < 0) return std::string("progress during connect returned ") + status_text(p) + ": " + take_error();
  }
  return "";
}

// ---- the point-to-point checks, one function each; "" is a pass ----------------------------------

struct Ctx {
  RankLink& link;
  Raw& raw;
  uint32_t me, n, next, prev;
};

constexpr uint64_t kMiB = 1 << 20;

std::string check_sizes(Ctx& x) {
  const uint64_t sizes[] = {0, 1, 3, 4096, 16 * 1024 + 1, kMiB + 7, 64 * kMiB};
  for (size_t s = 0; s < std::size(sizes); ++s) {
    const uint64_t size = sizes[s];
    // Up to 1 MiB: every pair both ways; 64 MiB: around the ring (memory).
    std::vector<uint32_t> to, from;
    for (uint32_t p = 0; p < x.n; ++p)
      if (p != x.me && (size < 64 * kMiB || p == x.next)) to.push_back(p);
    for (uint32_t p = 0; p < x.n; ++p)
      if (p != x.me && (size < 64 * kMiB || p == x.prev)) from.push_back(p);
    std::vector<std::vector<unsigned char>> out(to.size(), std::vector<unsigned char>(size));
    std::vector<std::vector<unsigned char>> in(from.size(), std::vector<unsigned char>(size));
    std::vector<gw_transport_request*> rs;
    for (size_t i = 0; i < from.size(); ++i) {
      rs.push_back(x.raw.recv(from[i], 100 + s, in[i].data(), size));
      if (!rs.back()) return x.raw.why;
    }
    for (size_t i = 0; i < to.size(); ++i) {
      fill(out[i], x.me, to[i], s);
      rs.push_back(x.raw.send(to[i], 100 + s, out[i].data(), size));
      if (!rs.back()) return x.raw.why;
    }
    std::vector<uint64_t> bytes;
    const bool ok = x.raw.wait_all(rs, &bytes);
    x.raw.free_all(rs);
    if (!ok) return std::to_string(size) + "-byte messages: " + x.raw.why;
    for (size_t i = 0; i < from.size(); ++i) {
      if (bytes[i] != size)
        return "a " + std::to_string(size) + "-byte message from rank " + std::to_string(from[i]) + " was reported as " +
               std::to_string(bytes[i]) + " bytes";
      const int64_t wrong = first_wrong(in[i].data(), size, from[i], x.me, s);
      if (wrong >= 0)
        return "a " + std::to_string(size) + "-byte message from rank " + std::to_string(from[i]) +
               " arrived with wrong contents from byte " + std::to_string(wrong);
    }
  }
  return "";
}

std::string check_wide_tags(Ctx& x) {
  // Tags that differ only above bit 31, or only in the bits the runtime reserves (39, 38, 37), and the
  // widest tag. Receives are posted in reverse order before anything is sent: each must get its own.
  const uint64_t low = 0x5;
  const std::vector<uint64_t> tags = {low,
                                      (uint64_t{1} << 39) | low,
                                      (uint64_t{1} << 38) | low,
                                      (uint64_t{1} << 37) | low,
                                      (uint64_t{1} << 32) | low,
                                      (uint64_t{1} << 40) - 1,
                                      ((uint64_t{1} << 40) - 1) & ~(uint64_t{1} << 39)};
  std::vector<std::vector<unsigned char>> in(tags.size(), std::vector<unsigned char>(64)), out = in;
  std::vector<gw_transport_request*> recvs, sends;
  for (size_t i = tags.size(); i-- > 0;) {
    recvs.push_back(x.raw.recv(x.prev, tags[i], in[i].data(), 64));
    if (!recvs.back()) return x.raw.why;
  }
  if (!x.link.sync([&] { x.raw.v->progress(x.raw.t); })) return "a rank is gone";
  for (size_t i = 0; i < tags.size(); ++i) {
    fill(out[i], x.me, x.next, 200 + i);
    sends.push_back(x.raw.send(x.next, tags[i], out[i].data(), 64));
    if (!sends.back()) return x.raw.why;
  }
  const bool ok = x.raw.wait_all(recvs) && x.raw.wait_all(sends);
  x.raw.free_all(recvs);
  x.raw.free_all(sends);
  if (!ok) return x.raw.why;
  for (size_t i = 0; i < tags.size(); ++i)
    if (first_wrong(in[i].data(), 64, x.prev, x.me, 200 + i) >= 0) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)tags[i]);
      return std::string("the receive for tag ") + hex +
             " got another tag's message: a receive must match all 40 bits of the tag exactly";
    }
  return "";
}

std::string check_shorter(Ctx& x) {
  std::vector<unsigned char> a_out(10), a_in(1000, 0xee), b_in(64, 0xee), c_out(20000), c_in(100000);
  fill(a_out, x.me, x.next, 300);
  fill(c_out, x.me, x.next, 301);
  std::vector<gw_transport_request*> recvs = {x.raw.recv(x.prev, 301, a_in.data(), a_in.size()),
                                              x.raw.recv(x.prev, 302, b_in.data(), b_in.size()),
                                              x.raw.recv(x.prev, 303, c_in.data(), c_in.size())};
  for (auto* r : recvs)
    if (!r) return x.raw.why;
  std::vector<gw_transport_request*> sends = {x.raw.send(x.next, 301, a_out.data(), a_out.size()),
                                              x.raw.send(x.next, 302, nullptr, 0),
                                              x.raw.send(x.next, 303, c_out.data(), c_out.size())};
  for (auto* r : sends)
    if (!r) return x.raw.why;
  std::vector<uint64_t> bytes;
  const bool ok = x.raw.wait_all(recvs, &bytes) && x.raw.wait_all(sends);
  x.raw.free_all(recvs);
  x.raw.free_all(sends);
  if (!ok) return x.raw.why;
  if (bytes[0] != 10 || bytes[1] != 0 || bytes[2] != 20000)
    return "receives of 1000, 64 and 100000 bytes given messages of 10, 0 and 20000 bytes reported " +
           std::to_string(bytes[0]) + ", " + std::to_string(bytes[1]) + " and " + std::to_string(bytes[2]) +
           " bytes; a receive must report the size of the message that arrived";
  if (first_wrong(a_in.data(), 10, x.prev, x.me, 300) >= 0) return "a 10-byte message into a 1000-byte receive arrived wrong";
  if (first_wrong(c_in.data(), 20000, x.prev, x.me, 301) >= 0) return "a 20000-byte message into a 100000-byte receive arrived wrong";
  return "";
}

std::string check_truncation(Ctx& x) {
  std::vector<unsigned char> big(100), small(8), big_in(10), small_in(8);
  fill(big, x.me, x.next, 400);
  fill(small, x.me, x.next, 401);
  gw_transport_request* r1 = x.raw.recv(x.prev, 401, big_in.data(), big_in.size());
  gw_transport_request* r2 = x.raw.recv(x.prev, 402, small_in.data(), small_in.size());
  if (!r1 || !r2) return x.raw.why;
  std::vector<gw_transport_request*> sends = {x.raw.send(x.next, 401, big.data(), big.size()),
                                              x.raw.send(x.next, 402, small.data(), small.size())};
  if (!sends[0] || !sends[1]) return x.raw.why;
  uint64_t bytes = 0;
  const gw_status s1 = x.raw.wait(r1, &bytes);
  const std::string why1 = x.raw.why;
  const gw_status s2 = x.raw.wait(r2, &bytes);
  const bool sent = x.raw.wait_all(sends);
  x.raw.v->request_free(x.raw.t, r1);
  x.raw.v->request_free(x.raw.t, r2);
  x.raw.free_all(sends);
  if (s1 != GW_ERR_MISMATCH)
    return std::string("a 100-byte message into a 10-byte receive ended with ") + status_text(s1) +
           (s1 < 0 ? " (" + why1 + ")" : "") + "; the contract says GW_ERR_MISMATCH";
  if (s2 != GW_OK || bytes != 8 || first_wrong(small_in.data(), 8, x.prev, x.me, 401) >= 0)
    return std::string("the message after a truncated one did not arrive intact (") + status_text(s2) + ")";
  if (!sent) return "sending: " + x.raw.why;
  return "";
}

std::string check_ordering(Ctx& x) {
  // 200 messages with one (peer, tag), sizes from 0 to 200 KiB mixed (small and large protocols);
  // half the receives are posted before the messages leave, half after they arrived.
  constexpr int kMessages = 200;
  auto size_of = [](int i) -> uint64_t { return i % 17 == 0 ? 200 * 1024 + i : uint64_t(i * 37 % 3000); };
  std::vector<std::vector<unsigned char>> in(kMessages), out(kMessages);
  for (int i = 0; i < kMessages; ++i) {
    in[i].resize(size_of(i));
    out[i].resize(size_of(i));
    fill(out[i], x.me, x.next, 1000 + i);
  }
  std::vector<gw_transport_request*> recvs, sends;
  for (int i = 0; i < kMessages / 2; ++i) {
    recvs.push_back(x.raw.recv(x.prev, 500, in[i].data(), in[i].size()));
    if (!recvs.back()) return x.raw.why;
  }
  if (!x.link.sync([&] { x.raw.v->progress(x.raw.t); })) return "a rank is gone";
  for (int i = 0; i < kMessages; ++i) {
    sends.push_back(x.raw.send(x.next, 500, out[i].data(), out[i].size()));
    if (!sends.back()) return x.raw.why;
  }
  const auto start = Clock::now();
  while (seconds_since(start) < 0.05) x.raw.v->progress(x.raw.t);
  if (!x.link.sync([&] { x.raw.v->progress(x.raw.t); })) return "a rank is gone";
  for (int i = kMessages / 2; i < kMessages; ++i) {
    recvs.push_back(x.raw.recv(x.prev, 500, in[i].data(), in[i].size()));
    if (!recvs.back()) return x.raw.why;
  }
  std::vector<uint64_t> bytes;
  const bool ok = x.raw.wait_all(recvs, &bytes) && x.raw.wait_all(sends);
  x.raw.free_all(recvs);
  x.raw.free_all(sends);
  if (!ok) return x.raw.why;
  for (int i = 0; i < kMessages; ++i)
    if (bytes[i] != size_of(i) || first_wrong(in[i].data(), in[i].size(), x.prev, x.me, 1000 + i) >= 0)
      return "receive " + std::to_string(i) + " of " + std::to_string(kMessages) +
             " with one (peer, tag) did not get message " + std::to_string(i) +
             ": messages with the same (peer, tag) must match receives in the order they were sent";
  return "";
}

std::string check_many_outstanding(Ctx& x) {
  // 400 sends and 400 receives to and from every peer at once, distinct tags, receives posted in a
  // shuffled order, tested in another.
  constexpr uint32_t kPer = 400;
  std::mt19937 rng(x.me * 7 + 1);
  struct Slot {
    uint32_t peer;
    uint32_t index;
    bool recv;
    std::vector<unsigned char> data;
    gw_transport_request* r = nullptr;
  };
  std::vector<Slot> slots;
  for (uint32_t p = 0; p < x.n; ++p) {
    if (p == x.me) continue;
    for (uint32_t i = 0; i < kPer; ++i) {
      const uint64_t size = i % 50 == 0 ? 65536 : 64;
      slots.push_back({p, i, true, std::vector<unsigned char>(size)});
      Slot s{p, i, false, std::vector<unsigned char>(size)};
      fill(s.data, x.me, p, 2000 + i);
      slots.push_back(std::move(s));
    }
  }
  std::shuffle(slots.begin(), slots.end(), rng);
  for (auto& s : slots) {
    const uint64_t tag = (uint64_t{7} << 20) | s.index;
    s.r = s.recv ? x.raw.recv(s.peer, tag, s.data.data(), s.data.size()) : x.raw.send(s.peer, tag, s.data.data(), s.data.size());
    if (!s.r) return x.raw.why;
  }
  std::shuffle(slots.begin(), slots.end(), rng);
  std::vector<gw_transport_request*> rs;
  for (auto& s : slots) rs.push_back(s.r);
  const bool ok = x.raw.wait_all(rs);
  x.raw.free_all(rs);
  if (!ok) return x.raw.why;
  for (auto& s : slots)
    if (s.recv && first_wrong(s.data.data(), s.data.size(), s.peer, x.me, 2000 + s.index) >= 0)
      return "message " + std::to_string(s.index) + " from rank " + std::to_string(s.peer) + " arrived wrong";
  return "";
}

std::string check_cancel(Ctx& x) {
  // A receive freed before anything matched it must not take the message meant for the next one.
  std::vector<unsigned char> cancelled(32, 0), in(32, 0), out(32);
  fill(out, x.me, x.next, 600);
  gw_transport_request* gone = x.raw.recv(x.prev, 600, cancelled.data(), cancelled.size());
  if (!gone) return x.raw.why;
  x.raw.v->progress(x.raw.t);
  x.raw.v->request_free(x.raw.t, gone);
  if (!x.link.sync([&] { x.raw.v->progress(x.raw.t); })) return "a rank is gone";
  gw_transport_request* s = x.raw.send(x.next, 600, out.data(), out.size());
  if (!s) return x.raw.why;
  gw_transport_request* r = x.raw.recv(x.prev, 600, in.data(), in.size());
  if (!r) return x.raw.why;
  std::vector<gw_transport_request*> rs = {r, s};
  const bool ok = x.raw.wait_all(rs);
  x.raw.free_all(rs);
  if (!ok) return "after freeing an unmatched receive, the next receive with its tag: " + x.raw.why;
  if (first_wrong(in.data(), in.size(), x.prev, x.me, 600) >= 0) return "the receive after a freed one got wrong bytes";
  for (unsigned char c : cancelled)
    if (c != 0) return "a receive freed before its message arrived still wrote into its buffer";
  return "";
}

std::string check_abort(Ctx& x) {
  std::vector<unsigned char> in(16);
  gw_transport_request* pending = x.raw.recv(x.prev, 700, in.data(), in.size());  // never sent
  if (!pending) return x.raw.why;
  if (!x.link.sync([&] { x.raw.v->progress(x.raw.t); })) return "a rank is gone";
  clear_error();
  const gw_status a = x.raw.v->abort(x.raw.t);
  if (a != GW_OK) return std::string("abort returned ") + status_text(a) + ": " + take_error();
  uint64_t bytes = 0;
  const gw_status st = x.raw.wait(pending, &bytes, std::min(5.0, x.raw.timeout_s));
  x.raw.v->request_free(x.raw.t, pending);
  if (st != GW_ERR_ABORTED)
    return std::string("a pending receive after abort ended with ") +
           (st == GW_ERR_TIMEOUT ? "nothing (still in progress)" : status_text(st)) + "; the contract says GW_ERR_ABORTED";
  gw_tensor b = bytes_tensor(in.data(), in.size());
  gw_transport_request* r = nullptr;
  clear_error();
  const gw_status s = x.raw.v->send_start(x.raw.t, x.next, 701, &b, &r);
  if (s == GW_ERR_ABORTED && r == nullptr) return "";
  if (s != GW_OK || r == nullptr)
    return std::string("send_start after abort returned ") + status_text(s) + "; the contract says GW_ERR_ABORTED";
  const gw_status later = x.raw.wait(r, &bytes, std::min(5.0, x.raw.timeout_s));
  x.raw.v->request_free(x.raw.t, r);
  if (later != GW_ERR_ABORTED)
    return std::string("a send started after abort ended with ") + status_text(later) + "; the contract says GW_ERR_ABORTED";
  return "";
}

// ---- a killed peer ---------------------------------------------------------------------------------

void killed_peer_body(Plugin& plugin, const gw_component& c, const Options& o, RankLink& link) {
  const std::string prefix = std::string("transport.") + c.name + ".";
  Raw raw;
  const std::string err = create_and_connect(plugin, c, link, raw, o.timeout_s);
  if (!err.empty()) {
    link.report(prefix + "killed_peer.connect", false, err);
    return;
  }
  std::vector<unsigned char> small(64), big(64 * kMiB);
  const auto tick = [&] { raw.v->progress(raw.t); };
  if (link.rank() == 1) {
    // A small message that completes, then a large one, and this process is killed mid-transfer.
    fill(small, 1, 0, 800);
    gw_transport_request* s = raw.send(0, 800, small.data(), small.size());
    uint64_t bytes = 0;
    if (!s || raw.wait(s, &bytes) != GW_OK) {
      link.report(prefix + "killed_peer.setup", false, "the first send did not complete: " + raw.why);
      return;
    }
    raw.v->request_free(raw.t, s);
    if (!link.sync(tick)) return;
    fill(big, 2, 0, 801);
    gw_transport_request* b = raw.send(0, 801, big.data(), big.size());
    (void)b;
    for (int i = 0; i < 3; ++i) raw.v->progress(raw.t);
    link.die();
  }
  gw_transport_request* r = raw.recv(1, 801, big.data(), big.size());
  if (!r) {
    link.report(prefix + "killed_peer", false, raw.why);
    return;
  }
  if (!link.sync(tick)) return;
  // Rank 0 makes no progress until rank 1 is gone: the large message cannot arrive whole (a transport
  // that streams it moves at most what the kernel buffers), so the receive must end with the death.
  // This sync returns false once the parent has reaped the killed rank.
  (void)link.sync();
  uint64_t bytes = 0;
  const auto start = Clock::now();
  const gw_status st = raw.wait(r, &bytes, o.timeout_s + 5);
  const double took = seconds_since(start);
  raw.v->request_free(raw.t, r);
  if (st == GW_ERR_TRANSPORT)
    link.report(prefix + "killed_peer", true, "GW_ERR_TRANSPORT after " + std::to_string(int(took * 1000)) + " ms");
  else if (st == GW_ERR_TIMEOUT)
    link.report(prefix + "killed_peer", !o.require_failure_detection,
                "a receive from a peer killed mid-transfer was still in progress after init.timeout_s + 5 s: the "
                "transport does not detect a dead peer " +
                    std::string(o.require_failure_detection
                                    ? "(required by --require-failure-detection)"
                                    : "(allowed: the runtime's [runtime] timeout_s reports it, later and as "
                                      "GW_ERR_TIMEOUT)"));
  else if (st == GW_OK && bytes == big.size() && first_wrong(big.data(), big.size(), 2, 0, 801) < 0)
    // A fast transport may move the whole message before the kill lands: that is delivery, not a failure.
    link.report(prefix + "killed_peer", true, "the message arrived whole before the peer died (nothing to detect)");
  else
    link.report(prefix + "killed_peer", false,
                std::string("a receive from a peer killed mid-transfer ended with ") + status_text(st) + " (" +
                    std::to_string(bytes) + " of " + std::to_string(big.size()) +
                    " bytes); the contract says GW_ERR_TRANSPORT");
  // What the dead peer sent completely before it died is still delivered.
  gw_transport_request* early = raw.recv(1, 800, small.data(), small.size());
  gw_status es = early ? raw.wait(early, &bytes, o.timeout_s) : GW_ERR_INTERNAL;
  if (early) raw.v->request_free(raw.t, early);
  if (es == GW_OK && bytes == 64 && first_wrong(small.data(), 64, 1, 0, 800) < 0)
    link.report(prefix + "delivered_before_failure", true, "");
  else
    link.report(prefix + "delivered_before_failure", false,
                std::string("a message the peer sent completely before it was killed, received afterwards, ended with ") +
                    status_text(es) + " (" + raw.why + "); the contract says it is still delivered");
  // New requests involving the dead peer fail instead of hanging.
  gw_transport_request* after = raw.recv(1, 802, small.data(), small.size());
  es = GW_ERR_TRANSPORT;
  if (after) {
    es = raw.wait(after, &bytes, o.timeout_s + 5);
    raw.v->request_free(raw.t, after);
  }
  const bool undetected_ok = es == GW_ERR_TIMEOUT && st == GW_ERR_TIMEOUT && !o.require_failure_detection;
  link.report(prefix + "dead_peer_new_requests", es == GW_ERR_TRANSPORT || undetected_ok,
              es == GW_ERR_TRANSPORT ? ""
              : undetected_ok        ? "still in progress: the dead peer is not detected (allowed, as above)"
                                     : std::string("a receive posted after the peer died ended with ") +
                                    (es == GW_ERR_TIMEOUT ? "nothing (still in progress)" : status_text(es)) +
                                    "; the contract says GW_ERR_TRANSPORT");
  raw.v->destroy(raw.t);
}

// ---- the runtime over the transport ----------------------------------------------------------------

std::string runtime_checks(const std::string& plugin_path, const std::string& name, RankLink& link, double timeout_s,
                           std::string& compressed_result) {
  std::string error;
  const std::string toml = "[transport]\ninter = \"" + name + "\"\n[runtime]\ntimeout_s = " +
                           std::to_string(int(timeout_s)) + "\n";
  gw_runtime* rt = open_runtime_with(plugin_path, toml, error);
  if (rt == nullptr) return "gw_runtime_create: " + error;
  gw_comm_options co = GW_COMM_OPTIONS_INIT;
  co.rank = link.rank();
  co.world_size = link.size();
  co.local_rank = link.rank();
  co.allgather = link_allgather;
  co.allgather_user = &link;
  co.timeout_s = timeout_s;
  gw_comm* comm = nullptr;
  gw_status st = gw_comm_create(rt, &co, &comm);
  if (st != GW_OK) {
    error = std::string("gw_comm_create: ") + gw_status_string(st) + ": " + gw_last_error();
    gw_runtime_destroy(rt);
    return error;
  }
  const uint32_t n = link.size(), me = link.rank();
  auto fail = [&](const std::string& what) {
    error = what + ": " + gw_status_string(st) + ": " + gw_last_error();
    return false;
  };
  auto run = [&]() -> bool {
    for (uint64_t count : {uint64_t{1}, uint64_t{1000}, uint64_t{300000}}) {
      std::vector<float> in(count), out(count);
      for (uint64_t i = 0; i < count; ++i) in[i] = float(me + (i % 100));
      gw_tensor ti = GW_TENSOR_INIT, to = GW_TENSOR_INIT;
      ti.data = in.data();
      ti.count = count;
      to.data = out.data();
      to.count = count;
      if ((st = gw_allreduce(comm, &ti, &to, GW_REDUCE_SUM)) != GW_OK) return fail("allreduce of " + std::to_string(count));
      for (uint64_t i = 0; i < count; ++i)
        if (out[i] != float(n * (n - 1) / 2 + n * (i % 100))) {
          error = "allreduce of " + std::to_string(count) + " elements: wrong sum at element " + std::to_string(i);
          return false;
        }
    }
    {
      std::vector<float> b(5000, float(me));
      gw_tensor t = GW_TENSOR_INIT;
      t.data = b.data();
      t.count = b.size();
      if ((st = gw_broadcast(comm, &t, n - 1)) != GW_OK) return fail("broadcast");
      if (b[4999] != float(n - 1)) {
        error = "broadcast: wrong values";
        return false;
      }
    }
    {
      std::vector<float> mine(100, float(me)), all(100 * n);
      gw_tensor ti = GW_TENSOR_INIT, to = GW_TENSOR_INIT;
      ti.data = mine.data();
      ti.count = 100;
      to.data = all.data();
      to.count = all.size();
      if ((st = gw_allgather(comm, &ti, &to)) != GW_OK) return fail("allgather");
      for (uint32_t r = 0; r < n; ++r)
        if (all[r * 100 + 99] != float(r)) {
          error = "allgather: wrong values";
          return false;
        }
      std::vector<float> block(100);
      gw_tensor tb = GW_TENSOR_INIT;
      tb.data = block.data();
      tb.count = 100;
      if ((st = gw_reduce_scatter(comm, &to, &tb, GW_REDUCE_SUM)) != GW_OK) return fail("reduce_scatter");
      if (block[0] != float(me * n)) {
        error = "reduce_scatter: wrong values";
        return false;
      }
    }
    if ((st = gw_barrier(comm)) != GW_OK) return fail("barrier");
    {
      // Rule 7: no message to oneself reaches a transport; the runtime refuses it.
      unsigned char byte = 0;
      gw_tensor t = GW_TENSOR_INIT;
      t.dtype = GW_DTYPE_U8;
      t.data = &byte;
      t.count = 1;
      gw_request* r = nullptr;
      st = gw_send_start(comm, &t, me, 1, &r);
      if (r) gw_request_free(r);
      if (st != GW_ERR_INVALID_ARGUMENT) {
        error = std::string("gw_send_start to the calling rank returned ") + gw_status_string(st) +
                "; the runtime must refuse it before it reaches the transport";
        return false;
      }
    }
    {
      // The widest user tag, 1 MiB around the ring.
      std::vector<unsigned char> out(kMiB), in(kMiB);
      fill(out, me, (me + 1) % n, 900);
      gw_tensor ts = GW_TENSOR_INIT, tr = GW_TENSOR_INIT;
      ts.dtype = tr.dtype = GW_DTYPE_U8;
      ts.data = out.data();
      tr.data = in.data();
      ts.count = tr.count = kMiB;
      gw_request *rs = nullptr, *rr = nullptr;
      if ((st = gw_recv_start(comm, &tr, (me + n - 1) % n, 0xffffffffu, &rr)) != GW_OK) return fail("gw_recv_start");
      if ((st = gw_send_start(comm, &ts, (me + 1) % n, 0xffffffffu, &rs)) != GW_OK) return fail("gw_send_start");
      const gw_status a = gw_request_wait(rr, -1), b = gw_request_wait(rs, -1);
      gw_request_free(rr);
      gw_request_free(rs);
      st = a != GW_OK ? a : b;
      if (st != GW_OK) return fail("send/recv with tag 0xffffffff");
      if (first_wrong(in.data(), kMiB, (me + n - 1) % n, me, 900) >= 0) {
        error = "send/recv: wrong bytes";
        return false;
      }
    }
    // A compressed allreduce over this transport: every rank must end with the same bits.
    gw_codec* codec = nullptr;
    std::string codec_name;
    for (const char* candidate : {"int8", "fp16", "none"}) {
      if (gw_codec_create(rt, candidate, &codec) == GW_OK) {
        codec_name = candidate;
        break;
      }
    }
    if (codec == nullptr) {
      compressed_result = "skip:no built-in codec (int8, fp16, none) found on the plugin search path";
      return true;
    }
    const uint64_t count = 1 << 18;
    std::vector<float> in(count), out(count);
    std::mt19937 rng(1234 + me);
    std::normal_distribution<float> dist;
    for (auto& v : in) v = dist(rng);
    gw_tensor ti = GW_TENSOR_INIT, to = GW_TENSOR_INIT;
    ti.data = in.data();
    ti.count = count;
    to.data = out.data();
    to.count = count;
    st = gw_allreduce_compressed(comm, codec, nullptr, &ti, &to, GW_REDUCE_AVG);
    gw_codec_destroy(codec);
    if (st != GW_OK) return fail("compressed allreduce (" + codec_name + ")");
    uint64_t h = 1469598103934665603ull;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(out.data());
    for (uint64_t i = 0; i < count * 4; ++i) h = (h ^ p[i]) * 1099511628211ull;
    std::vector<uint64_t> hashes(n);
    gw_tensor th = GW_TENSOR_INIT, tall = GW_TENSOR_INIT;
    th.dtype = tall.dtype = GW_DTYPE_I64;
    th.data = &h;
    th.count = 1;
    tall.data = hashes.data();
    tall.count = n;
    if ((st = gw_allgather(comm, &th, &tall)) != GW_OK) return fail("allgather of the result hashes");
    compressed_result = codec_name;
    for (uint32_t r = 0; r < n; ++r)
      if (hashes[r] != h) compressed_result = "fail:ranks " + std::to_string(r) + " and " + std::to_string(me) +
                                              " ended the compressed allreduce (" + codec_name + ") with different bits";
    return true;
  };
  const bool ok = run();
  gw_comm_destroy(comm);
  gw_runtime_destroy(rt);
  return ok ? "" : error;
}

}  // namespace

std::vector<Check> check_transport(Plugin& plugin, const gw_component& c, const Options& o) {
  const std::string prefix = std::string("transport.") + c.name + ".";
  std::vector<Check> out;
  const auto* v = static_cast<const gw_transport_vtable*>(c.vtable);
  {
    // The vtable's size and required members passed the loader's own checks (plugin.load); what the
    // loader does not ask is that the transport carries some kind of memory.
    std::string missing;
    if (v->memory_kinds == 0) missing = "memory_kinds is empty";
    out.push_back({prefix + "vtable", missing.empty(), false, missing});
    if (!missing.empty()) return out;
    // A device transport ([transport] device, e.g. NCCL) moves device buffers only: its checks need a GPU.
    if (!(v->memory_kinds & (1u << GW_MEMORY_HOST))) {
      out.push_back({prefix + "point_to_point", false, true,
                     "a device-only transport (memory_kinds without host memory): its checks run on a machine "
                     "with a GPU (tests/gpu/check.sh)"});
      return out;
    }
  }

  using Fn = std::string (*)(Ctx&);
  const std::vector<std::pair<const char*, Fn>> p2p = {
      {"sizes", check_sizes},         {"wide_tags", check_wide_tags},   {"shorter_message", check_shorter},
      {"truncation", check_truncation}, {"ordering", check_ordering}, {"many_outstanding", check_many_outstanding},
      {"cancel", check_cancel},       {"abort", check_abort}};
  auto group = run_group(prefix + "p2p", o.ranks, 60 + o.timeout_s * 12, [&](RankLink& link) {
    Raw raw;
    const std::string err = create_and_connect(plugin, c, link, raw, o.timeout_s);
    link.report(prefix + "connect", err.empty(), err);
    if (!err.empty()) return;
    Ctx x{link, raw, link.rank(), link.size(), (link.rank() + 1) % link.size(),
          (link.rank() + link.size() - 1) % link.size()};
    bool stopped = false;
    for (auto& [name, fn] : p2p) {
      if (stopped) {
        link.skip(prefix + name, "not run: an earlier check failed");
        continue;
      }
      std::string why = fn(x);
      link.report(prefix + name, why.empty(), why);
      // Every rank learns whether every rank passed; after a failure stray messages could confuse the
      // next checks, so they are not run.
      std::vector<std::string> verdicts;
      // (progressing meanwhile: a peer's send may complete only when this rank acknowledges it)
      if (!link.allgather(why.empty() ? "1" : "0", verdicts, [&] { raw.v->progress(raw.t); })) return;
      for (auto& verdict : verdicts) stopped = stopped || verdict != "1";
    }
    link.sync([&] { raw.v->progress(raw.t); });  // nobody closes while another still tests
    raw.v->destroy(raw.t);
    plugin.fini();
  });
  out.insert(out.end(), group.begin(), group.end());

  group = run_group(prefix + "killed_peer", 2, 60 + o.timeout_s * 4,
                    [&](RankLink& link) { killed_peer_body(plugin, c, o, link); });
  out.insert(out.end(), group.begin(), group.end());

  group = run_group(prefix + "runtime", 4, 60 + o.timeout_s * 4, [&](RankLink& link) {
    std::string compressed;
    const std::string err = runtime_checks(o.plugin_path, c.name, link, o.timeout_s, compressed);
    link.report(prefix + "runtime_collectives", err.empty(), err);
    if (!err.empty()) return;
    if (compressed.rfind("skip:", 0) == 0) link.report(prefix + "compressed_allreduce", true, "skipped: " + compressed.substr(5));
    else if (compressed.rfind("fail:", 0) == 0) link.report(prefix + "compressed_allreduce", false, compressed.substr(5));
    else link.report(prefix + "compressed_allreduce", true, "codec " + compressed + ", 4 ranks, bit-identical");
  });
  out.insert(out.end(), group.begin(), group.end());
  return out;
}

}  // namespace gwcli::conformance
