/*
 * A gradwire transport plugin over plain TCP sockets, written the way a third party would: C99, the
 * installed headers only (gradwire/plugin.h), no UCX. It implements the contract of
 * docs/transport-guide.md and nothing more:
 *
 *   - one TCP connection per pair of ranks (the higher rank connects to the lower one), nonblocking,
 *     driven by poll() inside progress();
 *   - every message is a 16-byte frame header [tag : u64][length : u64] (little-endian) and the bytes;
 *   - a receive matches (peer, tag) exactly; messages from one peer are matched in the order they were
 *     sent; a message that arrives before its receive is kept in an "unexpected" buffer;
 *   - a receive larger than its message completes with the message's size; a smaller one fails with
 *     GW_ERR_MISMATCH (the message is consumed);
 *   - a peer whose connection closes or fails: what it sent before is still delivered, every other
 *     request involving it fails with GW_ERR_TRANSPORT; abort() makes everything fail with
 *     GW_ERR_ABORTED.
 *
 * Build: see CMakeLists.txt next to this file. Configuration ([transport.tcp_example]): `address`, the
 * IPv4 address the other ranks connect to (default: every address of this host, tried in order).
 *
 * Compiling with -DGW_TCP_BREAK_<RULE> breaks one rule of the contract on purpose; the project's tests
 * build those variants and check that `gradwire conformance` fails each of them.
 */
#define _DEFAULT_SOURCE /* getifaddrs, inet_ntop, MSG_NOSIGNAL */
#define _POSIX_C_SOURCE 200809L

#include <gradwire/plugin_transport.h> /* a transport needs only its kind's header (plugin.h has every kind) */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define FRAME_HEADER 16u
#define HELLO_MAGIC 0x50435447u /* "GTCP": first 8 bytes on a new connection: magic, rank */
#define MAX_ADDRESSES 8
#define CONNECT_ATTEMPT_S 3.0 /* then the next advertised address */

typedef struct tcp tcp;
typedef struct peer peer;
typedef struct unexpected unexpected;

struct gw_transport_request {
  gw_transport_request* next; /* in its peer's send queue or posted-receive list */
  uint32_t peer;
  int is_recv;
  int done;
  int orphan;                 /* freed by the host while half sent: the transport finishes and frees it */
  gw_status status;
  uint64_t tag;
  unsigned char* data;
  uint64_t capacity;          /* receive: buffer size; send: payload size */
  uint64_t offset;            /* send: bytes of header + payload written */
  uint64_t bytes;             /* receive: size of the message that arrived */
  unexpected* waiting_on;     /* receive matched to a message still arriving into a buffer */
  unsigned char header[FRAME_HEADER];
  char why[320];
};

struct unexpected {
  unexpected* next;
  uint64_t tag;
  uint64_t length;
  int complete;
  unsigned char* data;
  gw_transport_request* waiter;
};

struct peer {
  int fd;
  int dead;
  char why[160];
  /* connecting */
  int connected;
  int hello_sent;
  unsigned address_index;
  double attempt_started;
  /* outgoing: sends in order; the head is being written */
  gw_transport_request* send_head;
  gw_transport_request* send_tail;
  /* incoming: the frame being read, and where its bytes go */
  unsigned char header[FRAME_HEADER];
  unsigned header_got;
  int in_body;
  uint64_t in_tag, in_length, in_got;
  gw_transport_request* in_req; /* a posted receive being filled */
  unexpected* in_unexpected;    /* or an unexpected message being buffered */
  gw_transport_request* posted_head; /* receives not yet matched, in the order posted */
  gw_transport_request* posted_tail;
  unexpected* unexpected_head;       /* messages not yet matched, in arrival order */
  unexpected* unexpected_tail;
  /* the advertised addresses */
  unsigned num_addresses;
  struct sockaddr_in addresses[MAX_ADDRESSES];
};

struct tcp {
  const gw_host* host;
  uint32_t rank, world_size;
  int listen_fd;
  int aborted;
  int connected;
  char blob[64 + MAX_ADDRESSES * 20];
  size_t blob_size;
  peer* peers;
  int pending_fds[64];    /* accepted, hello not yet read */
  unsigned pending_count;
  struct pollfd* pfds;
  unsigned char discard[65536];
};

static const gw_config_key config_keys[] = {
    {sizeof(gw_config_key), "address", GW_CONFIG_STRING, "\"\"",
     "IPv4 address the other ranks connect to; empty: every address of this host, tried in order.", 1.0, 0.0,
     NULL},
};

/* ------------------------------------------------------------------------------------------------ */

static gw_status fail(const tcp* t, gw_status status, const char* message) {
  if (t != NULL && t->host != NULL && t->host->set_error != NULL) t->host->set_error(t->host->ctx, message);
  return status;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int is_aborted(const tcp* t) { return __atomic_load_n(&t->aborted, __ATOMIC_ACQUIRE); }

static void put_u64(unsigned char* p, uint64_t v) {
  int i;
  for (i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

static int set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static void complete(gw_transport_request* r, gw_status status, const char* why) {
  r->done = 1;
  r->status = status;
  if (why != NULL) snprintf(r->why, sizeof r->why, "%s", why);
  if (r->orphan) { /* a send the host freed half written: nobody will test it */
    free(r->data);
    free(r);
  }
}

/* The connection to p closed or failed: deliver nothing more from it; fail what involves it. Messages
 * it sent completely stay in the unexpected list and still match receives. */
static void peer_lost(tcp* t, peer* p, const char* what) {
  char why[320];
  gw_transport_request* r;
#ifdef GW_TCP_BREAK_DEAD_PEER
  const gw_status lost = GW_OK; /* pretends what involved the dead peer completed */
#else
  const gw_status lost = GW_ERR_TRANSPORT;
#endif
  if (p->dead) return;
  p->dead = 1;
  snprintf(p->why, sizeof p->why, "%s", what);
  snprintf(why, sizeof why, "tcp_example transport: the connection to rank %u failed (%s); the peer process "
           "probably exited or crashed", (unsigned)(p - t->peers), what);
  if (p->fd >= 0) close(p->fd);
  p->fd = -1;
  while ((r = p->send_head) != NULL) {
    p->send_head = r->next;
    complete(r, lost, why);
  }
  p->send_tail = NULL;
  while ((r = p->posted_head) != NULL) {
    p->posted_head = r->next;
    complete(r, lost, why);
  }
  p->posted_tail = NULL;
  if (p->in_req != NULL) complete(p->in_req, lost, why);
  p->in_req = NULL;
  if (p->in_unexpected != NULL) { /* half arrived: it never will be whole */
    unexpected* u = p->in_unexpected;
    unexpected** link = &p->unexpected_head;
    unexpected* prev = NULL;
    if (u->waiter != NULL) complete(u->waiter, lost, why);
    while (*link != u) {
      prev = *link;
      link = &(*link)->next;
    }
    *link = u->next;
    if (p->unexpected_tail == u) p->unexpected_tail = prev;
    free(u->data);
    free(u);
  }
  p->in_unexpected = NULL;
}

/* ------------------------------------------------------------------------------------------------
 * Receiving
 * ---------------------------------------------------------------------------------------------- */

static void deliver(gw_transport_request* r, const unsigned char* data, uint64_t length) {
  if (length > r->capacity) {
#ifdef GW_TCP_BREAK_TRUNCATION
    if (r->capacity > 0 && data != NULL) memcpy(r->data, data, r->capacity);
    r->bytes = r->capacity;
    complete(r, GW_OK, NULL);
    return;
#else
    char why[320];
    snprintf(why, sizeof why, "tcp_example transport: a %llu-byte message from rank %u does not fit the %llu-byte "
             "receive buffer (the ranks disagree on the size)", (unsigned long long)length, (unsigned)r->peer,
             (unsigned long long)r->capacity);
    complete(r, GW_ERR_MISMATCH, why);
    return;
#endif
  }
  if (length > 0 && data != NULL) memcpy(r->data, data, length);
  r->bytes = length;
#ifdef GW_TCP_BREAK_SHORTER
  r->bytes = r->capacity;
#endif
  complete(r, GW_OK, NULL);
}

static int tag_matches(uint64_t a, uint64_t b) {
#ifdef GW_TCP_BREAK_WIDE_TAGS
  return (uint32_t)a == (uint32_t)b; /* keeps only the low 32 bits */
#else
  return a == b;
#endif
}

/* A frame's header arrived: decide where its bytes go. */
static void begin_message(tcp* t, peer* p) {
  gw_transport_request* r;
  gw_transport_request* prev = NULL;
  (void)t;
  p->in_tag = get_u64(p->header);
  p->in_length = get_u64(p->header + 8);
  p->in_got = 0;
  p->in_body = 1;
  p->in_req = NULL;
  p->in_unexpected = NULL;
  for (r = p->posted_head; r != NULL; prev = r, r = r->next) {
    if (!tag_matches(r->tag, p->in_tag)) continue;
#ifdef GW_TCP_BREAK_ORDER
    /* take the newest matching receive instead of the oldest */
    {
      gw_transport_request* q;
      gw_transport_request* qprev = r;
      for (q = r->next; q != NULL; qprev = q, q = q->next)
        if (tag_matches(q->tag, p->in_tag)) {
          r = q;
          prev = qprev;
        }
    }
#endif
    if (prev == NULL) p->posted_head = r->next;
    else prev->next = r->next;
    if (p->posted_tail == r) p->posted_tail = prev;
    r->next = NULL;
    p->in_req = r;
    return;
  }
  {
    unexpected* u = (unexpected*)calloc(1, sizeof *u);
    if (u != NULL) u->data = (unsigned char*)malloc(p->in_length > 0 ? p->in_length : 1);
    if (u == NULL || u->data == NULL) {
      free(u);
      peer_lost(t, p, "out of memory buffering an unexpected message");
      return;
    }
    u->tag = p->in_tag;
    u->length = p->in_length;
    if (p->unexpected_tail != NULL) p->unexpected_tail->next = u;
    else p->unexpected_head = u;
    p->unexpected_tail = u;
    p->in_unexpected = u;
  }
}

static void end_message(peer* p) {
  gw_transport_request* r = p->in_req;
  unexpected* u = p->in_unexpected;
  if (r != NULL) {
    if (p->in_length > r->capacity) {
      deliver(r, NULL, p->in_length); /* the mismatch */
    } else {
      r->bytes = p->in_length;
#ifdef GW_TCP_BREAK_SHORTER
      r->bytes = r->capacity;
#endif
      complete(r, GW_OK, NULL);
    }
  } else if (u != NULL) {
    u->complete = 1;
    if (u->waiter != NULL) {
      gw_transport_request* w = u->waiter;
      unexpected** link = &p->unexpected_head;
      unexpected* prev = NULL;
      while (*link != u) {
        prev = *link;
        link = &(*link)->next;
      }
      *link = u->next;
      if (p->unexpected_tail == u) p->unexpected_tail = prev;
      w->waiting_on = NULL;
      deliver(w, u->data, u->length);
      free(u->data);
      free(u);
    }
  }
  p->in_req = NULL;
  p->in_unexpected = NULL;
  p->in_body = 0;
  p->header_got = 0;
}

static void read_peer(tcp* t, peer* p) {
  while (!p->dead) {
    ssize_t n;
    if (!p->in_body) {
      n = recv(p->fd, p->header + p->header_got, FRAME_HEADER - p->header_got, 0);
    } else {
      const uint64_t left = p->in_length - p->in_got;
      unsigned char* into;
      uint64_t room = left;
      if (p->in_req != NULL && p->in_got < p->in_req->capacity) {
        into = p->in_req->data + p->in_got;
        if (room > p->in_req->capacity - p->in_got) room = p->in_req->capacity - p->in_got;
      } else if (p->in_unexpected != NULL) {
        into = p->in_unexpected->data + p->in_got;
      } else { /* overflow of a too-small receive, or a cancelled one */
        into = t->discard;
        if (room > sizeof t->discard) room = sizeof t->discard;
      }
      if (room > ((uint64_t)1 << 30)) room = (uint64_t)1 << 30;
      n = recv(p->fd, into, (size_t)room, 0);
    }
    if (n > 0) {
      if (!p->in_body) {
        p->header_got += (unsigned)n;
        if (p->header_got < FRAME_HEADER) continue;
        begin_message(t, p);
        if (p->dead) return;
      } else {
        p->in_got += (uint64_t)n;
      }
      if (p->in_body && p->in_got == p->in_length) end_message(p);
      continue;
    }
    if (n == 0) {
      peer_lost(t, p, "connection closed by the peer");
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    peer_lost(t, p, strerror(errno));
    return;
  }
}

/* ------------------------------------------------------------------------------------------------
 * Sending: the head of each peer's queue is written as far as the socket takes it.
 * ---------------------------------------------------------------------------------------------- */

static void write_peer(tcp* t, peer* p) {
  (void)t;
  while (!p->dead && p->send_head != NULL) {
    gw_transport_request* r = p->send_head;
    struct iovec iov[2];
    struct msghdr msg;
    int n_iov = 0;
    ssize_t n;
    if (r->offset < FRAME_HEADER) {
      iov[n_iov].iov_base = r->header + r->offset;
      iov[n_iov].iov_len = FRAME_HEADER - r->offset;
      ++n_iov;
      if (r->capacity > 0) {
        iov[n_iov].iov_base = r->data;
        iov[n_iov].iov_len = (size_t)(r->capacity > ((uint64_t)1 << 30) ? ((uint64_t)1 << 30) : r->capacity);
        ++n_iov;
      }
    } else {
      const uint64_t left = FRAME_HEADER + r->capacity - r->offset;
      iov[0].iov_base = r->data + (r->offset - FRAME_HEADER);
      iov[0].iov_len = (size_t)(left > ((uint64_t)1 << 30) ? ((uint64_t)1 << 30) : left);
      n_iov = 1;
    }
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = iov;
    msg.msg_iovlen = (size_t)n_iov;
    n = sendmsg(p->fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      peer_lost(t, p, strerror(errno));
      return;
    }
    r->offset += (uint64_t)n;
    if (r->offset == FRAME_HEADER + r->capacity) {
      p->send_head = r->next;
      if (p->send_head == NULL) p->send_tail = NULL;
      r->next = NULL;
      complete(r, GW_OK, NULL);
    }
  }
}

/* ------------------------------------------------------------------------------------------------
 * Connecting: rank i connects to every rank j < i and says who it is; it accepts the others.
 * ---------------------------------------------------------------------------------------------- */

static int parse_blob(const void* blob, uint64_t size, peer* p) {
  char text[64 + MAX_ADDRESSES * 20];
  char* save = NULL;
  char* word;
  unsigned port;
  if (blob == NULL || size == 0 || size >= sizeof text) return -1;
  memcpy(text, blob, (size_t)size);
  text[size] = '\0';
  word = strtok_r(text, " ", &save);
  if (word == NULL || strcmp(word, "gwtcp1") != 0) return -1;
  word = strtok_r(NULL, " ", &save);
  if (word == NULL || sscanf(word, "%u", &port) != 1 || port == 0 || port > 65535) return -1;
  p->num_addresses = 0;
  while ((word = strtok_r(NULL, " ", &save)) != NULL && p->num_addresses < MAX_ADDRESSES) {
    struct sockaddr_in* a = &p->addresses[p->num_addresses];
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, word, &a->sin_addr) == 1) ++p->num_addresses;
  }
  return p->num_addresses > 0 ? 0 : -1;
}

/* Starts a nonblocking connect to p's current address. */
static void start_attempt(peer* p) {
  p->fd = socket(AF_INET, SOCK_STREAM, 0);
  p->attempt_started = now_s();
  p->hello_sent = 0;
  if (p->fd < 0) return;
  set_nonblocking(p->fd);
  if (connect(p->fd, (const struct sockaddr*)&p->addresses[p->address_index], sizeof(struct sockaddr_in)) != 0 &&
      errno != EINPROGRESS) {
    close(p->fd);
    p->fd = -1;
  }
}

static void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Returns 0 while connecting, 1 when p is connected, -1 when every address failed. */
static int drive_outgoing(tcp* t, peer* p) {
  struct pollfd pfd;
  int err = 0;
  socklen_t len = sizeof err;
  if (p->connected) return 1;
  if (p->fd < 0) {
    if (p->address_index >= p->num_addresses) return -1;
    start_attempt(p);
    if (p->fd < 0) {
      ++p->address_index;
      return 0;
    }
  }
  pfd.fd = p->fd;
  pfd.events = POLLOUT;
  pfd.revents = 0;
  if (poll(&pfd, 1, 0) <= 0) {
    if (now_s() - p->attempt_started > CONNECT_ATTEMPT_S) { /* unreachable address: try the next */
      close(p->fd);
      p->fd = -1;
      ++p->address_index;
    }
    return 0;
  }
  if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
    close(p->fd);
    p->fd = -1;
    ++p->address_index;
    return 0;
  }
  if (!p->hello_sent) {
    unsigned char hello[8];
    uint32_t magic = HELLO_MAGIC, rank = t->rank;
    int i;
    for (i = 0; i < 4; ++i) {
      hello[i] = (unsigned char)(magic >> (8 * i));
      hello[4 + i] = (unsigned char)(rank >> (8 * i));
    }
    if (send(p->fd, hello, sizeof hello, MSG_NOSIGNAL) != (ssize_t)sizeof hello) {
      close(p->fd);
      p->fd = -1;
      ++p->address_index;
      return 0;
    }
    p->hello_sent = 1;
  }
  tune(p->fd);
  p->connected = 1;
  return 1;
}

static void drive_incoming(tcp* t) {
  unsigned i;
  for (;;) {
    const int fd = accept(t->listen_fd, NULL, NULL);
    if (fd < 0) break;
    if (t->pending_count == sizeof t->pending_fds / sizeof t->pending_fds[0]) {
      close(fd);
      continue;
    }
    set_nonblocking(fd);
    t->pending_fds[t->pending_count++] = fd;
  }
  for (i = 0; i < t->pending_count;) {
    unsigned char hello[8];
    const ssize_t n = recv(t->pending_fds[i], hello, sizeof hello, MSG_PEEK);
    uint32_t magic = 0, rank = 0;
    int j;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      ++i;
      continue;
    }
    if (n > 0 && n < (ssize_t)sizeof hello) {
      ++i;
      continue;
    }
    if (n == (ssize_t)sizeof hello) {
      recv(t->pending_fds[i], hello, sizeof hello, 0);
      for (j = 3; j >= 0; --j) {
        magic = (magic << 8) | hello[j];
        rank = (rank << 8) | hello[4 + j];
      }
    }
    if (n == (ssize_t)sizeof hello && magic == HELLO_MAGIC && rank > t->rank && rank < t->world_size &&
        !t->peers[rank].connected) {
      tune(t->pending_fds[i]);
      t->peers[rank].fd = t->pending_fds[i];
      t->peers[rank].connected = 1;
    } else {
      close(t->pending_fds[i]); /* not a rank of this job, or a duplicate */
    }
    t->pending_fds[i] = t->pending_fds[--t->pending_count];
  }
}

/* ------------------------------------------------------------------------------------------------
 * The vtable
 * ---------------------------------------------------------------------------------------------- */

static void advertise(tcp* t, const char* configured, unsigned port) {
  int n = snprintf(t->blob, sizeof t->blob, "gwtcp1 %u", port);
  if (configured != NULL && configured[0] != '\0') {
    n += snprintf(t->blob + n, sizeof t->blob - (size_t)n, " %s", configured);
  } else {
    struct ifaddrs* list = NULL;
    struct ifaddrs* a;
    int pass, count = 0;
    if (getifaddrs(&list) == 0) {
      for (pass = 0; pass < 2; ++pass) /* other interfaces first, loopback last */
        for (a = list; a != NULL && count < MAX_ADDRESSES - 1; a = a->ifa_next) {
          char text[INET_ADDRSTRLEN];
          const struct sockaddr_in* in = (const struct sockaddr_in*)a->ifa_addr;
          int loopback;
          if (in == NULL || in->sin_family != AF_INET) continue;
          loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
          if (loopback != pass) continue;
          inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
          n += snprintf(t->blob + n, sizeof t->blob - (size_t)n, " %s", text);
          ++count;
        }
      freeifaddrs(list);
    }
    if (count == 0) n += snprintf(t->blob + n, sizeof t->blob - (size_t)n, " 127.0.0.1");
  }
  t->blob_size = (size_t)n;
}

static gw_status tcp_create(void* plugin_state, const gw_host* host, const gw_config* config,
                            const gw_transport_init* init, void** out) {
  tcp* t;
  struct sockaddr_in any;
  socklen_t len = sizeof any;
  const char* address = NULL;
  uint32_t r;
  (void)plugin_state;
  if (out == NULL || init == NULL || !GW_STRUCT_HAS(init, gw_transport_init, timeout_s) || init->world_size == 0 || init->rank >= init->world_size) {
    if (host != NULL && host->set_error != NULL)
      host->set_error(host->ctx, "tcp_example transport: create needs an output pointer and a valid rank/world size");
    return GW_ERR_INVALID_ARGUMENT;
  }
  t = (tcp*)calloc(1, sizeof *t);
  if (t == NULL) return GW_ERR_NO_MEMORY;
  t->host = host;
  t->rank = init->rank;
  t->world_size = init->world_size;
  t->peers = (peer*)calloc(init->world_size, sizeof(peer));
  t->pfds = (struct pollfd*)calloc(init->world_size, sizeof(struct pollfd));
  if (t->peers == NULL || t->pfds == NULL) {
    free(t->peers);
    free(t->pfds);
    free(t);
    return GW_ERR_NO_MEMORY;
  }
  for (r = 0; r < t->world_size; ++r) t->peers[r].fd = -1;
  if (config != NULL && host->config_get_string != NULL) host->config_get_string(config, "address", &address);
  memset(&any, 0, sizeof any);
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  t->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  if (t->listen_fd < 0 || bind(t->listen_fd, (const struct sockaddr*)&any, sizeof any) != 0 ||
      listen(t->listen_fd, 128) != 0 || getsockname(t->listen_fd, (struct sockaddr*)&any, &len) != 0 ||
      set_nonblocking(t->listen_fd) != 0) {
    char why[320];
    snprintf(why, sizeof why, "tcp_example transport: cannot listen on a TCP port: %s", strerror(errno));
    if (t->listen_fd >= 0) close(t->listen_fd);
    free(t->peers);
    free(t->pfds);
    free(t);
    if (host != NULL && host->set_error != NULL) host->set_error(host->ctx, why);
    return GW_ERR_TRANSPORT;
  }
  advertise(t, address, ntohs(any.sin_port));
  *out = t;
  return GW_OK;
}

static void free_unexpected(peer* p) {
  while (p->unexpected_head != NULL) {
    unexpected* u = p->unexpected_head;
    p->unexpected_head = u->next;
    free(u->data);
    free(u);
  }
}

static void tcp_destroy(void* transport) {
  tcp* t = (tcp*)transport;
  uint32_t r;
  unsigned i;
  if (t == NULL) return;
  for (r = 0; r < t->world_size; ++r) {
    peer* p = &t->peers[r];
    gw_transport_request* q = p->send_head;
    while (q != NULL) { /* only orphans can be left: the host frees its requests before destroy */
      gw_transport_request* next = q->next;
      if (q->orphan) {
        free(q->data);
        free(q);
      }
      q = next;
    }
    if (p->fd >= 0) {
      /* Closing a socket with unread bytes makes the kernel reset the connection and drop what this
       * rank sent but the peer has not read yet; read and drop what is pending first. */
      ssize_t n;
      while ((n = recv(p->fd, t->discard, sizeof t->discard, 0)) > 0) {
      }
      close(p->fd);
    }
    free_unexpected(p);
  }
  for (i = 0; i < t->pending_count; ++i) close(t->pending_fds[i]);
  if (t->listen_fd >= 0) close(t->listen_fd);
  free(t->peers);
  free(t->pfds);
  free(t);
}

static gw_status tcp_local_address(void* transport, const void** blob, uint64_t* size) {
  tcp* t = (tcp*)transport;
  if (t == NULL || blob == NULL || size == NULL) return GW_ERR_INVALID_ARGUMENT;
  *blob = t->blob;
  *size = t->blob_size;
  return GW_OK;
}

static gw_status tcp_connect(void* transport, const void* const* blobs, const uint64_t* sizes) {
  tcp* t = (tcp*)transport;
  uint32_t r;
  int all = 1;
  if (t == NULL || blobs == NULL || sizes == NULL) return GW_ERR_INVALID_ARGUMENT;
  if (t->connected) return GW_OK;
  for (r = 0; r < t->rank; ++r) {
    peer* p = &t->peers[r];
    int state;
    if (p->num_addresses == 0 && parse_blob(blobs[r], sizes[r], p) != 0) {
      char why[320];
      snprintf(why, sizeof why, "tcp_example transport: rank %u's address is not a tcp_example address (do all "
               "ranks use [transport] inter = \"tcp_example\"?)", (unsigned)r);
      return fail(t, GW_ERR_INVALID_ARGUMENT, why);
    }
    state = drive_outgoing(t, p);
    if (state < 0) {
      char why[320];
      snprintf(why, sizeof why, "tcp_example transport: cannot connect to rank %u at any of its addresses (%.100s); "
               "set [transport.tcp_example] address on every rank to one they can reach", (unsigned)r,
               (const char*)blobs[r]);
      return fail(t, GW_ERR_TRANSPORT, why);
    }
    if (state == 0) all = 0;
  }
  drive_incoming(t);
  for (r = t->rank + 1; r < t->world_size; ++r)
    if (!t->peers[r].connected) all = 0;
  if (!all) return GW_IN_PROGRESS;
  t->connected = 1;
  return GW_OK;
}

static gw_status start_checks(tcp* t, uint32_t peer_rank, const gw_tensor* buf, gw_transport_request** request,
                              uint64_t* bytes) {
  if (t == NULL || buf == NULL || request == NULL) return GW_ERR_INVALID_ARGUMENT;
  if (is_aborted(t)) return fail(t, GW_ERR_ABORTED, "tcp_example transport: the communicator was aborted");
  if (!t->connected) return fail(t, GW_ERR_STATE, "tcp_example transport: send/recv before connect completed");
  if (peer_rank >= t->world_size || peer_rank == t->rank)
    return fail(t, GW_ERR_INVALID_ARGUMENT, "tcp_example transport: the peer is not another rank of this job");
  if (buf->memory != GW_MEMORY_HOST)
    return fail(t, GW_ERR_UNSUPPORTED, "tcp_example transport: only host memory is supported");
  if (buf->dtype != GW_DTYPE_U8 && buf->dtype != GW_DTYPE_F32 && buf->dtype != GW_DTYPE_I32 &&
      buf->dtype != GW_DTYPE_F64 && buf->dtype != GW_DTYPE_I64 && buf->dtype != GW_DTYPE_F16 &&
      buf->dtype != GW_DTYPE_BF16)
    return fail(t, GW_ERR_INVALID_ARGUMENT, "tcp_example transport: unknown dtype");
  *bytes = buf->count * (buf->dtype == GW_DTYPE_U8 ? 1u
                         : (buf->dtype == GW_DTYPE_F16 || buf->dtype == GW_DTYPE_BF16) ? 2u
                         : (buf->dtype == GW_DTYPE_F64 || buf->dtype == GW_DTYPE_I64) ? 8u : 4u);
  if (*bytes > 0 && buf->data == NULL) return fail(t, GW_ERR_INVALID_ARGUMENT, "tcp_example transport: data is NULL");
  return GW_OK;
}

static gw_status tcp_send_start(void* transport, uint32_t peer_rank, uint64_t tag, const gw_tensor* buf,
                                gw_transport_request** request) {
  tcp* t = (tcp*)transport;
  uint64_t bytes = 0;
  gw_transport_request* r;
  peer* p;
  const gw_status st = start_checks(t, peer_rank, buf, request, &bytes);
  if (st != GW_OK) return st;
  r = (gw_transport_request*)calloc(1, sizeof *r);
  if (r == NULL) return GW_ERR_NO_MEMORY;
  r->peer = peer_rank;
  r->tag = tag;
  r->data = (unsigned char*)buf->data;
  r->capacity = bytes;
  put_u64(r->header, tag);
  put_u64(r->header + 8, bytes);
  p = &t->peers[peer_rank];
  *request = r;
  if (p->dead) {
    char why[320];
    snprintf(why, sizeof why, "tcp_example transport: send to rank %u failed: %.160s", (unsigned)peer_rank, p->why);
    complete(r, GW_ERR_TRANSPORT, why);
    return GW_OK;
  }
  if (p->send_tail != NULL) p->send_tail->next = r;
  else p->send_head = r;
  p->send_tail = r;
  write_peer(t, p); /* most small messages leave now */
  return GW_OK;
}

static gw_status tcp_recv_start(void* transport, uint32_t peer_rank, uint64_t tag, gw_tensor* buf,
                                gw_transport_request** request) {
  tcp* t = (tcp*)transport;
  uint64_t bytes = 0;
  gw_transport_request* r;
  peer* p;
  unexpected* u;
  unexpected* prev = NULL;
  const gw_status st = start_checks(t, peer_rank, buf, request, &bytes);
  if (st != GW_OK) return st;
  r = (gw_transport_request*)calloc(1, sizeof *r);
  if (r == NULL) return GW_ERR_NO_MEMORY;
  r->peer = peer_rank;
  r->is_recv = 1;
  r->tag = tag;
  r->data = (unsigned char*)buf->data;
  r->capacity = bytes;
  *request = r;
  p = &t->peers[peer_rank];
  for (u = p->unexpected_head; u != NULL; prev = u, u = u->next) {
    if (u->waiter != NULL || !tag_matches(u->tag, tag)) continue;
    if (!u->complete) { /* still arriving: it completes r when it is whole */
      u->waiter = r;
      r->waiting_on = u;
      return GW_OK;
    }
    if (prev == NULL) p->unexpected_head = u->next;
    else prev->next = u->next;
    if (p->unexpected_tail == u) p->unexpected_tail = prev;
    deliver(r, u->data, u->length);
    free(u->data);
    free(u);
    return GW_OK;
  }
  if (p->dead) {
    char why[320];
    snprintf(why, sizeof why, "tcp_example transport: receive from rank %u failed: %.160s", (unsigned)peer_rank, p->why);
    complete(r, GW_ERR_TRANSPORT, why);
    return GW_OK;
  }
  if (p->posted_tail != NULL) p->posted_tail->next = r;
  else p->posted_head = r;
  p->posted_tail = r;
  return GW_OK;
}

static gw_status tcp_test(void* transport, gw_transport_request* r, uint64_t* bytes) {
  tcp* t = (tcp*)transport;
  if (t == NULL || r == NULL) return GW_ERR_INVALID_ARGUMENT;
  if (r->done) {
    if (r->status != GW_OK) return fail(t, r->status, r->why);
    if (bytes != NULL) *bytes = r->is_recv ? r->bytes : r->capacity;
    return GW_OK;
  }
#ifndef GW_TCP_BREAK_ABORT
  if (is_aborted(t)) return fail(t, GW_ERR_ABORTED, "tcp_example transport: the communicator was aborted");
#endif
  return GW_IN_PROGRESS;
}

static void unlink_request(gw_transport_request** head, gw_transport_request** tail, gw_transport_request* r) {
  gw_transport_request* prev = NULL;
  gw_transport_request* q;
  for (q = *head; q != NULL; prev = q, q = q->next) {
    if (q != r) continue;
    if (prev == NULL) *head = q->next;
    else prev->next = q->next;
    if (*tail == q) *tail = prev;
    return;
  }
}

static void tcp_request_free(void* transport, gw_transport_request* r) {
  tcp* t = (tcp*)transport;
  peer* p;
  if (r == NULL) return;
  if (r->done || t == NULL) {
    free(r);
    return;
  }
  p = &t->peers[r->peer];
  if (r->is_recv) {
    if (p->in_req == r) p->in_req = NULL; /* the rest of its message is read and dropped */
    else if (r->waiting_on != NULL) r->waiting_on->waiter = NULL; /* the message waits for another receive */
    else unlink_request(&p->posted_head, &p->posted_tail, r);
    free(r);
    return;
  }
  if (r->offset == 0) { /* nothing written yet: the message never existed */
    unlink_request(&p->send_head, &p->send_tail, r);
    free(r);
    return;
  }
  { /* half written: the stream must stay whole, so finish it from a copy */
    const uint64_t sent = r->offset > FRAME_HEADER ? r->offset - FRAME_HEADER : 0;
    unsigned char* copy = (unsigned char*)malloc(r->capacity > 0 ? r->capacity : 1);
    if (copy == NULL) {
      peer_lost(t, p, "out of memory while cancelling a send");
      free(r);
      return;
    }
    if (r->capacity > sent) memcpy(copy + sent, r->data + sent, r->capacity - sent);
    r->data = copy;
    r->orphan = 1;
  }
}

static gw_status tcp_progress(void* transport) {
  tcp* t = (tcp*)transport;
  uint32_t r;
  nfds_t n = 0;
  nfds_t i;
  if (t == NULL) return GW_ERR_INVALID_ARGUMENT;
  if (!t->connected) return GW_OK;
  for (r = 0; r < t->world_size; ++r) {
    const peer* p = &t->peers[r];
    if (r == t->rank || p->dead || p->fd < 0) continue;
    t->pfds[n].fd = p->fd;
    t->pfds[n].events = (short)(POLLIN | (p->send_head != NULL ? POLLOUT : 0));
    t->pfds[n].revents = 0;
    ++n;
  }
  if (n == 0 || poll(t->pfds, n, 0) <= 0) return GW_OK;
  for (i = 0; i < n; ++i) {
    const short ev = t->pfds[i].revents;
    peer* p = NULL;
    for (r = 0; r < t->world_size; ++r)
      if (t->peers[r].fd == t->pfds[i].fd && !t->peers[r].dead) p = &t->peers[r];
    if (p == NULL || ev == 0) continue;
    if (ev & (POLLIN | POLLERR | POLLHUP)) read_peer(t, p);
    if (!p->dead && (ev & (POLLOUT | POLLERR))) write_peer(t, p);
  }
  return GW_OK;
}

static gw_status tcp_abort(void* transport) {
  tcp* t = (tcp*)transport;
  if (t == NULL) return GW_ERR_INVALID_ARGUMENT;
#ifndef GW_TCP_BREAK_ABORT
  __atomic_store_n(&t->aborted, 1, __ATOMIC_RELEASE);
#endif
  return GW_OK;
}

static const gw_transport_vtable transport_vtable = {
    sizeof(gw_transport_vtable),
    1u << GW_MEMORY_HOST,
    tcp_create,
    tcp_destroy,
    tcp_local_address,
    tcp_connect,
    tcp_send_start,
    tcp_recv_start,
    tcp_test,
    tcp_request_free,
    tcp_progress,
    tcp_abort,
    NULL, /* no native collectives: the runtime's algorithms run over send/recv */
    NULL,
    NULL,
    NULL,
    NULL,
};

static const gw_component components[] = {
    {sizeof(gw_component), GW_COMPONENT_TRANSPORT, "tcp_example",
     "Tagged point-to-point over plain nonblocking TCP sockets (an out-of-tree example).", config_keys,
     sizeof config_keys / sizeof config_keys[0], &transport_vtable},
};

static const gw_plugin_descriptor descriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "tcp_example", "1.0.0",
    "Example third-party transport: TCP sockets and poll()", NULL, NULL, components, 1, NULL};

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  return gw_plugin_abi_compatible(host_abi_major, host_abi_minor) ? &descriptor : NULL;
}
