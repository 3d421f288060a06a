// Socket groups for a server with one worker per core: N sockets bound to the same address and
// port with SO_REUSEPORT (UDP, or listening TCP), created in one call so their order in the
// kernel's reuseport group is the order of the returned descriptors. For UDP a classic BPF
// program (SO_ATTACH_REUSEPORT_CBPF) may be attached: its return value is the index of the socket
// that gets the datagram. Node 20 has no reusePort for net or dgram and no way to attach such a
// program, so the group is made here and each worker adopts a dup() of its descriptor: the
// creator keeps the originals open, so a worker that dies leaves its socket (and its place in the
// group, hence every index the program computes) where it was.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "groups.h"
#include "napi-util.h"
#include "sockaddr.h"

#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif

/** Sockets per group at most (a worker per core; the index is one byte of a connection id). */
#define MAX_GROUP 256
/** Instructions of a steering program at most (BPF_MAXINSNS is 4096; ours has 7). */
#define MAX_INSNS 64

static uint32_t u32(napi_env env, napi_value o, const char* name, uint32_t dflt) {
  napi_value v;
  uint32_t out = dflt;
  if (get_prop(env, o, name, &v)) napi_get_value_uint32(env, v, &out);
  return out;
}

static void set_buffer(int fd, int force_opt, int opt, int bytes) {
  if (bytes <= 0) return;
  if (setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof bytes) == 0) return;  // root: beyond rmem_max
  setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
}

static uint32_t bound_port(int fd) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getsockname(fd, (struct sockaddr*)&ss, &len) != 0) return 0;
  return ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in*)&ss)->sin_port) : ntohs(((struct sockaddr_in6*)&ss)->sin6_port);
}

/** One member of the group: 0 on success, else errno with `*what` naming the call. */
static int open_member(int udp, int family, const char* host, uint32_t port, uint32_t backlog, int rcvbuf, int sndbuf, int* out, const char** what) {
  int fd = socket(family, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return (*what = "socket", errno);
  int on = 1, off = 0;
  if (family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);  // dual stack, as Node's
  if (!udp) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // as Node's listening sockets
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0) {
    int e = errno;
    close(fd);
    return (*what = "setsockopt(SO_REUSEPORT)", e);
  }
  if (udp) {
    set_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF, rcvbuf);
    set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF, sndbuf);
  }
  struct sockaddr_storage ss;
  socklen_t len = 0;
  if (!make_sockaddr(family, host, port, &ss, &len)) {
    close(fd);
    return (*what = "bind address", EINVAL);
  }
  if (bind(fd, (struct sockaddr*)&ss, len) != 0 || (!udp && listen(fd, (int)backlog) != 0)) {
    int e = errno;
    close(fd);
    return (*what = udp ? "bind" : "bind/listen", e);
  }
  *out = fd;
  return 0;
}

/**
 * reuseportGroup({ protocol: 'udp'|'tcp', family: 4|6, address, port, count, backlog?,
 *   recvBufferBytes?, sendBufferBytes?, program?: Int32Array of [code, jt, jf, k] }) ->
 * { fds: number[], port, steering: null | errno (0 when the program is attached) }.
 * Port 0: the first socket gets a free port and the others join it.
 */
static napi_value js_reuseport_group(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) {
    napi_throw_type_error(env, NULL, "reuseportGroup: options expected");
    return NULL;
  }
  napi_value o = argv[0], v;
  char proto[8] = "", host[INET6_ADDRSTRLEN + 1] = "";
  size_t n = 0;
  if (!get_prop(env, o, "protocol", &v) || napi_get_value_string_utf8(env, v, proto, sizeof proto, &n) != napi_ok ||
      !get_prop(env, o, "address", &v) || napi_get_value_string_utf8(env, v, host, sizeof host, &n) != napi_ok) {
    napi_throw_type_error(env, NULL, "reuseportGroup: protocol and address are required");
    return NULL;
  }
  int udp = strcmp(proto, "udp") == 0;
  uint32_t fam = u32(env, o, "family", 4), port = u32(env, o, "port", 0), count = u32(env, o, "count", 0);
  uint32_t backlog = u32(env, o, "backlog", 511);
  int rcvbuf = (int)u32(env, o, "recvBufferBytes", 0), sndbuf = (int)u32(env, o, "sendBufferBytes", 0);
  if ((!udp && strcmp(proto, "tcp") != 0) || (fam != 4 && fam != 6) || port > 65535 || count < 1 || count > MAX_GROUP) {
    napi_throw_range_error(env, NULL, "reuseportGroup: protocol udp|tcp, family 4|6, port 0-65535, count 1-256");
    return NULL;
  }
  struct sock_filter insns[MAX_INSNS];
  uint32_t ninsns = 0;
  if (get_prop(env, o, "program", &v)) {
    napi_typedarray_type t;
    size_t len, off;
    void* data;
    napi_value ab;
    if (!udp || napi_get_typedarray_info(env, v, &t, &len, &data, &ab, &off) != napi_ok || t != napi_int32_array || len % 4 != 0 ||
        len == 0 || len / 4 > MAX_INSNS) {
      napi_throw_type_error(env, NULL, "reuseportGroup: program is an Int32Array of [code, jt, jf, k] (UDP only)");
      return NULL;
    }
    const int32_t* w = data;
    ninsns = (uint32_t)(len / 4);
    for (uint32_t i = 0; i < ninsns; i++) {
      insns[i].code = (uint16_t)w[4 * i];
      insns[i].jt = (uint8_t)w[4 * i + 1];
      insns[i].jf = (uint8_t)w[4 * i + 2];
      insns[i].k = (uint32_t)w[4 * i + 3];
    }
  }
  int family = fam == 6 ? AF_INET6 : AF_INET;
  int fds[MAX_GROUP];
  for (uint32_t i = 0; i < count; i++) {
    const char* what = NULL;
    int err = open_member(udp, family, host, port, backlog, rcvbuf, sndbuf, &fds[i], &what);
    if (err != 0) {
      for (uint32_t j = 0; j < i; j++) close(fds[j]);
      return throw_errno(env, what, err);
    }
    if (i == 0) port = bound_port(fds[0]);
  }
  napi_value out, list, steering;
  napi_create_object(env, &out);
  napi_create_array_with_length(env, count, &list);
  for (uint32_t i = 0; i < count; i++) {
    napi_create_int32(env, fds[i], &v);
    napi_set_element(env, list, i, v);
  }
  napi_set_named_property(env, out, "fds", list);
  napi_create_uint32(env, port, &v);
  napi_set_named_property(env, out, "port", v);
  if (ninsns > 0) {
    struct sock_fprog prog = {.len = (unsigned short)ninsns, .filter = insns};
    int r = setsockopt(fds[0], SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof prog);
    napi_create_int32(env, r == 0 ? 0 : errno, &steering);
  } else {
    napi_get_null(env, &steering);
  }
  napi_set_named_property(env, out, "steering", steering);
  return out;
}

/** dupFd(fd): a new descriptor (close-on-exec) for the same socket; throws on failure. */
static napi_value js_dup_fd(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out;
  int32_t fd = -1;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok) {
    napi_throw_type_error(env, NULL, "dupFd: a descriptor expected");
    return NULL;
  }
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return throw_errno(env, "dup", errno);
  napi_create_int32(env, copy, &out);
  return out;
}

/** closeFd(fd): closes a descriptor this module handed out (a group member or a dup). */
static napi_value js_close_fd(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t fd = -1;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) {
    napi_throw_type_error(env, NULL, "closeFd: a descriptor expected");
    return NULL;
  }
  if (close(fd) != 0) return throw_errno(env, "close", errno);
  return NULL;
}

int groups_init(napi_env env, napi_value exports) {
  static const struct {
    const char* name;
    napi_callback fn;
  } fns[] = {{"reuseportGroup", js_reuseport_group}, {"dupFd", js_dup_fd}, {"closeFd", js_close_fd}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value f;
    if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f) != napi_ok) return 0;
    if (napi_set_named_property(env, exports, fns[i].name, f) != napi_ok) return 0;
  }
  return 1;
}
