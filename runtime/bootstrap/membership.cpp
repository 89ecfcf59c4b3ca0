#include "bootstrap/membership.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "bootstrap/rendezvous.hpp"
#include "core/error.hpp"

namespace gw::bootstrap {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMagic = 0x4d454c45u;  // "ELEM"
constexpr uint32_t kJoinMagic = 0x4e494f4au;  // "JOIN"
constexpr uint32_t kProbeMagic = 0x424f5250u;  // "PROB"
constexpr uint64_t kMaxFrame = uint64_t{1} << 30;

Clock::time_point after(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : int(std::min<long long>(left, 1000));
}

void put_u32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void put_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }

struct Reader {
  const std::string& s;
  size_t at = 0;
  template <class T>
  T get() {
    if (at + sizeof(T) > s.size()) fail(GW_ERR_CORRUPT, "elastic: a malformed membership message");
    T v;
    std::memcpy(&v, s.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
};

// Sends all bytes before the deadline; false when the peer is gone or the deadline passed.
bool send_all(int fd, const char* p, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= size_t(k);
      continue;
    }
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    if (Clock::now() > deadline) return false;
    pollfd pf{fd, POLLOUT, 0};
    ::poll(&pf, 1, ms_left(deadline));
  }
  return true;
}

bool send_frame(int fd, const std::string& body, Clock::time_point deadline) {
  std::string f;
  put_u64(f, body.size());
  f += body;
  return send_all(fd, f.data(), f.size(), deadline);
}

// Reads exactly n bytes; false when the peer closed or the deadline passed.
bool recv_all(int fd, char* p, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= size_t(k);
      continue;
    }
    if (k == 0) return false;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    if (Clock::now() > deadline) return false;
    pollfd pf{fd, POLLIN, 0};
    ::poll(&pf, 1, ms_left(deadline));
  }
  return true;
}

bool recv_frame(int fd, std::string* body, Clock::time_point deadline) {
  uint64_t n = 0;
  if (!recv_all(fd, reinterpret_cast<char*>(&n), 8, deadline) || n > kMaxFrame) return false;
  body->resize(n);
  return recv_all(fd, body->data(), n, deadline);
}

std::string encode(const Proposal& p) {
  std::string s;
  put_u32(s, p.join ? kJoinMagic : p.probe ? kProbeMagic : kMagic);
  put_u64(s, p.epoch);
  put_u32(s, p.old_rank);
  put_u64(s, p.completed_steps);
  put_u32(s, uint32_t(p.dead.size()));
  for (uint32_t d : p.dead) put_u32(s, d);
  s += p.address;
  return s;
}

Proposal decode_proposal(const std::string& s) {
  Reader r{s};
  const uint32_t magic = r.get<uint32_t>();
  if (magic != kMagic && magic != kJoinMagic && magic != kProbeMagic)
    fail(GW_ERR_CORRUPT, "elastic: a connection that is not a membership proposal");
  Proposal p;
  p.join = magic == kJoinMagic;
  p.probe = magic == kProbeMagic;
  p.epoch = r.get<uint64_t>();
  p.old_rank = r.get<uint32_t>();
  p.completed_steps = r.get<uint64_t>();
  const uint32_t n = r.get<uint32_t>();
  if (n > 1u << 20) fail(GW_ERR_CORRUPT, "elastic: a malformed membership proposal");
  for (uint32_t i = 0; i < n; ++i) p.dead.push_back(r.get<uint32_t>());
  p.address = s.substr(r.at);
  return p;
}

std::string encode(const Verdict& v) {
  std::string s;
  put_u32(s, uint32_t(v.status));
  put_u64(s, v.epoch);
  put_u64(s, v.steps);
  put_u32(s, uint32_t(v.members.size()));
  for (uint32_t m : v.members) put_u32(s, m);
  put_u32(s, v.your_rank);
  s += v.message;
  return s;
}

Verdict decode_verdict(const std::string& s) {
  Reader r{s};
  Verdict v;
  v.status = int32_t(r.get<uint32_t>());
  v.epoch = r.get<uint64_t>();
  v.steps = r.get<uint64_t>();
  const uint32_t n = r.get<uint32_t>();
  if (n > 1u << 20) fail(GW_ERR_CORRUPT, "elastic: a malformed membership verdict");
  for (uint32_t i = 0; i < n; ++i) v.members.push_back(r.get<uint32_t>());
  v.your_rank = r.get<uint32_t>();
  v.message = s.substr(r.at);
  return v;
}

std::string list(const std::vector<uint32_t>& v) {
  std::string s;
  for (uint32_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s.empty() ? "none" : s;
}

// The local address this host uses towards host:port (a UDP "connection" sends nothing).
std::string route_ip(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  std::string ip = "127.0.0.1";
  if (getaddrinfo(host.empty() ? "127.0.0.1" : host.c_str(), nullptr, &hints, &found) != 0 || !found) return ip;
  sockaddr_in a;
  std::memcpy(&a, found->ai_addr, sizeof a);
  freeaddrinfo(found);
  a.sin_port = htons(uint16_t(port > 0 ? port : 9));
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return ip;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    char text[INET_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0 &&
        inet_ntop(AF_INET, &me.sin_addr, text, sizeof text))
      ip = text;
  }
  ::close(fd);
  return ip;
}

bool parse_address(const std::string& address, sockaddr_in* a) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  *a = sockaddr_in{};
  a->sin_family = AF_INET;
  a->sin_port = htons(uint16_t(std::atoi(address.c_str() + colon + 1)));
  return inet_pton(AF_INET, address.substr(0, colon).c_str(), &a->sin_addr) == 1;
}

// True when nothing listens at `address` any more (the connection is refused); a live, stopped or
// unreachable process is not gone.
bool probe_gone(const std::string& address) {
  sockaddr_in a;
  if (!parse_address(address, &a)) return false;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool gone = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno == ECONNREFUSED) {
      gone = true;
    } else if (errno == EINPROGRESS) {
      pollfd pf{fd, POLLOUT, 0};
      if (::poll(&pf, 1, 50) > 0) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        gone = err == ECONNREFUSED;
      }
    }
  }
  ::close(fd);
  return gone;
}

void nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Starts a connection to `address` ("ip:port") without waiting for it; -1 when it cannot even start (a
// malformed address, a refusal the kernel knew at once).
int connect_to(const std::string& address) {
  sockaddr_in a;
  if (!parse_address(address, &a)) return -1;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether a connection started by connect_to that polled writable was established.
bool established(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  return ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

// Whether the peer has closed its side: a follower that gave up waiting for this rank (stopped meanwhile)
// and left its proposal behind; it must not count as arrived.
bool peer_closed(int fd) {
  char c;
  const ssize_t k = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// The answer of a member at membership epoch `epoch` to a rank of an earlier epoch (`p`).
Verdict declared_dead(const Proposal& p, uint64_t epoch) {
  Verdict refuse;
  refuse.status = GW_ERR_STATE;
  refuse.epoch = epoch;
  refuse.message = "rank " + std::to_string(p.old_rank) + " of membership epoch " + std::to_string(p.epoch) +
                   " was declared dead and removed: the others continue at epoch " + std::to_string(epoch) +
                   "; it may not rejoin with its old state";
  return refuse;
}

}  // namespace

bool listener_gone(const std::string& address) { return probe_gone(address); }

MembershipListener::MembershipListener(const std::string& route_host, int route_port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) fail(GW_ERR_TRANSPORT, std::string("elastic: cannot open the membership listener: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 256) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd_);
    fail(GW_ERR_TRANSPORT, "elastic: cannot open the membership listener: " + why);
  }
  nonblocking(fd_);
  address_ = route_ip(route_host, route_port) + ":" + std::to_string(ntohs(a.sin_port));
}

void MembershipListener::refuse_waiting(uint64_t epoch) {
  // Kept proposals of an epoch this rank has left since (it followed another leader): refused.
  for (size_t i = 0; i < pending_.size();) {
    const Proposal p = decode_proposal(pending_[i].second);  // decoded once already
    if (p.epoch >= epoch) {
      ++i;
      continue;
    }
    send_frame(pending_[i].first, encode(declared_dead(p, epoch)), after(1.0));
    ::close(pending_[i].first);
    pending_.erase(pending_.begin() + ptrdiff_t(i));
  }
  for (;;) {
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    std::string body;
    bool kept = false;
    if (recv_frame(fd, &body, after(1.0))) {
      try {
        const Proposal p = decode_proposal(body);
        if (p.epoch < epoch) {
          send_frame(fd, encode(declared_dead(p, epoch)), after(1.0));
        } else if (!p.probe && !p.join && p.epoch == epoch && !peer_closed(fd)) {
          pending_.emplace_back(fd, std::move(body));  // for the agreement this rank is about to lead
          kept = true;
        }
      } catch (const Error&) {
      }
    }
    if (!kept) ::close(fd);
  }
}

MembershipListener::MembershipListener(const std::string& host, int port, bool) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) fail(GW_ERR_TRANSPORT, std::string("elastic: cannot open the join contact: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(fd_, 64) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    fail(GW_ERR_TRANSPORT, "elastic: cannot listen for joiners at " + host + ":" + std::to_string(port) + ": " + why);
  }
  nonblocking(fd_);
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);  // port 0: the one the kernel chose
  address_ = host + ":" + std::to_string(ntohs(a.sin_port));
}

MembershipListener::~MembershipListener() {
  for (auto& [fd, body] : pending_) ::close(fd);
  if (fd_ >= 0) ::close(fd_);
}

MembershipSession::~MembershipSession() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

std::unique_ptr<MembershipSession> MembershipSession::lead(MembershipListener& listener, uint32_t old_size,
                                                           const Proposal& mine, uint32_t min_ranks, double wait_s,
                                                           const std::vector<std::string>& addresses,
                                                           std::vector<Joiner> joiners) {
  const auto deadline = after(wait_s);
  std::map<uint32_t, std::pair<int, uint64_t>> arrived;  // old rank -> (fd, completed steps)
  arrived[mine.old_rank] = {-1, mine.completed_steps};
  std::set<uint32_t> dead(mine.dead.begin(), mine.dead.end());
  std::vector<int> unread;  // accepted, proposal not read yet
  // The probes: a connection to every rank waited for, carrying this leader's epoch. A member at this
  // epoch does not answer (it is on its way here, or closes it at its next step); one that moved on to a
  // later epoch refuses it: this leader was declared dead meanwhile (stopped, and continued since).
  struct Probe {
    int fd;
    bool sent;
  };
  std::vector<Probe> probes;
  Proposal probe = mine;
  probe.probe = true;
  probe.dead.clear();
  const std::string probe_body = encode(probe);
  bool stale = false;
  Verdict refused;
  auto settled = [&] {
    for (uint32_t r = 0; r < old_size; ++r)
      if (!arrived.count(r) && !dead.count(r)) return false;
    return true;
  };
  auto close_all = [&] {
    for (int fd : unread) ::close(fd);
    for (auto& [r, a] : arrived)
      if (a.first >= 0) ::close(a.first);
    for (const Probe& q : probes) ::close(q.fd);
  };
  // One message on the listener: a member's proposal, or something to refuse or drop.
  auto consider = [&](int fd, const std::string& body) {
    Proposal p;
    try {
      p = decode_proposal(body);
    } catch (const Error&) {
      ::close(fd);
      return;
    }
    if (p.probe) {  // another leader's probe: refused when it is of an earlier epoch
      if (p.epoch < mine.epoch) send_frame(fd, encode(declared_dead(p, mine.epoch)), after(1.0));
      ::close(fd);
      return;
    }
    if (peer_closed(fd)) {  // left behind by a follower that gave up on this rank (it was stopped)
      ::close(fd);
      return;
    }
    if (p.join || p.epoch != mine.epoch || p.old_rank >= old_size || arrived.count(p.old_rank)) {
      Verdict refuse;
      refuse.status = GW_ERR_STATE;
      refuse.epoch = mine.epoch;
      refuse.message = "rank " + std::to_string(p.old_rank) + " of membership epoch " + std::to_string(p.epoch) +
                       " is not a member of epoch " + std::to_string(mine.epoch) +
                       ": it was declared dead and removed; it may not rejoin with its old state";
      send_frame(fd, encode(refuse), after(1.0));
      ::close(fd);
      return;
    }
    arrived[p.old_rank] = {fd, p.completed_steps};
    dead.insert(p.dead.begin(), p.dead.end());
  };
  try {
    // Proposals that reached this rank before its own step failed (refuse_waiting kept them).
    std::vector<std::pair<int, std::string>> early = std::move(listener.pending_);
    listener.pending_.clear();
    for (auto& [fd, body] : early) consider(fd, body);
    for (uint32_t r = 0; r < old_size && r < addresses.size(); ++r)
      if (r != mine.old_rank && !arrived.count(r) && !dead.count(r))
        if (const int fd = connect_to(addresses[r]); fd >= 0) probes.push_back({fd, false});
    auto next_probe = Clock::now();
    while (!settled() && !stale && Clock::now() < deadline) {
      if (Clock::now() >= next_probe) {  // a killed rank's listener is closed: its port refuses at once
        next_probe = Clock::now() + std::chrono::milliseconds(250);
        for (uint32_t r = 0; r < old_size && r < addresses.size(); ++r)
          if (!arrived.count(r) && !dead.count(r) && probe_gone(addresses[r])) dead.insert(r);
        if (settled()) break;
      }
      std::vector<pollfd> pfs{{listener.fd(), POLLIN, 0}};
      for (int fd : unread) pfs.push_back({fd, POLLIN, 0});
      for (const Probe& q : probes) pfs.push_back({q.fd, short(q.sent ? POLLIN : POLLOUT), 0});
      ::poll(pfs.data(), pfs.size(), std::min(ms_left(deadline), 100));
      for (;;) {
        const int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        unread.push_back(fd);
      }
      for (size_t i = 0; i < unread.size();) {
        const int fd = unread[i];
        pollfd pf{fd, POLLIN, 0};
        if (::poll(&pf, 1, 0) <= 0) {
          ++i;
          continue;
        }
        unread.erase(unread.begin() + ptrdiff_t(i));
        std::string body;
        if (!recv_frame(fd, &body, after(1.0))) {
          ::close(fd);
          continue;
        }
        consider(fd, body);
      }
      for (size_t i = 0; i < probes.size();) {
        Probe& q = probes[i];
        pollfd pf{q.fd, short(q.sent ? POLLIN : POLLOUT), 0};
        if (::poll(&pf, 1, 0) <= 0) {
          ++i;
          continue;
        }
        bool keep = false;
        if (!q.sent) {
          keep = q.sent = established(q.fd) && send_frame(q.fd, probe_body, after(1.0));
        } else if (std::string body; recv_frame(q.fd, &body, after(1.0))) {
          try {
            const Verdict v = decode_verdict(body);
            if (v.status == GW_ERR_STATE) {
              stale = true;
              refused = v;
            }
          } catch (const Error&) {
          }
        }
        if (keep) {
          ++i;
          continue;
        }
        ::close(q.fd);
        probes.erase(probes.begin() + ptrdiff_t(i));
      }
    }
  } catch (...) {
    close_all();
    throw;
  }
  for (int fd : unread) ::close(fd);
  unread.clear();
  for (const Probe& q : probes) ::close(q.fd);
  probes.clear();

  auto s = std::unique_ptr<MembershipSession>(new MembershipSession());
  s->leader_ = true;
  Verdict& v = s->verdict_;
  if (stale) {  // this leader, and whoever followed it, were declared dead: the members' refusal for all
    v = refused;
    for (auto& [r, a] : arrived)
      if (a.first >= 0) {
        send_frame(a.first, encode(v), after(1.0));
        s->fds_.push_back(a.first);
      }
    joiners.clear();  // closed: they ask again
    return s;
  }
  v.epoch = mine.epoch + 1;
  uint64_t steps = UINT64_MAX;
  for (auto& [r, a] : arrived) {
    v.members.push_back(r);
    steps = std::min(steps, a.second);
    s->fds_.push_back(a.first);
  }
  v.steps = steps;
  s->my_index_ = uint32_t(std::find(v.members.begin(), v.members.end(), mine.old_rank) - v.members.begin());
  std::vector<uint32_t> missing;
  for (uint32_t r = 0; r < old_size; ++r)
    if (!arrived.count(r)) missing.push_back(r);
  const uint32_t n = uint32_t(v.members.size());
  if (n < min_ranks || 2 * n <= old_size) {
    v.status = GW_ERR_TRANSPORT;
    v.message = "elastic: the quorum is lost: " + std::to_string(n) + " of " + std::to_string(old_size) +
                " ranks of membership epoch " + std::to_string(mine.epoch) + " are left (ranks " + list(v.members) +
                "; gone: " + list(missing) + "); continuing needs at least [elastic] min_ranks = " +
                std::to_string(min_ranks) + " and a strict majority (" + std::to_string(old_size / 2 + 1) + ")";
  }
  if (v.status == 0)
    for (size_t j = 0; j < joiners.size(); ++j) {
      v.members.push_back(old_size + uint32_t(j));
      s->fds_.push_back(joiners[j].release());
    }
  else
    joiners.clear();  // closed: they ask again
  for (uint32_t i = 0; i < v.members.size(); ++i) {
    v.your_rank = i;
    if (s->fds_[i] >= 0) send_frame(s->fds_[i], encode(v), after(wait_s));
  }
  v.your_rank = s->my_index_;
  return s;
}

std::unique_ptr<MembershipSession> MembershipSession::follow(const std::string& address, const Proposal& mine,
                                                             double wait_s) {
  const auto deadline = after(wait_s);
  const size_t colon = address.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(std::stoi(address.substr(colon + 1))));
  if (colon == std::string::npos || inet_pton(AF_INET, address.substr(0, colon).c_str(), &a.sin_addr) != 1)
    fail(GW_ERR_CORRUPT, "elastic: a malformed membership address '" + address + "'");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail(GW_ERR_TRANSPORT, std::string("elastic: socket: ") + std::strerror(errno));
  auto s = std::unique_ptr<MembershipSession>(new MembershipSession());
  s->fds_.push_back(fd);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS)
    fail(GW_ERR_TRANSPORT, "elastic: the leader at " + address + " cannot be reached: " + std::strerror(errno));
  pollfd pf{fd, POLLOUT, 0};
  while (::poll(&pf, 1, ms_left(deadline)) == 0 && Clock::now() < deadline) {
  }
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0 || !(pf.revents & POLLOUT))
    fail(GW_ERR_TRANSPORT, "elastic: the leader at " + address + " cannot be reached: " +
                               (err ? std::strerror(err) : "no answer"));
  std::string body;
  if (!send_frame(fd, encode(mine), deadline) || !recv_frame(fd, &body, deadline))
    fail(GW_ERR_TRANSPORT, "elastic: the leader at " + address + " gave no verdict within " + std::to_string(wait_s) + " s");
  s->verdict_ = decode_verdict(body);
  s->my_index_ = s->verdict_.your_rank;
  return s;
}

std::unique_ptr<MembershipSession> MembershipSession::join(const std::vector<std::string>& contacts,
                                                           const Proposal& mine, double wait_s) {
  const auto deadline = after(wait_s);
  // Every candidate at once: only the current rank 0 listens at its own, but a rank 0 that was stopped and
  // declared dead may still hold its old one without answering. A candidate where nobody listens yet
  // (the members are still building their communicator, or the new rank 0 has not taken the contact over)
  // or that closes the connection is asked again 200 ms later.
  struct Candidate {
    int fd = -1;
    bool sent = false;
    Clock::time_point retry{};
  };
  std::vector<Candidate> at(contacts.size());
  const std::string request = encode(mine);
  std::string last_error = "nobody listens at the join contact";
  auto drop = [&](Candidate& c, const std::string& why) {
    ::close(c.fd);
    c = Candidate{};
    c.retry = Clock::now() + std::chrono::milliseconds(200);
    last_error = why;
  };
  auto close_all = [&] {
    for (Candidate& c : at)
      if (c.fd >= 0) ::close(c.fd);
  };
  while (Clock::now() < deadline) {
    for (size_t i = 0; i < at.size(); ++i)
      if (at[i].fd < 0 && Clock::now() >= at[i].retry) {
        at[i].fd = connect_to(contacts[i]);
        if (at[i].fd < 0) at[i].retry = Clock::now() + std::chrono::milliseconds(200);
      }
    std::vector<pollfd> pfs;
    std::vector<size_t> of;
    for (size_t i = 0; i < at.size(); ++i)
      if (at[i].fd >= 0) {
        pfs.push_back({at[i].fd, short(at[i].sent ? POLLIN : POLLOUT), 0});
        of.push_back(i);
      }
    ::poll(pfs.data(), pfs.size(), std::min(ms_left(deadline), 100));
    for (size_t k = 0; k < pfs.size(); ++k) {
      if (pfs[k].revents == 0) continue;
      Candidate& c = at[of[k]];
      const std::string& where = contacts[of[k]];
      if (!c.sent) {
        if (!established(c.fd)) {
          drop(c, "nobody listens at " + where);
        } else if (!send_frame(c.fd, request, after(1.0))) {
          drop(c, "the join contact at " + where + " closed the connection");
        } else {
          c.sent = true;
        }
        continue;
      }
      std::string body;
      if (!recv_frame(c.fd, &body, after(5.0))) {
        drop(c, "the join contact at " + where + " closed the connection without an answer");
        continue;
      }
      auto s = std::unique_ptr<MembershipSession>(new MembershipSession());
      try {
        s->verdict_ = decode_verdict(body);
      } catch (...) {
        close_all();
        throw;
      }
      s->my_index_ = s->verdict_.your_rank;
      s->fds_.push_back(c.fd);
      c.fd = -1;
      close_all();
      return s;
    }
  }
  close_all();
  std::string tried;
  for (const std::string& c : contacts) tried += (tried.empty() ? "" : ", ") + c;
  fail(GW_ERR_TIMEOUT, "elastic: joining: no member admitted this process within " + std::to_string(wait_s) +
                           " s ([runtime] timeout_s + 10 s) at the join contact (" + tried + "): " + last_error);
}

Joiner::Joiner(Joiner&& other) noexcept : fd(std::exchange(other.fd, -1)), proposal(std::move(other.proposal)) {}

Joiner& Joiner::operator=(Joiner&& other) noexcept {
  if (this != &other) {
    if (fd >= 0) ::close(fd);
    fd = std::exchange(other.fd, -1);
    proposal = std::move(other.proposal);
  }
  return *this;
}

Joiner::~Joiner() {
  if (fd >= 0) ::close(fd);
}

int Joiner::release() noexcept { return std::exchange(fd, -1); }

std::vector<Joiner> accept_joiners(MembershipListener& contact) {
  std::vector<Joiner> out;
  for (;;) {
    const int fd = ::accept4(contact.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return out;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::string body;
    Joiner j;
    j.fd = fd;
    try {
      if (recv_frame(fd, &body, after(1.0))) j.proposal = decode_proposal(body);
    } catch (const Error&) {
    }
    if (!j.proposal.join) continue;  // closed with j
    out.push_back(std::move(j));
  }
}

std::vector<std::string> MembershipSession::allgather(const std::string& mine, double wait_s) {
  const auto deadline = after(wait_s);
  if (!leader_) {
    std::string body;
    if (!send_frame(fds_[0], mine, deadline) || !recv_frame(fds_[0], &body, deadline))
      fail(GW_ERR_TRANSPORT, "elastic: the leader of the membership agreement stopped answering while the new "
                             "communicator was being built");
    return unpack_records(body, uint32_t(verdict_.members.size()));
  }
  std::vector<std::string> all(fds_.size());
  for (size_t i = 0; i < fds_.size(); ++i) {
    if (fds_[i] < 0) {
      all[i] = mine;
      continue;
    }
    if (!recv_frame(fds_[i], &all[i], deadline))
      fail(GW_ERR_TRANSPORT, "elastic: rank " + std::to_string(verdict_.members[i]) +
                                 " of the last membership stopped answering while the new communicator was being built");
  }
  const std::string packed = pack_records(all);
  for (int fd : fds_)
    if (fd >= 0) send_frame(fd, packed, deadline);
  return all;
}

}  // namespace gw::bootstrap
