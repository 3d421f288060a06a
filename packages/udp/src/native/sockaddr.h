// IP literal + port -> sockaddr, shared by the batched socket (udp.c) and the socket groups
// (groups.c). Dual stack: an IPv4 literal on an IPv6 socket becomes its mapped form.
#ifndef QUICPOOL_SOCKADDR_H
#define QUICPOOL_SOCKADDR_H
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

/** Fills `ss` from an IP literal and port; 0 when the literal is not of `family`. */
static inline int make_sockaddr(int family, const char* host, uint32_t port, struct sockaddr_storage* ss, socklen_t* len) {
  memset(ss, 0, sizeof *ss);
  if (family == AF_INET) {
    struct sockaddr_in* a = (struct sockaddr_in*)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) return 0;
    *len = sizeof *a;
    return 1;
  }
  struct sockaddr_in6* a = (struct sockaddr_in6*)ss;
  a->sin6_family = AF_INET6;
  a->sin6_port = htons((uint16_t)port);
  if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1) {
    // An IPv4 literal on a dual-stack IPv6 socket: use its mapped form.
    struct in_addr v4;
    if (inet_pton(AF_INET, host, &v4) != 1) return 0;
    a->sin6_addr.s6_addr[10] = 0xff;
    a->sin6_addr.s6_addr[11] = 0xff;
    memcpy(&a->sin6_addr.s6_addr[12], &v4, 4);
  }
  *len = sizeof *a;
  return 1;
}

#endif
