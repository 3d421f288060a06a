// Batched UDP for Node.js: one non-blocking socket per object, datagrams received with recvmmsg
// into a caller-owned buffer and sent with sendmmsg from one, one JavaScript call per batch in
// each direction. UDP GSO (UDP_SEGMENT) packs runs of equal-size datagrams to one peer into one
// send; UDP GRO lets the kernel hand over such runs in one receive. The socket is watched with
// uv_poll on Node's own event loop: no threads, no busy polling.
//
// Memory is owned by JavaScript (ArrayBuffers given once at creation); this file keeps pointers
// to them and strong references so they outlive the socket. Per-datagram errors (EAGAIN, ENOBUFS,
// EMSGSIZE, ECONNREFUSED from ICMP) are counted and reported through the error callback, never
// thrown. Layout of one metadata entry (META_INTS int32 values):
//   [0] byte offset in the buffer  [1] length  [2] address family (4, 6; 0 = the connected peer)
//   [3] port  [4..7] address: IPv4 in [4] (host byte order), IPv6 as four host-order words
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "napi-util.h"
#include "sockaddr.h"
#include "groups.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define META_INTS 8
/** Kernel limit on segments of one GSO send (UDP_MAX_SEGMENTS) and of one GRO receive. */
#define MAX_SEGMENTS 64
/** Largest UDP payload of one GSO send (IPv4's 65,507 minus headroom for IPv6 headers). */
#define GSO_MAX_BYTES 65000
/** Messages per sendmmsg call (UIO_MAXIOV). */
#define SEND_CHUNK 1024
/** recvmmsg rounds per readiness event before returning to the event loop. */
#define MAX_READ_ROUNDS 8
/** Datagrams kept while the kernel's send buffer is full (EAGAIN); beyond it they are dropped. */
#define PENDING_MAX 8192
#define MAX_DATAGRAM 65535

enum stat_index {
  ST_RECV_CALLS, ST_DATAGRAMS_IN, ST_BYTES_IN, ST_GRO_MERGED, ST_TRUNCATED,
  ST_SEND_CALLS, ST_DATAGRAMS_OUT, ST_BYTES_OUT, ST_GSO_SENDS,
  ST_EAGAIN, ST_QUEUED, ST_QUEUE_DROPPED, ST_SEND_ERRORS, ST_RECV_ERRORS, ST_GSO_FALLBACKS,
  ST_COUNT
};
static const char* const stat_names[ST_COUNT] = {
  "recvCalls", "datagramsIn", "bytesIn", "groMerged", "truncated",
  "sendCalls", "datagramsOut", "bytesOut", "gsoSends",
  "eagain", "queued", "queueDropped", "sendErrors", "recvErrors", "gsoFallbacks",
};

typedef struct {
  uint8_t* data;
  uint32_t len;
  struct sockaddr_storage to;
  socklen_t tolen;
} pending_dgram;

typedef struct udp_socket {
  napi_env env;
  uv_poll_t poll;
  int fd;
  int family;
  int connected;
  int gso;
  int gro;
  int poll_events;
  int closed;
  int referenced;
  /** The JavaScript wrapper and the libuv handle: the struct is freed when both let go. */
  int holders;
  double stats[ST_COUNT];
  napi_ref refs[6];  // rx buffer, rx meta, tx buffer, tx meta, onDatagrams, onError
  napi_async_context async;
  uint8_t* rx;
  size_t rx_len;
  uint32_t rx_slots;
  uint32_t rx_slot_bytes;
  int32_t* rx_meta;
  uint32_t rx_meta_cap;
  uint8_t* tx;
  size_t tx_len;
  int32_t* tx_meta;
  uint32_t tx_meta_cap;
  struct mmsghdr* rmsgs;
  struct iovec* riov;
  struct sockaddr_storage* rnames;
  char* rctrl;
  struct mmsghdr* smsgs;
  struct iovec* siov;
  struct sockaddr_storage* snames;
  char* sctrl;
  uint32_t* sgroup;  // datagrams in each message of the current send
  pending_dgram* pending;
  uint32_t pend_head;
  uint32_t pend_count;
} udp_socket;

#define RX_CTRL_BYTES CMSG_SPACE(sizeof(int))
#define TX_CTRL_BYTES CMSG_SPACE(sizeof(uint16_t))
enum { REF_RX, REF_RX_META, REF_TX, REF_TX_META, REF_ON_DATAGRAMS, REF_ON_ERROR };

// --- small helpers -------------------------------------------------------------------------------

#define CHECK(env, call)                                      \
  do {                                                        \
    if ((call) != napi_ok) {                                  \
      napi_throw_error((env), NULL, "udp: N-API call failed"); \
      return NULL;                                            \
    }                                                         \
  } while (0)

static int get_u32(napi_env env, napi_value obj, const char* name, uint32_t dflt, uint32_t* out) {
  napi_value v;
  *out = dflt;
  if (!get_prop(env, obj, name, &v)) return 1;
  return napi_get_value_uint32(env, v, out) == napi_ok;
}

static int get_bool(napi_env env, napi_value obj, const char* name, int dflt) {
  napi_value v;
  bool b = dflt != 0;
  if (!get_prop(env, obj, name, &v)) return dflt;
  napi_get_value_bool(env, v, &b);
  return b ? 1 : 0;
}

static int get_string(napi_env env, napi_value obj, const char* name, char* buf, size_t cap) {
  napi_value v;
  size_t n = 0;
  if (!get_prop(env, obj, name, &v)) return 0;
  if (napi_get_value_string_utf8(env, v, buf, cap, &n) != napi_ok) return 0;
  return 1;
}

static void meta_from_sockaddr(const struct sockaddr_storage* ss, int32_t* m) {
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in* a = (const struct sockaddr_in*)ss;
    m[2] = 4;
    m[3] = ntohs(a->sin_port);
    m[4] = (int32_t)ntohl(a->sin_addr.s_addr);
    m[5] = m[6] = m[7] = 0;
  } else {
    const struct sockaddr_in6* a = (const struct sockaddr_in6*)ss;
    uint32_t w[4];
    memcpy(w, &a->sin6_addr, 16);
    m[2] = 6;
    m[3] = ntohs(a->sin6_port);
    for (int i = 0; i < 4; i++) m[4 + i] = (int32_t)ntohl(w[i]);
  }
}

/** The destination of a metadata entry, for an unconnected socket of `family`. */
static socklen_t sockaddr_from_meta(int family, const int32_t* m, struct sockaddr_storage* ss) {
  memset(ss, 0, sizeof *ss);
  if (family == AF_INET) {
    struct sockaddr_in* a = (struct sockaddr_in*)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)m[3]);
    a->sin_addr.s_addr = htonl((uint32_t)m[4]);
    return sizeof *a;
  }
  struct sockaddr_in6* a = (struct sockaddr_in6*)ss;
  a->sin6_family = AF_INET6;
  a->sin6_port = htons((uint16_t)m[3]);
  if (m[2] == 4) {
    uint32_t v4 = htonl((uint32_t)m[4]);
    a->sin6_addr.s6_addr[10] = 0xff;
    a->sin6_addr.s6_addr[11] = 0xff;
    memcpy(&a->sin6_addr.s6_addr[12], &v4, 4);
  } else {
    uint32_t w[4];
    for (int i = 0; i < 4; i++) w[i] = htonl((uint32_t)m[4 + i]);
    memcpy(&a->sin6_addr, w, 16);
  }
  return sizeof *a;
}

static int same_dest(const int32_t* a, const int32_t* b) {
  return a[2] == b[2] && a[3] == b[3] && a[4] == b[4] && a[5] == b[5] && a[6] == b[6] && a[7] == b[7];
}

// --- calling JavaScript --------------------------------------------------------------------------

static void call_js(udp_socket* s, int ref, int argc, napi_value* argv) {
  napi_env env = s->env;
  napi_value fn, recv, result;
  if (napi_get_reference_value(env, s->refs[ref], &fn) != napi_ok || fn == NULL) return;
  napi_get_global(env, &recv);  // napi_make_callback needs an object as receiver
  napi_status st = napi_make_callback(env, s->async, recv, fn, (size_t)argc, argv, &result);
  if (st == napi_pending_exception) {
    napi_value exc;
    napi_get_and_clear_last_exception(env, &exc);
    napi_fatal_exception(env, exc);
  }
}

/** Tells JavaScript about an error of a socket call (`errno`, the syscall's name). */
static void report_error(udp_socket* s, int err, const char* syscall) {
  napi_value argv[2];
  napi_create_int32(s->env, -err, &argv[0]);
  napi_create_string_utf8(s->env, syscall, NAPI_AUTO_LENGTH, &argv[1]);
  call_js(s, REF_ON_ERROR, 2, argv);
}

// --- polling -------------------------------------------------------------------------------------

static void on_poll(uv_poll_t* h, int status, int events);

static void set_events(udp_socket* s, int events) {
  if (s->closed || events == s->poll_events) return;
  s->poll_events = events;
  uv_poll_start(&s->poll, events, on_poll);
}

// --- receiving -----------------------------------------------------------------------------------

static void prepare_rx(udp_socket* s) {
  for (uint32_t i = 0; i < s->rx_slots; i++) {
    struct msghdr* h = &s->rmsgs[i].msg_hdr;
    s->riov[i].iov_base = s->rx + (size_t)i * s->rx_slot_bytes;
    s->riov[i].iov_len = s->rx_slot_bytes;
    h->msg_name = &s->rnames[i];
    h->msg_namelen = sizeof(struct sockaddr_storage);
    h->msg_iov = &s->riov[i];
    h->msg_iovlen = 1;
    h->msg_control = s->gro ? s->rctrl + (size_t)i * RX_CTRL_BYTES : NULL;
    h->msg_controllen = s->gro ? RX_CTRL_BYTES : 0;
    h->msg_flags = 0;
    s->rmsgs[i].msg_len = 0;
  }
}

/** Describes the `n` received messages in rx_meta (GRO runs split into their datagrams). */
static uint32_t describe_rx(udp_socket* s, int n) {
  uint32_t e = 0;
  for (int i = 0; i < n; i++) {
    struct msghdr* h = &s->rmsgs[i].msg_hdr;
    uint32_t len = s->rmsgs[i].msg_len;
    if (h->msg_flags & MSG_TRUNC) {
      s->stats[ST_TRUNCATED]++;
      continue;
    }
    uint32_t seg = len;
    if (s->gro) {
      for (struct cmsghdr* c = CMSG_FIRSTHDR(h); c != NULL; c = CMSG_NXTHDR(h, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
          int v;
          memcpy(&v, CMSG_DATA(c), sizeof v);
          if (v > 0) seg = (uint32_t)v;
        }
      }
    }
    if (seg == 0) seg = 1;  // an empty datagram is still one datagram
    uint32_t base = i * s->rx_slot_bytes;
    uint32_t off = 0;
    int parts = 0;
    do {
      if (e >= s->rx_meta_cap) return e;  // cannot happen: capacity >= slots * MAX_SEGMENTS
      int32_t* m = s->rx_meta + (size_t)e * META_INTS;
      uint32_t part = len - off < seg ? len - off : seg;
      m[0] = (int32_t)(base + off);
      m[1] = (int32_t)part;
      meta_from_sockaddr(&s->rnames[i], m);
      e++;
      parts++;
      off += part;
    } while (off < len);
    if (parts > 1) s->stats[ST_GRO_MERGED] += parts - 1;
    s->stats[ST_BYTES_IN] += len;
  }
  s->stats[ST_DATAGRAMS_IN] += e;
  return e;
}

static void read_ready(udp_socket* s) {
  napi_handle_scope scope;
  napi_open_handle_scope(s->env, &scope);
  for (int round = 0; round < MAX_READ_ROUNDS && !s->closed; round++) {
    prepare_rx(s);
    int n = recvmmsg(s->fd, s->rmsgs, s->rx_slots, MSG_DONTWAIT, NULL);
    s->stats[ST_RECV_CALLS]++;
    if (n < 0) {
      int err = errno;
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) break;
      s->stats[ST_RECV_ERRORS]++;
      report_error(s, err, "recvmmsg");
      // An ICMP error (ECONNREFUSED ...) is consumed by this call: datagrams may follow it.
      if (err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH) continue;
      break;
    }
    uint32_t entries = describe_rx(s, n);
    if (entries > 0) {
      napi_value argv[1];
      napi_create_uint32(s->env, entries, &argv[0]);
      call_js(s, REF_ON_DATAGRAMS, 1, argv);
    }
    if ((uint32_t)n < s->rx_slots) break;
  }
  napi_close_handle_scope(s->env, scope);
}

// --- sending -------------------------------------------------------------------------------------

static int queue_datagram(udp_socket* s, const uint8_t* data, uint32_t len, const struct msghdr* h) {
  if (s->pend_count >= PENDING_MAX) {
    s->stats[ST_QUEUE_DROPPED]++;
    return 0;
  }
  pending_dgram* p = &s->pending[(s->pend_head + s->pend_count) % PENDING_MAX];
  p->data = malloc(len > 0 ? len : 1);
  if (p->data == NULL) {
    s->stats[ST_QUEUE_DROPPED]++;
    return 0;
  }
  memcpy(p->data, data, len);
  p->len = len;
  p->tolen = h->msg_namelen;
  if (h->msg_name != NULL) memcpy(&p->to, h->msg_name, h->msg_namelen);
  s->pend_count++;
  s->stats[ST_QUEUED]++;
  return 1;
}

/** Copies the datagrams of messages [k, m) into the pending queue (the kernel buffer is full). */
static void queue_messages(udp_socket* s, uint32_t k, uint32_t m) {
  for (uint32_t i = k; i < m; i++) {
    struct msghdr* h = &s->smsgs[i].msg_hdr;
    for (size_t v = 0; v < h->msg_iovlen; v++) {
      queue_datagram(s, h->msg_iov[v].iov_base, (uint32_t)h->msg_iov[v].iov_len, h);
    }
  }
  if (s->pend_count > 0) set_events(s, UV_READABLE | UV_WRITABLE);
}

static void count_sent(udp_socket* s, uint32_t first, int r) {
  for (int i = 0; i < r; i++) {
    struct msghdr* h = &s->smsgs[first + i].msg_hdr;
    s->stats[ST_DATAGRAMS_OUT] += h->msg_iovlen;
    if (h->msg_iovlen > 1) s->stats[ST_GSO_SENDS]++;
    for (size_t v = 0; v < h->msg_iovlen; v++) s->stats[ST_BYTES_OUT] += h->msg_iov[v].iov_len;
  }
}

/** Sends one GSO message's datagrams one by one (the path refused GSO). */
static void send_unsegmented(udp_socket* s, struct msghdr* h) {
  for (size_t v = 0; v < h->msg_iovlen; v++) {
    struct msghdr one = *h;
    one.msg_iov = &h->msg_iov[v];
    one.msg_iovlen = 1;
    one.msg_control = NULL;
    one.msg_controllen = 0;
    ssize_t r;
    do r = sendmsg(s->fd, &one, 0); while (r < 0 && errno == EINTR);
    s->stats[ST_SEND_CALLS]++;
    if (r >= 0) {
      s->stats[ST_DATAGRAMS_OUT]++;
      s->stats[ST_BYTES_OUT] += one.msg_iov[0].iov_len;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      s->stats[ST_EAGAIN]++;
      queue_datagram(s, one.msg_iov[0].iov_base, (uint32_t)one.msg_iov[0].iov_len, &one);
      set_events(s, UV_READABLE | UV_WRITABLE);
    } else {
      s->stats[ST_SEND_ERRORS]++;
    }
  }
}

/** sendmmsg over messages [0, m); what the kernel cannot take now is queued. Returns the last errno seen (0 if none). */
static int send_messages(udp_socket* s, uint32_t m) {
  uint32_t k = 0;
  int last_err = 0;
  int refused_retry = 0;
  while (k < m) {
    if (s->pend_count > 0) {
      queue_messages(s, k, m);
      return last_err;
    }
    uint32_t chunk = m - k < SEND_CHUNK ? m - k : SEND_CHUNK;
    int r = sendmmsg(s->fd, s->smsgs + k, chunk, 0);
    s->stats[ST_SEND_CALLS]++;
    if (r > 0) {
      count_sent(s, k, r);
      k += (uint32_t)r;
      refused_retry = 0;
      continue;
    }
    int err = r < 0 ? errno : EIO;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      s->stats[ST_EAGAIN]++;
      queue_messages(s, k, m);
      return last_err;
    }
    struct msghdr* h = &s->smsgs[k].msg_hdr;
    if ((err == EIO || err == EINVAL) && h->msg_controllen > 0) {
      // The route cannot segment (no checksum offload, or an old kernel): no GSO from now on.
      s->gso = 0;
      s->stats[ST_GSO_FALLBACKS]++;
      send_unsegmented(s, h);
      k++;
      continue;
    }
    if (err == ECONNREFUSED && !refused_retry) {
      // A pending ICMP error of a connected socket: reported by this call, the datagram not sent.
      refused_retry = 1;
      last_err = err;
      continue;
    }
    // EMSGSIZE, ENOBUFS, unreachable ...: this message is lost (QUIC recovers), count it.
    s->stats[ST_SEND_ERRORS] += h->msg_iovlen;
    last_err = err;
    refused_retry = 0;
    k++;
  }
  return last_err;
}

static void flush_pending(udp_socket* s) {
  while (s->pend_count > 0) {
    struct mmsghdr msgs[64];
    struct iovec iov[64];
    uint32_t n = s->pend_count < 64 ? s->pend_count : 64;
    for (uint32_t i = 0; i < n; i++) {
      pending_dgram* p = &s->pending[(s->pend_head + i) % PENDING_MAX];
      iov[i].iov_base = p->data;
      iov[i].iov_len = p->len;
      memset(&msgs[i], 0, sizeof msgs[i]);
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = p->tolen > 0 ? &p->to : NULL;
      msgs[i].msg_hdr.msg_namelen = p->tolen;
    }
    int r = sendmmsg(s->fd, msgs, n, 0);
    s->stats[ST_SEND_CALLS]++;
    uint32_t done;
    if (r > 0) {
      done = (uint32_t)r;
      for (uint32_t i = 0; i < done; i++) {
        s->stats[ST_DATAGRAMS_OUT]++;
        s->stats[ST_BYTES_OUT] += iov[i].iov_len;
      }
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      s->stats[ST_EAGAIN]++;
      return;  // still waiting for room
    } else {
      s->stats[ST_SEND_ERRORS]++;
      done = 1;  // this one is lost
    }
    for (uint32_t i = 0; i < done; i++) {
      pending_dgram* p = &s->pending[s->pend_head];
      free(p->data);
      p->data = NULL;
      s->pend_head = (s->pend_head + 1) % PENDING_MAX;
      s->pend_count--;
    }
  }
  set_events(s, UV_READABLE);
}

static void on_poll(uv_poll_t* h, int status, int events) {
  udp_socket* s = h->data;
  if (s->closed) return;
  if (status < 0) {
    // libuv turns EPOLLERR into UV_EBADF and stops the handle. On a UDP socket that flag means
    // a pending socket error (an ICMP port unreachable for a connected socket): take it, report
    // it and keep polling. Only a descriptor without such an error is really broken.
    int err = 0;
    socklen_t len = sizeof err;
    int pending = status == UV_EBADF && getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0;
    napi_handle_scope scope;
    napi_open_handle_scope(s->env, &scope);
    report_error(s, pending ? err : -status, pending ? "recvmmsg" : "poll");
    napi_close_handle_scope(s->env, scope);
    if (pending && !s->closed) {
      int want = s->poll_events;
      s->poll_events = 0;  // libuv stopped the handle
      set_events(s, want);
    }
    return;
  }
  if (events & UV_WRITABLE) flush_pending(s);
  if (events & UV_READABLE) read_ready(s);
}

// --- lifetime ------------------------------------------------------------------------------------

static void free_socket(udp_socket* s) {
  for (uint32_t i = 0; i < s->pend_count; i++) free(s->pending[(s->pend_head + i) % PENDING_MAX].data);
  free(s->pending);
  free(s->rmsgs);
  free(s->riov);
  free(s->rnames);
  free(s->rctrl);
  free(s->smsgs);
  free(s->siov);
  free(s->snames);
  free(s->sctrl);
  free(s->sgroup);
  free(s);
}

static void release(udp_socket* s) {
  if (--s->holders == 0) free_socket(s);
}

static void on_handle_closed(uv_handle_t* h) {
  release((udp_socket*)h->data);
}

/** Stops polling and closes the descriptor now; the struct is freed once libuv let go of the handle. */
static void close_socket(udp_socket* s, int from_finalizer) {
  if (s->closed) return;
  s->closed = 1;
  uv_poll_stop(&s->poll);  // removes the fd from epoll, so closing it now is safe
  close(s->fd);
  s->fd = -1;
  for (int i = 0; i < 6; i++) {
    if (s->refs[i] != NULL) napi_delete_reference(s->env, s->refs[i]);
    s->refs[i] = NULL;
  }
  // napi_async_destroy may run JavaScript (async hooks): not from inside the garbage collector.
  if (!from_finalizer && s->async != NULL) napi_async_destroy(s->env, s->async);
  s->async = NULL;
  uv_close((uv_handle_t*)&s->poll, on_handle_closed);
}

static void finalize(napi_env env, void* data, void* hint) {
  (void)env;
  (void)hint;
  udp_socket* s = data;
  close_socket(s, 1);
  release(s);
}

// --- JavaScript API ------------------------------------------------------------------------------

static int take_buffer(napi_env env, napi_value opts, const char* name, int ref_index, udp_socket* s, void** data, size_t* len) {
  napi_value v;
  if (!get_prop(env, opts, name, &v)) return 0;
  bool is_ab = false, is_ta = false;
  napi_is_arraybuffer(env, v, &is_ab);
  napi_is_typedarray(env, v, &is_ta);
  if (is_ab) {
    if (napi_get_arraybuffer_info(env, v, data, len) != napi_ok) return 0;
  } else if (is_ta) {
    napi_typedarray_type t;
    size_t n, off;
    napi_value ab;
    if (napi_get_typedarray_info(env, v, &t, &n, data, &ab, &off) != napi_ok) return 0;
    if (t != napi_int32_array) return 0;
    *len = n * sizeof(int32_t);
  } else {
    return 0;
  }
  return napi_create_reference(env, v, 1, &s->refs[ref_index]) == napi_ok;
}

static int take_function(napi_env env, napi_value opts, const char* name, int ref_index, udp_socket* s) {
  napi_value v;
  napi_valuetype t;
  if (!get_prop(env, opts, name, &v)) return 0;
  napi_typeof(env, v, &t);
  if (t != napi_function) return 0;
  return napi_create_reference(env, v, 1, &s->refs[ref_index]) == napi_ok;
}

static void set_buffer_size(int fd, int force_opt, int opt, int bytes) {
  if (bytes <= 0) return;
  if (setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof bytes) == 0) return;  // root: beyond rmem_max
  setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
}

static udp_socket* unwrap(napi_env env, napi_callback_info info, size_t* argc, napi_value* argv) {
  napi_value self;
  void* data = NULL;
  if (napi_get_cb_info(env, info, argc, argv, &self, NULL) != napi_ok) return NULL;
  if (napi_unwrap(env, self, &data) != napi_ok || data == NULL) {
    napi_throw_error(env, NULL, "udp: not a socket");
    return NULL;
  }
  return data;
}

/**
 * new UdpSocket({ family: 4|6, address, port, connectAddress?, connectPort?, recvBufferBytes,
 *   sendBufferBytes, gso, gro, rxBuffer: ArrayBuffer, rxSlots, rxSlotBytes, rxMeta: Int32Array,
 *   txBuffer: ArrayBuffer, txMeta: Int32Array, onDatagrams(count), onError(errno, syscall) })
 */
static napi_value construct(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], self;
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, &self, NULL));
  if (argc < 1) {
    napi_throw_type_error(env, NULL, "udp: options expected");
    return NULL;
  }
  napi_value o = argv[0];
  udp_socket* s = calloc(1, sizeof *s);
  if (s == NULL) {
    napi_throw_error(env, NULL, "udp: out of memory");
    return NULL;
  }
  s->env = env;
  s->fd = -1;
  s->referenced = 1;
  uint32_t fam = 4, port = 0, cport = 0, rcvbuf = 0, sndbuf = 0;
  char host[INET6_ADDRSTRLEN + 1] = "", chost[INET6_ADDRSTRLEN + 1] = "";
  int ok = get_u32(env, o, "family", 4, &fam) && get_u32(env, o, "port", 0, &port) &&
           get_string(env, o, "address", host, sizeof host) && get_u32(env, o, "recvBufferBytes", 0, &rcvbuf) &&
           get_u32(env, o, "sendBufferBytes", 0, &sndbuf) && get_u32(env, o, "rxSlots", 0, &s->rx_slots) &&
           get_u32(env, o, "rxSlotBytes", 0, &s->rx_slot_bytes);
  // `fd`: adopt a dup() of a socket made elsewhere (a reuseport group member): no socket, no bind.
  uint32_t adopt = UINT32_MAX;
  ok = ok && get_u32(env, o, "fd", UINT32_MAX, &adopt);
  int want_connect = get_string(env, o, "connectAddress", chost, sizeof chost);
  if (want_connect) ok = ok && get_u32(env, o, "connectPort", 0, &cport);
  void *rx = NULL, *rxm = NULL, *tx = NULL, *txm = NULL;
  size_t rx_len = 0, rxm_len = 0, tx_len = 0, txm_len = 0;
  ok = ok && (fam == 4 || fam == 6) && port <= 65535 && cport <= 65535 && s->rx_slots > 0 && s->rx_slots <= 1024 &&
       s->rx_slot_bytes >= 1500 && s->rx_slot_bytes <= MAX_DATAGRAM + 1 &&
       take_buffer(env, o, "rxBuffer", REF_RX, s, &rx, &rx_len) &&
       take_buffer(env, o, "rxMeta", REF_RX_META, s, &rxm, &rxm_len) &&
       take_buffer(env, o, "txBuffer", REF_TX, s, &tx, &tx_len) &&
       take_buffer(env, o, "txMeta", REF_TX_META, s, &txm, &txm_len) &&
       take_function(env, o, "onDatagrams", REF_ON_DATAGRAMS, s) && take_function(env, o, "onError", REF_ON_ERROR, s);
  if (ok) {
    s->rx = rx;
    s->rx_len = rx_len;
    s->rx_meta = rxm;
    s->rx_meta_cap = (uint32_t)(rxm_len / (META_INTS * sizeof(int32_t)));
    s->tx = tx;
    s->tx_len = tx_len;
    s->tx_meta = txm;
    s->tx_meta_cap = (uint32_t)(txm_len / (META_INTS * sizeof(int32_t)));
    ok = (size_t)s->rx_slots * s->rx_slot_bytes <= rx_len && s->tx_meta_cap > 0;
  }
  s->family = fam == 6 ? AF_INET6 : AF_INET;
  int want_gso = get_bool(env, o, "gso", 1), want_gro = get_bool(env, o, "gro", 1);
  if (!ok) {
    for (int i = 0; i < 6; i++) if (s->refs[i] != NULL) napi_delete_reference(env, s->refs[i]);
    free(s);
    napi_throw_type_error(env, NULL, "udp: invalid options (family, address, port, buffers, rxSlots/rxSlotBytes, callbacks)");
    return NULL;
  }

  struct sockaddr_storage bind_addr, peer;
  socklen_t bind_len = 0, peer_len = 0;
  const char* err_what = NULL;
  int err = 0;
  int fd = adopt != UINT32_MAX ? fcntl((int)adopt, F_DUPFD_CLOEXEC, 0) : socket(s->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = errno;
    err_what = adopt != UINT32_MAX ? "dup" : "socket";
  } else if (adopt != UINT32_MAX) {
    struct sockaddr_storage own;
    socklen_t own_len = sizeof own;
    int type = 0;
    socklen_t type_len = sizeof type;
    if (getsockname(fd, (struct sockaddr*)&own, &own_len) != 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 ||
        type != SOCK_DGRAM || (own.ss_family != AF_INET && own.ss_family != AF_INET6)) {
      err = EINVAL;
      err_what = "fd is not a bound UDP socket";
    } else {
      s->family = own.ss_family;
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
  }
  if (err_what == NULL && adopt != UINT32_MAX) {
    s->fd = fd;
    set_buffer_size(fd, SO_RCVBUFFORCE, SO_RCVBUF, (int)rcvbuf);
    set_buffer_size(fd, SO_SNDBUFFORCE, SO_SNDBUF, (int)sndbuf);
  } else if (err_what == NULL) {
    s->fd = fd;
    if (s->family == AF_INET6) {
      int off = 0;  // dual stack, as node:dgram's udp6 sockets
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    }
    set_buffer_size(fd, SO_RCVBUFFORCE, SO_RCVBUF, (int)rcvbuf);
    set_buffer_size(fd, SO_SNDBUFFORCE, SO_SNDBUF, (int)sndbuf);
    if (!make_sockaddr(s->family, host, port, &bind_addr, &bind_len)) {
      err = EINVAL;
      err_what = "bind address";
    } else if (bind(fd, (struct sockaddr*)&bind_addr, bind_len) != 0) {
      err = errno;
      err_what = "bind";
    }
  }
  if (err_what == NULL && want_connect) {
    if (!make_sockaddr(s->family, chost, cport, &peer, &peer_len)) {
      err = EINVAL;
      err_what = "connect address";
    } else if (connect(fd, (struct sockaddr*)&peer, peer_len) != 0) {
      err = errno;
      err_what = "connect";
    } else {
      s->connected = 1;
    }
  }
  if (err_what == NULL) {
    if (want_gso) {
      // Probe: the option is known to this kernel (>= 4.18). Segments are sized per send.
      int size = 1200;
      s->gso = setsockopt(fd, SOL_UDP, UDP_SEGMENT, &size, sizeof size) == 0;
      size = 0;
      if (s->gso) setsockopt(fd, SOL_UDP, UDP_SEGMENT, &size, sizeof size);
    }
    if (want_gro) {
      int on = 1;
      s->gro = setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof on) == 0;
    }
    if (s->gro && s->rx_slot_bytes < MAX_DATAGRAM) {
      int off = 0;  // a GRO run can be up to 64 KB: the slots are too small for it
      setsockopt(fd, SOL_UDP, UDP_GRO, &off, sizeof off);
      s->gro = 0;
    }
    if (s->rx_meta_cap < s->rx_slots * (s->gro ? MAX_SEGMENTS : 1)) {
      err = EINVAL;
      err_what = "rxMeta too small for rxSlots";
    }
  }
  if (err_what == NULL) {
    uint32_t ns = s->tx_meta_cap;
    s->rmsgs = calloc(s->rx_slots, sizeof *s->rmsgs);
    s->riov = calloc(s->rx_slots, sizeof *s->riov);
    s->rnames = calloc(s->rx_slots, sizeof *s->rnames);
    s->rctrl = calloc(s->rx_slots, RX_CTRL_BYTES);
    s->smsgs = calloc(ns, sizeof *s->smsgs);
    s->siov = calloc(ns, sizeof *s->siov);
    s->snames = calloc(ns, sizeof *s->snames);
    s->sctrl = calloc(ns, TX_CTRL_BYTES);
    s->sgroup = calloc(ns, sizeof *s->sgroup);
    s->pending = calloc(PENDING_MAX, sizeof *s->pending);
    if (!s->rmsgs || !s->riov || !s->rnames || !s->rctrl || !s->smsgs || !s->siov || !s->snames || !s->sctrl ||
        !s->sgroup || !s->pending) {
      err = ENOMEM;
      err_what = "allocating";
    }
  }
  uv_loop_t* loop = NULL;
  if (err_what == NULL && (napi_get_uv_event_loop(env, &loop) != napi_ok || uv_poll_init_socket(loop, &s->poll, fd) != 0)) {
    err = EINVAL;
    err_what = "uv_poll_init";
  }
  if (err_what != NULL) {
    if (fd >= 0) close(fd);
    for (int i = 0; i < 6; i++) if (s->refs[i] != NULL) napi_delete_reference(env, s->refs[i]);
    s->pend_count = 0;
    free_socket(s);
    return throw_errno(env, err_what, err);
  }
  s->poll.data = s;
  s->holders = 2;
  napi_value name;
  napi_create_string_utf8(env, "QuicpoolUdp", NAPI_AUTO_LENGTH, &name);
  napi_async_init(env, self, name, &s->async);
  if (napi_wrap(env, self, s, finalize, NULL, NULL) != napi_ok) {
    s->holders = 1;
    close_socket(s, 0);
    napi_throw_error(env, NULL, "udp: wrap failed");
    return NULL;
  }
  set_events(s, UV_READABLE);
  return self;
}

/** send(count): sends datagrams described by tx meta entries [0, count). Returns the last errno (negative) or 0. */
static napi_value js_send(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out;
  udp_socket* s = unwrap(env, info, &argc, argv);
  if (s == NULL) return NULL;
  uint32_t count = 0;
  if (argc < 1 || napi_get_value_uint32(env, argv[0], &count) != napi_ok || count > s->tx_meta_cap) {
    napi_throw_range_error(env, NULL, "udp: send(count) with 0 <= count <= txMeta entries");
    return NULL;
  }
  if (s->closed) {
    napi_throw_error(env, NULL, "udp: socket is closed");
    return NULL;
  }
  uint32_t m = 0, v = 0, i = 0;
  while (i < count) {
    const int32_t* e = s->tx_meta + (size_t)i * META_INTS;
    uint32_t off = (uint32_t)e[0], len = (uint32_t)e[1];
    if ((size_t)off + len > s->tx_len || len > MAX_DATAGRAM) {
      napi_throw_range_error(env, NULL, "udp: datagram outside txBuffer");
      return NULL;
    }
    struct msghdr* h = &s->smsgs[m].msg_hdr;
    memset(&s->smsgs[m], 0, sizeof s->smsgs[m]);
    h->msg_iov = &s->siov[v];
    s->siov[v].iov_base = s->tx + off;
    s->siov[v].iov_len = len;
    v++;
    uint32_t n = 1, total = len;
    if (s->gso && len > 0) {
      // A run to the same peer of equal sizes; the last one may be shorter (then it ends the run).
      while (i + n < count && n < MAX_SEGMENTS) {
        const int32_t* f = s->tx_meta + (size_t)(i + n) * META_INTS;
        uint32_t foff = (uint32_t)f[0], flen = (uint32_t)f[1];
        if (flen == 0 || flen > len || total + flen > GSO_MAX_BYTES || (size_t)foff + flen > s->tx_len) break;
        if (!s->connected && !same_dest(e, f)) break;
        s->siov[v].iov_base = s->tx + foff;
        s->siov[v].iov_len = flen;
        v++;
        n++;
        total += flen;
        if (flen < len) break;
      }
    }
    h->msg_iovlen = n;
    if (!s->connected) {
      h->msg_name = &s->snames[m];
      h->msg_namelen = sockaddr_from_meta(s->family, e, &s->snames[m]);
    }
    if (n > 1) {
      char* ctrl = s->sctrl + (size_t)m * TX_CTRL_BYTES;
      memset(ctrl, 0, TX_CTRL_BYTES);
      h->msg_control = ctrl;
      h->msg_controllen = TX_CTRL_BYTES;
      struct cmsghdr* c = CMSG_FIRSTHDR(h);
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      uint16_t seg = (uint16_t)len;
      memcpy(CMSG_DATA(c), &seg, sizeof seg);
    }
    s->sgroup[m] = n;
    m++;
    i += n;
  }
  int err = m > 0 ? send_messages(s, m) : 0;
  napi_create_int32(env, -err, &out);
  return out;
}

static napi_value js_close(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  udp_socket* s = unwrap(env, info, &argc, NULL);
  if (s == NULL) return NULL;
  close_socket(s, 0);
  return NULL;
}

static napi_value js_ref(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  udp_socket* s = unwrap(env, info, &argc, argv);
  if (s == NULL || s->closed) return NULL;
  bool on = true;
  if (argc > 0) napi_get_value_bool(env, argv[0], &on);
  if (on) uv_ref((uv_handle_t*)&s->poll);
  else uv_unref((uv_handle_t*)&s->poll);
  s->referenced = on;
  return NULL;
}

/** info(): { fd, family, address, port, gso, gro, connected, recvBufferBytes, sendBufferBytes, closed, pending } */
static napi_value js_info(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  udp_socket* s = unwrap(env, info, &argc, NULL);
  if (s == NULL) return NULL;
  napi_value o, v;
  napi_create_object(env, &o);
#define SET_INT(name, val) (napi_create_int32(env, (val), &v), napi_set_named_property(env, o, (name), v))
#define SET_BOOL(name, val) (napi_get_boolean(env, (val), &v), napi_set_named_property(env, o, (name), v))
  SET_INT("fd", s->fd);
  SET_INT("family", s->family == AF_INET6 ? 6 : 4);
  SET_BOOL("gso", s->gso);
  SET_BOOL("gro", s->gro);
  SET_BOOL("connected", s->connected);
  SET_BOOL("closed", s->closed);
  SET_INT("pending", (int32_t)s->pend_count);
  if (!s->closed) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char buf[INET6_ADDRSTRLEN];
    if (getsockname(s->fd, (struct sockaddr*)&ss, &len) == 0) {
      const void* addr = ss.ss_family == AF_INET ? (const void*)&((struct sockaddr_in*)&ss)->sin_addr
                                                 : (const void*)&((struct sockaddr_in6*)&ss)->sin6_addr;
      inet_ntop(ss.ss_family, addr, buf, sizeof buf);
      napi_create_string_utf8(env, buf, NAPI_AUTO_LENGTH, &v);
      napi_set_named_property(env, o, "address", v);
      SET_INT("port", ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in*)&ss)->sin_port)
                                              : ntohs(((struct sockaddr_in6*)&ss)->sin6_port));
    }
    int b = 0;
    socklen_t bl = sizeof b;
    if (getsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &b, &bl) == 0) SET_INT("recvBufferBytes", b);
    bl = sizeof b;
    if (getsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &b, &bl) == 0) SET_INT("sendBufferBytes", b);
  }
#undef SET_INT
#undef SET_BOOL
  return o;
}

static napi_value js_stats(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  udp_socket* s = unwrap(env, info, &argc, NULL);
  if (s == NULL) return NULL;
  napi_value o, v;
  napi_create_object(env, &o);
  for (int i = 0; i < ST_COUNT; i++) {
    napi_create_double(env, s->stats[i], &v);
    napi_set_named_property(env, o, stat_names[i], v);
  }
  return o;
}

/** formatAddress(family, a0, a1, a2, a3): the text form of a metadata address (new peers only). */
static napi_value js_format_address(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5], out;
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t w[5] = {0, 0, 0, 0, 0};
  for (size_t i = 0; i < argc && i < 5; i++) napi_get_value_int32(env, argv[i], &w[i]);
  char buf[INET6_ADDRSTRLEN];
  if (w[0] == 4) {
    uint32_t a = htonl((uint32_t)w[1]);
    inet_ntop(AF_INET, &a, buf, sizeof buf);
  } else {
    uint32_t a[4];
    for (int i = 0; i < 4; i++) a[i] = htonl((uint32_t)w[1 + i]);
    inet_ntop(AF_INET6, a, buf, sizeof buf);
  }
  CHECK(env, napi_create_string_utf8(env, buf, NAPI_AUTO_LENGTH, &out));
  return out;
}

/**
 * peerCredentials(fd): {pid, uid, gid} of the process at the other end of a connected unix
 * socket (SO_PEERCRED, as Postgres' peer authentication uses), or null when the fd has none.
 */
static napi_value js_peer_credentials(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out, v;
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t fd = -1;
  if (argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) {
    CHECK(env, napi_get_null(env, &out));
    return out;
  }
  struct sockaddr_storage local;
  socklen_t alen = sizeof local;
  if (getsockname(fd, (struct sockaddr *)&local, &alen) != 0 || local.ss_family != AF_UNIX) {
    CHECK(env, napi_get_null(env, &out)); // TCP and the rest: the kernel has no peer process
    return out;
  }
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) {
    CHECK(env, napi_get_null(env, &out));
    return out;
  }
  CHECK(env, napi_create_object(env, &out));
  CHECK(env, napi_create_int32(env, (int32_t)cred.pid, &v));
  CHECK(env, napi_set_named_property(env, out, "pid", v));
  CHECK(env, napi_create_uint32(env, (uint32_t)cred.uid, &v));
  CHECK(env, napi_set_named_property(env, out, "uid", v));
  CHECK(env, napi_create_uint32(env, (uint32_t)cred.gid, &v));
  CHECK(env, napi_set_named_property(env, out, "gid", v));
  return out;
}

/** parseAddress(text, out: Int32Array(5)): family and words of an IP literal; false when it is none. */
static napi_value js_parse_address(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], out;
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char text[INET6_ADDRSTRLEN + 1];
  size_t n = 0;
  napi_typedarray_type t;
  size_t len, off;
  void* data;
  napi_value ab;
  int ok = argc == 2 && napi_get_value_string_utf8(env, argv[0], text, sizeof text, &n) == napi_ok &&
           napi_get_typedarray_info(env, argv[1], &t, &len, &data, &ab, &off) == napi_ok && t == napi_int32_array && len >= 5;
  if (ok) {
    int32_t* w = data;
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, text, &v4) == 1) {
      w[0] = 4;
      w[1] = (int32_t)ntohl(v4.s_addr);
      w[2] = w[3] = w[4] = 0;
    } else if (inet_pton(AF_INET6, text, &v6) == 1) {
      uint32_t a[4];
      memcpy(a, &v6, 16);
      w[0] = 6;
      for (int i = 0; i < 4; i++) w[1 + i] = (int32_t)ntohl(a[i]);
    } else {
      ok = 0;
    }
  }
  CHECK(env, napi_get_boolean(env, ok, &out));
  return out;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor methods[] = {
    {"send", NULL, js_send, NULL, NULL, NULL, napi_default, NULL},
    {"close", NULL, js_close, NULL, NULL, NULL, napi_default, NULL},
    {"ref", NULL, js_ref, NULL, NULL, NULL, napi_default, NULL},
    {"info", NULL, js_info, NULL, NULL, NULL, napi_default, NULL},
    {"stats", NULL, js_stats, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_value cls, v;
  CHECK(env, napi_define_class(env, "UdpSocket", NAPI_AUTO_LENGTH, construct, NULL, 5, methods, &cls));
  CHECK(env, napi_set_named_property(env, exports, "UdpSocket", cls));
  CHECK(env, napi_create_function(env, "formatAddress", NAPI_AUTO_LENGTH, js_format_address, NULL, &v));
  CHECK(env, napi_set_named_property(env, exports, "formatAddress", v));
  CHECK(env, napi_create_function(env, "parseAddress", NAPI_AUTO_LENGTH, js_parse_address, NULL, &v));
  CHECK(env, napi_set_named_property(env, exports, "parseAddress", v));
  CHECK(env, napi_create_function(env, "peerCredentials", NAPI_AUTO_LENGTH, js_peer_credentials, NULL, &v));
  CHECK(env, napi_set_named_property(env, exports, "peerCredentials", v));
  if (!groups_init(env, exports)) {
    napi_throw_error(env, NULL, "udp: N-API call failed");
    return NULL;
  }
  CHECK(env, napi_create_int32(env, META_INTS, &v));
  CHECK(env, napi_set_named_property(env, exports, "META_INTS", v));
  CHECK(env, napi_create_int32(env, MAX_SEGMENTS, &v));
  CHECK(env, napi_set_named_property(env, exports, "MAX_SEGMENTS", v));
  return exports;
}

NAPI_MODULE_INIT() {
  return init(env, exports);
}
