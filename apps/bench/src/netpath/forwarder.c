// The packet-level WAN path: one TUN device in the client's network namespace, one in the
// server's, and this process moving IP packets between them after a fixed one-way delay per
// direction, with optional random loss, a rate limit and a bounded queue. The kernel here has no
// netem (no qdisc can hold a packet for a set time), so the delay is done in user space; since the
// forwarder moves packets, not bytes, TCP's own loss detection and retransmission run over the
// full round trip, exactly as on a real WAN.
//
// One thread: epoll over the two TUN fds, one timerfd per direction (absolute CLOCK_MONOTONIC
// deadlines, so a packet is released to the nanosecond the kernel can manage and never before
// its due time, which epoll's millisecond timeout could not promise), a signalfd and stdin.
//
// Relay mode (--relay-protocol tcp|udp, no root needed): the same queues, delay, loss and stats,
// but between sockets: it listens on 127.0.0.1 (--relay-port, 0 = any) and relays to --relay-target.
// UDP: each client address gets its own connected socket to the target; a datagram is a packet.
// TCP: each accepted connection gets its own connection to the target, and each read (at most a
// slot) is a packet; an end of input is one more packet, released in order as a shutdown of the
// other side's writing. A relay terminates TCP (its own retransmissions run on loopback) and never
// drops TCP data: --*-loss is refused for it. What a TCP peer does not take at once waits in that
// connection's own buffer, and the side feeding it is read no more until it drains (as is a side
// whose direction's queue is full): back-pressure per connection, never a stall of the others. A
// connection reset on one side reaches the other as a reset, after the delay.
//
// stdout: one JSON line {"ready":true,...} once both TUNs (or the relay's socket) are open, then one stats line per
// SIGUSR1 and one at exit. It exits cleanly on SIGTERM, SIGINT, SIGHUP, EOF on stdin (the parent
// holds our stdin, so we end with it) and the parent's death (PR_SET_PDEATHSIG).
//
// Build: cc -O2 -Wall -Wextra -Werror -o forwarder forwarder.c (libc only).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

// Larger than any MTU the path is given (1500): a read that fills the slot was truncated.
#define SLOT_BYTES 2048
// Packets read from one TUN per loop turn, so a flood in one direction cannot hold back the
// other direction's releases for long (epoll is level-triggered: the rest is read next turn).
#define READ_BURST 256
#define MAX_QUEUE_PACKETS (1u << 20)
// Lateness (release minus due) histogram: 1 µs buckets; the last one holds everything above.
#define LATE_BUCKETS 4096
#define NS_PER_S 1000000000ull

enum { TAG_UP_TUN, TAG_DOWN_TUN, TAG_UP_TIMER, TAG_DOWN_TIMER, TAG_SIGNAL, TAG_STDIN, TAG_LISTEN, TAG_CLIENT, TAG_TARGET };
// Relay mode: at most this many TCP connections or UDP client addresses at once.
#define MAX_PEERS 32768
// A relayed UDP client address is forgotten after this long without a datagram either way.
#define UDP_IDLE_NS (120 * NS_PER_S)

struct packet {
  uint64_t stamp_ns; // CLOCK_MONOTONIC when read
  uint64_t due_ns;   // earliest release: stamp (or later, for the rate) + delay
  uint32_t len;
  int32_t peer; // relay mode: the connection or client address it belongs to; -1 for a TUN packet
  uint32_t gen; // relay mode: that peer slot's generation (a packet of an ended peer is dropped)
  uint8_t fin;  // relay mode, TCP: FIN_END or FIN_RESET of that side's input (len 0), else 0
};

enum { FIN_END = 1, FIN_RESET = 2 };

struct direction {
  const char *name; // "up" = client to server, "down" = server to client
  int in_fd, out_fd, timer_fd;
  uint64_t delay_ns;
  double loss;
  uint64_t rng; // splitmix64 state: one draw per packet read, so the k-th packet's fate depends only on the seed
  uint64_t rate_bps; // 0 = unlimited
  uint64_t burst_ns; // GCRA tolerance: how far ahead of the rate a burst may run
  uint64_t tat_ns;   // GCRA theoretical arrival time
  // The FIFO ring: the delay is the same for every packet of a direction and due times only
  // grow, so the head is always the next packet to leave.
  struct packet *meta;
  unsigned char *data;
  uint32_t cap, head, count, max_count;
  uint64_t queued_bytes, max_bytes;
  uint64_t armed_ns; // the timer's pending deadline; 0 = none (disarmed, or fired)
  // Stats.
  uint64_t packets, bytes, random_drops, queue_drops, oversize_drops, write_errors, read_errors;
  uint64_t rate_waited, rate_wait_ns;
  uint64_t tif_min_ns, tif_max_ns, tif_sum_ns; // time in forwarder: release minus stamp
  uint64_t late_max_ns, late_sum_ns;           // release minus due
  uint32_t late_hist[LATE_BUCKETS];
};

static struct direction up = {.name = "up"}, down = {.name = "down"};
static unsigned char scratch[SLOT_BYTES]; // where packets that will be dropped are read to
enum relay_protocol { RELAY_NONE, RELAY_TCP, RELAY_UDP };
static enum relay_protocol relay = RELAY_NONE; // RELAY_NONE: between the two TUNs
// --loss-udp-only: random loss hits only IPv4 UDP packets (TCP crosses the path whole), as a
// relay of UDP would have it; the draws then count UDP packets only.
static int loss_udp_only = 0;
static uint64_t started_ns;
static char sched_text[96] = "other";
static char mlock_text[96] = "false";

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("forwarder: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double uniform01(uint64_t *state) { return (double)(splitmix64(state) >> 11) * 0x1.0p-53; }

// ---- output: every line is built in a bounded buffer and written with one write() ----

struct out {
  char buf[4096];
  size_t len;
};

static void put(struct out *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->buf + o->len, sizeof o->buf - o->len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof o->buf - o->len) die("output line too long");
  o->len += (size_t)n;
}

static void emit(struct out *o) {
  put(o, "\n");
  size_t off = 0;
  while (off < o->len) {
    ssize_t w = write(STDOUT_FILENO, o->buf + off, o->len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; // the parent stopped reading: nothing to report to
    off += (size_t)w;
  }
}

static double us(uint64_t ns) { return (double)ns / 1000.0; }

// The lateness below which a share q of the packets left (upper edge of its 1 µs bucket).
static unsigned late_quantile_us(const struct direction *d, double q) {
  uint64_t rank = (uint64_t)(q * (double)d->packets), seen = 0;
  for (unsigned i = 0; i < LATE_BUCKETS; i++) {
    seen += d->late_hist[i];
    if (seen > rank) return i + 1;
  }
  return LATE_BUCKETS;
}

static void put_direction(struct out *o, const struct direction *d) {
  put(o, "\"%s\":{\"packets\":%llu,\"bytes\":%llu,\"randomDrops\":%llu,\"queueDrops\":%llu,", d->name,
      (unsigned long long)d->packets, (unsigned long long)d->bytes, (unsigned long long)d->random_drops,
      (unsigned long long)d->queue_drops);
  put(o, "\"oversizeDrops\":%llu,\"writeErrors\":%llu,\"readErrors\":%llu,\"rateWaitedPackets\":%llu,\"rateWaitUs\":%.1f,",
      (unsigned long long)d->oversize_drops, (unsigned long long)d->write_errors, (unsigned long long)d->read_errors,
      (unsigned long long)d->rate_waited, us(d->rate_wait_ns));
  if (d->packets == 0) {
    put(o, "\"timeInForwarderUs\":null,\"lateUs\":null,");
  } else {
    put(o, "\"timeInForwarderUs\":{\"min\":%.1f,\"mean\":%.1f,\"max\":%.1f},", us(d->tif_min_ns),
        us(d->tif_sum_ns) / (double)d->packets, us(d->tif_max_ns));
    put(o, "\"lateUs\":{\"mean\":%.1f,\"p50\":%u,\"p99\":%u,\"p999\":%u,\"max\":%.1f},", us(d->late_sum_ns) / (double)d->packets,
        late_quantile_us(d, 0.5), late_quantile_us(d, 0.99), late_quantile_us(d, 0.999), us(d->late_max_ns));
  }
  put(o, "\"queued\":%u,\"maxQueued\":%u}", d->count, d->max_count);
}

static void print_stats(const char *why) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  struct out o = {.len = 0};
  put(&o, "{\"stats\":\"%s\",", why);
  put_direction(&o, &up);
  put(&o, ",");
  put_direction(&o, &down);
  put(&o, ",\"cpuUserUs\":%lld,\"cpuSysUs\":%lld,\"uptimeUs\":%.0f,\"sched\":\"%s\",\"mlock\":%s}",
      (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec, (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec,
      us(now_ns() - started_ns), sched_text, mlock_text);
  emit(&o);
}

// ---- setup ----

// Opens /dev/net/tun with this thread inside namespace `ns` (a name under /run/netns or a
// path), so the device is created there, then returns the thread to its own namespace.
static int open_tun(const char *ns, const char *ifname, int home_ns) {
  char path[PATH_MAX];
  int n = strchr(ns, '/') != NULL ? snprintf(path, sizeof path, "%s", ns) : snprintf(path, sizeof path, "/run/netns/%s", ns);
  if (n < 0 || (size_t)n >= sizeof path) die("namespace path too long: %s", ns);
  if (strlen(ifname) == 0 || strlen(ifname) >= IFNAMSIZ) die("TUN name must have 1..%d characters: '%s'", IFNAMSIZ - 1, ifname);
  // The name is echoed in the JSON ready line: keep it to characters that need no escaping.
  if (strspn(ifname, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != strlen(ifname)) die("TUN name has characters other than [A-Za-z0-9._-]: %s", ifname);
  int ns_fd = open(path, O_RDONLY | O_CLOEXEC);
  if (ns_fd < 0) die("open %s: %s", path, strerror(errno));
  if (setns(ns_fd, CLONE_NEWNET) < 0) die("setns %s: %s", path, strerror(errno));
  close(ns_fd);
  int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    memcpy(ifr.ifr_name, ifname, strlen(ifname));
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) err = errno;
  }
  if (setns(home_ns, CLONE_NEWNET) < 0) die("setns back to the original namespace: %s", strerror(errno));
  if (err != 0) die("TUN %s in %s: %s", ifname, path, strerror(err));
  return fd;
}

static void setup_direction(struct direction *d, int in_fd, int out_fd, uint32_t cap, uint64_t max_bytes, uint64_t burst_bytes) {
  d->in_fd = in_fd;
  d->out_fd = out_fd;
  d->cap = cap;
  d->max_bytes = max_bytes;
  d->meta = calloc(cap, sizeof *d->meta);
  d->data = calloc(cap, SLOT_BYTES);
  if (d->meta == NULL || d->data == NULL) die("out of memory for a queue of %u packets", cap);
  d->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (d->timer_fd < 0) die("timerfd_create: %s", strerror(errno));
  d->tif_min_ns = UINT64_MAX;
  if (d->rate_bps == 0) return;
  // The default burst: 1 ms at the rate, at least two full packets.
  if (burst_bytes == 0) burst_bytes = d->rate_bps / 8000 > 3000 ? d->rate_bps / 8000 : 3000;
  d->burst_ns = burst_bytes * 8 * NS_PER_S / d->rate_bps;
}

// Real-time scheduling keeps the release of a due packet from waiting behind other processes on
// a busy 2-core machine; locked memory keeps page faults out of the path. Both are best effort.
static void go_realtime(int priority) {
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); // default slack is 50 µs for normal tasks
  if (priority <= 0) {
    snprintf(sched_text, sizeof sched_text, "other (realtime off)");
    return;
  }
  struct sched_param sp = {.sched_priority = priority};
  if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0)
    snprintf(sched_text, sizeof sched_text, "fifo:%d", priority);
  else
    snprintf(sched_text, sizeof sched_text, "other (SCHED_FIFO: %s)", strerror(errno));
  if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0)
    snprintf(mlock_text, sizeof mlock_text, "true");
  else
    snprintf(mlock_text, sizeof mlock_text, "false");
}

// ---- the path ----

// Where the next packet read in direction d goes: its slot in the ring, or the scratch buffer
// when the ring is full (the packet is then read and dropped).
static unsigned char *reserve(struct direction *d) {
  uint32_t tail = (d->head + d->count) % d->cap;
  return d->count < d->cap ? d->data + (size_t)tail * SLOT_BYTES : scratch;
}

// Queues the n bytes just read into `slot` (from reserve) with their due time, or drops them.
static void commit(struct direction *d, unsigned char *slot, ssize_t n, int32_t peer, uint32_t gen, uint8_t fin) {
  uint64_t t = now_ns();
  if (n == 0 && !fin) return;
  if (n >= SLOT_BYTES) {
    d->oversize_drops++;
    return;
  }
  // The random draw comes first and always, so drop decisions depend on the seed and the
  // packet's index only, never on the queue's state. (A relayed end of input is never dropped.)
  int lossy = !fin && d->loss > 0 && (!loss_udp_only || relay == RELAY_UDP || (relay == RELAY_NONE && n > 9 && slot[0] >> 4 == 4 && slot[9] == 17));
  if (lossy && uniform01(&d->rng) < d->loss) {
    d->random_drops++;
    return;
  }
  if (slot == scratch || d->queued_bytes + (uint64_t)n > d->max_bytes) {
    d->queue_drops++;
    return;
  }
  uint64_t depart = t;
  if (d->rate_bps > 0) {
    // GCRA (a token bucket as a virtual clock): the packet may leave once the link has sent
    // what came before it, less the burst tolerance; the delay then runs from there.
    uint64_t increment = (uint64_t)n * 8 * NS_PER_S / d->rate_bps;
    if (d->tat_ns > d->burst_ns && d->tat_ns - d->burst_ns > t) depart = d->tat_ns - d->burst_ns;
    d->tat_ns = (d->tat_ns > t ? d->tat_ns : t) + increment;
    if (depart > t) {
      d->rate_waited++;
      d->rate_wait_ns += depart - t;
    }
  }
  struct packet *p = &d->meta[(d->head + d->count) % d->cap];
  p->stamp_ns = t;
  p->due_ns = depart + d->delay_ns;
  p->len = (uint32_t)n;
  p->peer = peer;
  p->gen = gen;
  p->fin = fin;
  d->count++;
  d->queued_bytes += (uint64_t)n;
  if (d->count > d->max_count) d->max_count = d->count;
}

static void read_side(struct direction *d) {
  for (int i = 0; i < READ_BURST; i++) {
    unsigned char *slot = reserve(d);
    ssize_t n = read(d->in_fd, slot, SLOT_BYTES);
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR) d->read_errors++;
      return;
    }
    commit(d, slot, n, -1, 0, 0);
  }
}

static ssize_t deliver(struct direction *d, const struct packet *p, const unsigned char *bytes);

static void release(struct direction *d) {
  while (d->count > 0) {
    struct packet *p = &d->meta[d->head];
    uint64_t r = now_ns();
    if (p->due_ns > r) break; // never early
    ssize_t w = deliver(d, p, d->data + (size_t)d->head * SLOT_BYTES);
    if (w != (ssize_t)p->len) {
      d->write_errors++; // e.g. the other TUN is not up yet
    } else {
      uint64_t tif = r - p->stamp_ns, late = r - p->due_ns;
      d->packets++;
      d->bytes += p->len;
      if (tif < d->tif_min_ns) d->tif_min_ns = tif;
      if (tif > d->tif_max_ns) d->tif_max_ns = tif;
      d->tif_sum_ns += tif;
      if (late > d->late_max_ns) d->late_max_ns = late;
      d->late_sum_ns += late;
      d->late_hist[late / 1000 < LATE_BUCKETS ? late / 1000 : LATE_BUCKETS - 1]++;
    }
    d->queued_bytes -= p->len;
    d->head = (d->head + 1) % d->cap;
    d->count--;
  }
}

// ---- relay mode ----

static uint64_t parse_u64(const char *s, const char *what);

// TCP: bytes released toward one side that its socket did not take yet.
struct outbuf {
  unsigned char *buf;
  size_t off, len, cap;
};

// A TCP connection (side 0: the client's socket, accepted; side 1: the target's, dialed) or a UDP
// client address (target_fd connected to the target, `client` its address on the listening socket).
struct peer {
  int used;
  uint32_t gen; // bumped when the slot is freed: packets of the old peer are then dropped
  int fd[2];
  struct sockaddr_in client;
  uint64_t last_ns;
  // TCP, per side: output pending toward it, a released end of input waiting for that output,
  // its writing ended, its reading ended, its reading paused (the other side's output is backed
  // up, or its direction's queue is full), and whether its fd is in the epoll set.
  struct outbuf out[2];
  uint8_t fin_pending[2], write_ended[2], read_ended[2], paused[2], queue_wait[2], registered[2];
};

// Output pending toward one side above this pauses the reading of the other side; below the low
// mark it resumes.
#define OUT_HIGH (1u << 20)
#define OUT_LOW (256u << 10)
#define CLIENT 0
#define TARGET 1

static struct sockaddr_in relay_target;
static int listen_fd = -1, relay_ep = -1;
static struct peer *peers;
static uint32_t queue_waiters[2]; // TCP sides paused because direction up (0) or down (1) was full

static uint64_t tagged(uint32_t tag, int32_t peer) { return ((uint64_t)tag << 32) | (uint32_t)peer; }

static void watch(int fd, uint32_t tag, int32_t peer) {
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tagged(tag, peer)};
  if (epoll_ctl(relay_ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
}

static int32_t new_peer(void) {
  for (int32_t i = 0; i < MAX_PEERS; i++) {
    if (peers[i].used) continue;
    uint32_t gen = peers[i].gen;
    memset(&peers[i], 0, sizeof peers[i]);
    peers[i].gen = gen;
    peers[i].used = 1;
    peers[i].fd[CLIENT] = peers[i].fd[TARGET] = -1;
    return i;
  }
  return -1;
}

// Frees the slot; with `reset`, the TCP sockets still open are reset, not closed in order.
static void end_peer(int32_t i, int reset) {
  struct peer *c = &peers[i];
  for (int s = 0; s < 2; s++) {
    if (c->fd[s] < 0 || (relay == RELAY_UDP && s == CLIENT)) continue;
    if (reset) setsockopt(c->fd[s], SOL_SOCKET, SO_LINGER, &(struct linger){.l_onoff = 1, .l_linger = 0}, sizeof(struct linger));
    close(c->fd[s]); // also leaves the epoll set
    free(c->out[s].buf);
    if (c->queue_wait[s]) queue_waiters[s]--;
  }
  c->used = 0;
  c->gen++;
}

static int dial_target(int type) {
  int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (type == SOCK_STREAM) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
  // A blocking connect: the target is local. Then non-blocking, as every relayed socket.
  if (connect(fd, (const struct sockaddr *)&relay_target, sizeof relay_target) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// What epoll reports for a TCP side: readable unless its reading ended or is paused, writable
// while output waits for it. A side that wants neither leaves the set (a hung-up socket would
// otherwise be reported on every turn).
static void interest(int32_t i, int s) {
  struct peer *c = &peers[i];
  uint32_t events = (c->read_ended[s] || c->paused[s] || c->queue_wait[s] ? 0u : EPOLLIN) | (c->out[s].len > c->out[s].off ? EPOLLOUT : 0u);
  struct epoll_event ev = {.events = events, .data.u64 = tagged(s == CLIENT ? TAG_CLIENT : TAG_TARGET, i)};
  if (events == 0) {
    if (c->registered[s]) epoll_ctl(relay_ep, EPOLL_CTL_DEL, c->fd[s], NULL);
    c->registered[s] = 0;
    return;
  }
  if (epoll_ctl(relay_ep, c->registered[s] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd[s], &ev) < 0) die("epoll_ctl: %s", strerror(errno));
  c->registered[s] = 1;
}

// A new TCP connection: its own connection to the target.
static void accept_tcp(void) {
  int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
  int32_t i = new_peer();
  int target = i < 0 ? -1 : dial_target(SOCK_STREAM);
  if (target < 0) {
    close(fd);
    if (i >= 0) end_peer(i, 0);
    return;
  }
  peers[i].fd[CLIENT] = fd;
  peers[i].fd[TARGET] = target;
  interest(i, CLIENT);
  interest(i, TARGET);
}

static struct direction *reading_into(int s) { return s == CLIENT ? &up : &down; }

// One read from side s of a TCP connection into its direction (client: up, target: down). Its end
// of input is a FIN_END packet, an error a FIN_RESET; either way that side is read no more. When
// the direction has no room left, the side pauses until release() makes some.
static void read_tcp(int32_t i, int s) {
  struct peer *c = &peers[i];
  struct direction *d = reading_into(s);
  unsigned char *slot = reserve(d);
  if (slot == scratch || d->queued_bytes + SLOT_BYTES > d->max_bytes) {
    c->queue_wait[s] = 1;
    queue_waiters[s]++;
    interest(i, s);
    return;
  }
  ssize_t n = recv(c->fd[s], slot, SLOT_BYTES - 1, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n > 0) {
    commit(d, slot, n, i, c->gen, 0);
    return;
  }
  c->read_ended[s] = 1;
  interest(i, s);
  commit(d, slot, 0, i, c->gen, n == 0 ? FIN_END : FIN_RESET);
}

// Sides that waited for room in direction `dir` (0 up, 1 down) read again.
static void wake_queue_waiters(int dir) {
  struct direction *d = dir == 0 ? &up : &down;
  if (queue_waiters[dir] == 0 || d->count >= d->cap || d->queued_bytes + SLOT_BYTES > d->max_bytes) return;
  for (int32_t i = 0; i < MAX_PEERS && queue_waiters[dir] > 0; i++) {
    if (!peers[i].used || !peers[i].queue_wait[dir]) continue;
    peers[i].queue_wait[dir] = 0;
    queue_waiters[dir]--;
    interest(i, dir);
  }
}

// Sends what waits for side s; then a released end of input, and once both sides' writing
// ended, the pair is done. The other side reads again once this output is short. -1: reset.
static int flush_side(int32_t i, int s) {
  struct peer *c = &peers[i];
  struct outbuf *o = &c->out[s];
  while (o->off < o->len) {
    ssize_t w = send(c->fd[s], o->buf + o->off, o->len - o->off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) break;
    if (w <= 0) {
      end_peer(i, 1);
      return -1;
    }
    o->off += (size_t)w;
  }
  if (o->off == o->len) o->off = o->len = 0;
  if (o->len == 0 && c->fin_pending[s]) {
    c->fin_pending[s] = 0;
    shutdown(c->fd[s], SHUT_WR);
    c->write_ended[s] = 1;
    if (c->write_ended[CLIENT] && c->write_ended[TARGET]) {
      end_peer(i, 0);
      return 0;
    }
  }
  int other = 1 - s;
  size_t waiting = o->len - o->off;
  if (!c->paused[other] && waiting > OUT_HIGH) c->paused[other] = 1;
  else if (c->paused[other] && waiting < OUT_LOW) c->paused[other] = 0;
  interest(i, s);
  interest(i, other);
  return 0;
}

static void append(struct outbuf *o, const unsigned char *bytes, uint32_t len) {
  if (o->off > 0 && o->len + len > o->cap) {
    memmove(o->buf, o->buf + o->off, o->len - o->off);
    o->len -= o->off;
    o->off = 0;
  }
  if (o->len + len > o->cap) {
    size_t cap = o->cap == 0 ? 64 << 10 : o->cap;
    while (cap < o->len + len) cap *= 2;
    unsigned char *grown = realloc(o->buf, cap);
    if (grown == NULL) die("out of memory for a relayed connection's output (%zu bytes)", cap);
    o->buf = grown;
    o->cap = cap;
  }
  memcpy(o->buf + o->len, bytes, len);
  o->len += len;
}

// Datagrams from clients: each address is a peer with its own connected socket to the target.
static void read_udp_clients(struct direction *d) {
  for (int k = 0; k < READ_BURST; k++) {
    struct sockaddr_in from;
    socklen_t len = sizeof from;
    unsigned char *slot = reserve(d);
    ssize_t n = recvfrom(listen_fd, slot, SLOT_BYTES, MSG_DONTWAIT, (struct sockaddr *)&from, &len);
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR) d->read_errors++;
      return;
    }
    int32_t i = -1;
    for (int32_t j = 0; j < MAX_PEERS && i < 0; j++) {
      if (peers[j].used && peers[j].client.sin_port == from.sin_port && peers[j].client.sin_addr.s_addr == from.sin_addr.s_addr) i = j;
    }
    if (i < 0) {
      i = new_peer();
      int target = i < 0 ? -1 : dial_target(SOCK_DGRAM);
      if (target < 0) {
        if (i >= 0) end_peer(i, 0);
        d->read_errors++;
        continue;
      }
      peers[i].client = from;
      peers[i].fd[TARGET] = target;
      watch(target, TAG_TARGET, i);
    }
    peers[i].last_ns = now_ns();
    commit(d, slot, n, i, peers[i].gen, 0);
  }
}

static void read_udp_target(struct direction *d, int32_t i) {
  for (int k = 0; k < READ_BURST; k++) {
    unsigned char *slot = reserve(d);
    ssize_t n = recv(peers[i].fd[TARGET], slot, SLOT_BYTES, MSG_DONTWAIT);
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR) d->read_errors++;
      return;
    }
    peers[i].last_ns = now_ns();
    commit(d, slot, n, i, peers[i].gen, 0);
  }
}

static void forget_idle_udp_peers(void) {
  uint64_t t = now_ns();
  for (int32_t i = 0; i < MAX_PEERS && relay == RELAY_UDP; i++) {
    if (peers[i].used && t - peers[i].last_ns > UDP_IDLE_NS) end_peer(i, 0);
  }
}

static ssize_t deliver(struct direction *d, const struct packet *p, const unsigned char *bytes) {
  if (relay == RELAY_NONE) return write(d->out_fd, bytes, p->len);
  struct peer *c = &peers[p->peer];
  if (!c->used || c->gen != p->gen) return -1; // its peer has ended
  int upward = d == &up;
  if (relay == RELAY_UDP) {
    if (upward) return send(c->fd[TARGET], bytes, p->len, 0);
    return sendto(listen_fd, bytes, p->len, 0, (const struct sockaddr *)&c->client, sizeof c->client);
  }
  int to = upward ? TARGET : CLIENT;
  if (p->fin == FIN_RESET) {
    end_peer(p->peer, 1);
    return 0;
  }
  if (p->fin == FIN_END) c->fin_pending[to] = 1;
  else append(&c->out[to], bytes, p->len);
  return flush_side(p->peer, to) < 0 ? -1 : (ssize_t)p->len;
}

// The listening socket on 127.0.0.1:port; returns the port it got.
static unsigned open_relay(const char *protocol, unsigned port, const char *target) {
  relay = strcmp(protocol, "tcp") == 0 ? RELAY_TCP : strcmp(protocol, "udp") == 0 ? RELAY_UDP : RELAY_NONE;
  if (relay == RELAY_NONE) die("--relay-protocol wants tcp or udp, got '%s'", protocol);
  const char *colon = strrchr(target, ':');
  char host[64];
  if (colon == NULL || (size_t)(colon - target) >= sizeof host) die("--relay-target wants HOST:PORT, got '%s'", target);
  memcpy(host, target, (size_t)(colon - target));
  host[colon - target] = '\0';
  memset(&relay_target, 0, sizeof relay_target);
  relay_target.sin_family = AF_INET;
  relay_target.sin_port = htons((uint16_t)parse_u64(colon + 1, "relay-target port"));
  if (inet_pton(AF_INET, host, &relay_target.sin_addr) != 1) die("--relay-target wants an IPv4 address, got '%s'", host);
  peers = calloc(MAX_PEERS, sizeof *peers);
  if (peers == NULL) die("out of memory for %d relay peers", MAX_PEERS);
  listen_fd = socket(AF_INET, (relay == RELAY_TCP ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
  if (listen_fd < 0) die("socket: %s", strerror(errno));
  setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int));
  if (relay == RELAY_UDP) {
    // Bursts of QUIC datagrams (thousands of streams) wait in the socket, not on the floor.
    setsockopt(listen_fd, SOL_SOCKET, SO_RCVBUF, &(int){8 << 20}, sizeof(int));
  }
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (bind(listen_fd, (const struct sockaddr *)&a, sizeof a) < 0) die("bind 127.0.0.1:%u: %s", port, strerror(errno));
  if (relay == RELAY_TCP && listen(listen_fd, 4096) < 0) die("listen: %s", strerror(errno));
  socklen_t len = sizeof a;
  if (getsockname(listen_fd, (struct sockaddr *)&a, &len) < 0) die("getsockname: %s", strerror(errno));
  return ntohs(a.sin_port);
}

static void set_timer(struct direction *d, uint64_t deadline) {
  struct itimerspec its;
  memset(&its, 0, sizeof its); // a zero it_value disarms
  its.it_value.tv_sec = (time_t)(deadline / NS_PER_S);
  its.it_value.tv_nsec = (long)(deadline % NS_PER_S);
  if (timerfd_settime(d->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) die("timerfd_settime: %s", strerror(errno));
  d->armed_ns = deadline;
}

// Aims the timer at the head's due time. The timers are edge-triggered in epoll, so a fired
// timer needs neither a read nor a disarm (each a syscall, ~1 µs in this VM): it stays quiet
// until set again. Only a pending timer whose queue has emptied early is disarmed, to spare a
// useless wake-up.
static void arm(struct direction *d) {
  if (d->count == 0) {
    if (d->armed_ns != 0) set_timer(d, 0);
    return;
  }
  uint64_t deadline = d->meta[d->head].due_ns;
  if (deadline != d->armed_ns) set_timer(d, deadline);
}

// ---- command line ----

static uint64_t parse_u64(const char *s, const char *what) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || s[0] == '-') die("--%s wants a non-negative integer, got '%s'", what, s);
  return (uint64_t)v;
}

static double parse_probability(const char *s, const char *what) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || !(v >= 0.0 && v <= 1.0)) die("--%s wants a probability in [0, 1], got '%s'", what, s);
  return v;
}

static void usage(void) {
  fputs("usage: forwarder --client-ns NS --client-tun NAME --server-ns NS --server-tun NAME\n"
        "   or: forwarder --relay-protocol tcp|udp --relay-target IP:PORT [--relay-port N]\n"
        "  [--up-delay-us N] [--down-delay-us N] [--up-loss P] [--down-loss P] [--loss-udp-only] [--seed N]\n"
        "  [--up-rate-bps N] [--down-rate-bps N] [--burst-bytes N (default 1 ms at the rate)]\n"
        "  [--queue-packets N] [--queue-bytes N] [--realtime-priority N (0 = off)]\n"
        "up = client to server. NS is a name under /run/netns or a path.\n",
        stderr);
  exit(2);
}

int main(int argc, char **argv) {
  const char *client_ns = NULL, *client_tun = NULL, *server_ns = NULL, *server_tun = NULL;
  const char *relay_protocol = NULL, *relay_target_text = NULL;
  unsigned relay_port = 0;
  uint64_t seed = 1, queue_packets = 4096, queue_bytes = 6u << 20, burst_bytes = 0;
  int priority = 10;
  static const struct option options[] = {
      {"client-ns", required_argument, 0, 'a'},     {"client-tun", required_argument, 0, 'b'},
      {"server-ns", required_argument, 0, 'c'},     {"server-tun", required_argument, 0, 'd'},
      {"up-delay-us", required_argument, 0, 'e'},   {"down-delay-us", required_argument, 0, 'f'},
      {"up-loss", required_argument, 0, 'g'},       {"down-loss", required_argument, 0, 'h'},
      {"seed", required_argument, 0, 'i'},          {"up-rate-bps", required_argument, 0, 'j'},
      {"down-rate-bps", required_argument, 0, 'k'}, {"burst-bytes", required_argument, 0, 'l'},
      {"queue-packets", required_argument, 0, 'm'}, {"queue-bytes", required_argument, 0, 'n'},
      {"realtime-priority", required_argument, 0, 'o'}, {"relay-protocol", required_argument, 0, 'p'},
      {"relay-target", required_argument, 0, 'q'},      {"relay-port", required_argument, 0, 'r'},
      {"loss-udp-only", no_argument, 0, 's'},
      {0, 0, 0, 0},
  };
  for (int c; (c = getopt_long(argc, argv, "", options, NULL)) != -1;) {
    switch (c) {
      case 'a': client_ns = optarg; break;
      case 'b': client_tun = optarg; break;
      case 'c': server_ns = optarg; break;
      case 'd': server_tun = optarg; break;
      case 'e': up.delay_ns = parse_u64(optarg, "up-delay-us") * 1000; break;
      case 'f': down.delay_ns = parse_u64(optarg, "down-delay-us") * 1000; break;
      case 'g': up.loss = parse_probability(optarg, "up-loss"); break;
      case 'h': down.loss = parse_probability(optarg, "down-loss"); break;
      case 'i': seed = parse_u64(optarg, "seed"); break;
      case 'j': up.rate_bps = parse_u64(optarg, "up-rate-bps"); break;
      case 'k': down.rate_bps = parse_u64(optarg, "down-rate-bps"); break;
      case 'l': burst_bytes = parse_u64(optarg, "burst-bytes"); break;
      case 'm': queue_packets = parse_u64(optarg, "queue-packets"); break;
      case 'n': queue_bytes = parse_u64(optarg, "queue-bytes"); break;
      case 'o': priority = (int)parse_u64(optarg, "realtime-priority"); break;
      case 'p': relay_protocol = optarg; break;
      case 'q': relay_target_text = optarg; break;
      case 'r': relay_port = (unsigned)parse_u64(optarg, "relay-port"); break;
      case 's': loss_udp_only = 1; break;
      default: usage();
    }
  }
  int tun_mode = client_ns && client_tun && server_ns && server_tun;
  if (optind != argc || tun_mode == (relay_protocol != NULL) || (relay_protocol != NULL) != (relay_target_text != NULL)) usage();
  if (relay_protocol != NULL && strcmp(relay_protocol, "tcp") == 0 && (up.loss > 0 || down.loss > 0)) die("a TCP relay cannot drop TCP data: no --up-loss/--down-loss");
  if (relay_port > 65535) die("--relay-port must be 0..65535");
  if (queue_packets < 1 || queue_packets > MAX_QUEUE_PACKETS) die("--queue-packets must be 1..%u", MAX_QUEUE_PACKETS);
  if (queue_bytes < SLOT_BYTES) die("--queue-bytes must be at least %d", SLOT_BYTES);
  if (priority > 99) die("--realtime-priority must be 0..99");
  if (burst_bytes > (1u << 30)) die("--burst-bytes must be at most 1 GiB"); // keeps bytes * 8e9 in 64 bits
  if (up.delay_ns > 60 * NS_PER_S || down.delay_ns > 60 * NS_PER_S) die("a delay above 60 s is not a WAN");
  // Each direction draws from its own stream, so one direction's traffic cannot shift the other's drops.
  up.rng = seed;
  down.rng = seed ^ 0xD1B54A32D192ED03ull;

  // End with the parent even if it dies without closing our stdin (SIGKILL of a parent whose
  // pipe another process inherited): the kernel sends us SIGTERM.
  prctl(PR_SET_PDEATHSIG, SIGTERM, 0UL, 0UL, 0UL);
  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR1);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) die("sigprocmask: %s", strerror(errno));
  int sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sig_fd < 0) die("signalfd: %s", strerror(errno));

  int client_fd = -1, server_fd = -1;
  unsigned listening = 0;
  if (tun_mode) {
    int home_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home_ns < 0) die("open /proc/thread-self/ns/net: %s", strerror(errno));
    client_fd = open_tun(client_ns, client_tun, home_ns);
    server_fd = open_tun(server_ns, server_tun, home_ns);
    close(home_ns);
  } else {
    listening = open_relay(relay_protocol, relay_port, relay_target_text);
  }
  setup_direction(&up, client_fd, server_fd, (uint32_t)queue_packets, queue_bytes, burst_bytes);
  setup_direction(&down, server_fd, client_fd, (uint32_t)queue_packets, queue_bytes, burst_bytes);
  go_realtime(priority); // after the queues are allocated, so mlockall locks them too

  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) die("epoll_create1: %s", strerror(errno));
  relay_ep = ep;
  struct {
    int fd;
    uint32_t tag;
  } watched[] = {{tun_mode ? client_fd : listen_fd, tun_mode ? TAG_UP_TUN : TAG_LISTEN},
                 {tun_mode ? server_fd : -1, TAG_DOWN_TUN},
                 {up.timer_fd, TAG_UP_TIMER},
                 {down.timer_fd, TAG_DOWN_TIMER},
                 {sig_fd, TAG_SIGNAL},
                 {STDIN_FILENO, TAG_STDIN}};
  int watch_stdin = 1;
  for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++) {
    uint32_t tag = watched[i].tag;
    if (watched[i].fd < 0) continue;
    struct epoll_event ev = {.events = EPOLLIN | (tag == TAG_UP_TIMER || tag == TAG_DOWN_TIMER ? EPOLLET : 0u), .data.u64 = tagged(tag, 0)};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, watched[i].fd, &ev) == 0) continue;
    // stdin may be /dev/null or a file (not pollable) or closed: then only signals end us.
    if (tag == TAG_STDIN && (errno == EPERM || errno == EBADF)) {
      watch_stdin = 0;
      continue;
    }
    die("epoll_ctl: %s", strerror(errno));
  }

  started_ns = now_ns();
  struct out o = {.len = 0};
  if (tun_mode)
    put(&o, "{\"ready\":true,\"pid\":%d,\"clientTun\":\"%s\",\"serverTun\":\"%s\",", (int)getpid(), client_tun, server_tun);
  else
    put(&o, "{\"ready\":true,\"pid\":%d,\"relay\":\"%s\",\"port\":%u,", (int)getpid(), relay_protocol, listening);
  put(&o, "\"upDelayUs\":%llu,\"downDelayUs\":%llu,", (unsigned long long)(up.delay_ns / 1000), (unsigned long long)(down.delay_ns / 1000));
  put(&o, "\"upLoss\":%g,\"downLoss\":%g,\"seed\":%llu,\"upRateBps\":%llu,\"downRateBps\":%llu,\"burstBytes\":%llu,", up.loss, down.loss,
      (unsigned long long)seed, (unsigned long long)up.rate_bps, (unsigned long long)down.rate_bps, (unsigned long long)burst_bytes);
  put(&o, "\"queuePackets\":%llu,\"queueBytes\":%llu,\"watchStdin\":%s,\"sched\":\"%s\",\"mlock\":%s}", (unsigned long long)queue_packets,
      (unsigned long long)queue_bytes, watch_stdin ? "true" : "false", sched_text, mlock_text);
  emit(&o);

  uint64_t swept_ns = started_ns;
  for (int running = 1; running;) {
    struct epoll_event events[64];
    // A relay of UDP looks for idle client addresses about once a second.
    int n = epoll_wait(ep, events, 64, relay == RELAY_UDP ? 1000 : -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait: %s", strerror(errno));
    }
    for (int i = 0; i < n; i++) {
      int32_t peer = (int32_t)(events[i].data.u64 & 0xffffffffu);
      switch ((uint32_t)(events[i].data.u64 >> 32)) {
        case TAG_UP_TUN: read_side(&up); break;
        case TAG_DOWN_TUN: read_side(&down); break;
        case TAG_LISTEN:
          if (relay == RELAY_TCP)
            accept_tcp();
          else
            read_udp_clients(&up);
          break;
        case TAG_CLIENT:
        case TAG_TARGET: {
          struct peer *c = &peers[peer];
          if (!c->used) break;
          if (relay == RELAY_UDP) {
            read_udp_target(&down, peer);
            break;
          }
          int s = (events[i].data.u64 >> 32) == TAG_CLIENT ? CLIENT : TARGET;
          uint32_t ev = events[i].events;
          if ((ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && c->out[s].len > c->out[s].off && flush_side(peer, s) < 0) break;
          if (c->used && (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) && !c->read_ended[s] && !c->paused[s] && !c->queue_wait[s]) read_tcp(peer, s);
          break;
        }
        case TAG_UP_TIMER: up.armed_ns = 0; break; // fired: release() below does the work
        case TAG_DOWN_TIMER: down.armed_ns = 0; break;
        case TAG_SIGNAL: {
          struct signalfd_siginfo si;
          while (read(sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
            if (si.ssi_signo == SIGUSR1)
              print_stats("signal");
            else
              running = 0;
          }
          break;
        }
        case TAG_STDIN: {
          char buf[256];
          ssize_t r = read(STDIN_FILENO, buf, sizeof buf);
          if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) running = 0;
          break;
        }
      }
    }
    // Whatever woke us, release what is due in both directions and aim each timer at its head.
    release(&up);
    release(&down);
    if (relay == RELAY_TCP) {
      wake_queue_waiters(0);
      wake_queue_waiters(1);
    }
    arm(&up);
    arm(&down);
    if (relay == RELAY_UDP && now_ns() - swept_ns > NS_PER_S) {
      forget_idle_udp_peers();
      swept_ns = now_ns();
    }
  }
  print_stats("exit");
  return 0;
}
