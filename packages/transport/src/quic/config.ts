// Options for the lean QUIC endpoint and their translation into quiche `Config` objects.
// Every default is chosen for the pooler's traffic: many small request/response sessions per
// connection, a handful of connections per client, loopback-to-WAN round trips.
import { createHash, randomBytes } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import { quiche } from './native.js';
import type { Config } from '@matrixai/quic/native/index.js';
import type { UdpIoMode } from './io/datagram-io.js';
import type { QuicTicketStore } from './tickets.js';
import type { CidOwner } from './routing/cid.js';

/** ALPN identifier of the public draft mapping of Postgres protocol 3 onto QUIC. */
export const DEFAULT_ALPN = 'pgsql/3';

/** Settings shared by both sides. */
export interface QuicCommonOptions {
  /** ALPN protocols offered/accepted, most preferred first. Default `['pgsql/3']`. */
  alpn?: readonly string[];
  /** Idle timeout in ms (quiche closes a silent connection after it). Default 30,000. 0 = none. */
  idleTimeoutMs?: number;
  /** Send an ack-eliciting PING when nothing was sent for this long (ms). 0 = off. */
  keepAliveMs?: number;
  /** Connection-level receive window in bytes. Default 16 MiB. */
  initialMaxData?: number;
  /** Per-stream receive window in bytes. Default 1 MiB. */
  initialMaxStreamData?: number;
  /** Congestion control: 'cubic' (default), 'reno' or 'bbr' (bbr2 is rejected by this build). */
  congestionControl?: 'cubic' | 'reno' | 'bbr';
  /** UDP socket receive and send buffer size. Default 4 MiB (208 KB drops packets at 2,000 streams). */
  socketBufferBytes?: number;
  /** Bytes a stream may hold beyond what quiche accepted before `write()` callbacks are deferred. */
  pendingWriteLimit?: number;
  /**
   * How long (ms) an ACK for one received datagram of stream data may wait for the application's
   * reply (or more data to acknowledge in one ACK) so both leave in one datagram; two or more
   * unacknowledged datagrams wait 1 ms at most. Default 20, below the 25 ms max_ack_delay that
   * quiche advertises (the peer's loss timer allows for it); 0 sends every ACK at the end of the
   * turn it became due.
   */
  ackDelayMs?: number;
  /**
   * How datagrams move: 'auto' (default) uses the native batched module (@quicpool/udp:
   * recvmmsg/sendmmsg, GSO/GRO) when it loads and node:dgram otherwise (with one process warning);
   * 'native' fails when the module is missing; 'dgram' never uses it. `QUICPOOL_UDP_IO` overrides.
   */
  udpIo?: UdpIoMode;
}

export interface QuicServerOptions extends QuicCommonOptions {
  /** Certificate chain, PEM (leaf first). */
  cert: string | Uint8Array;
  /** Private key of the leaf certificate, PEM. */
  key: string | Uint8Array;
  /**
   * CA bundle (PEM) that client certificates must chain to. When set, the server asks every
   * client for a certificate during the handshake: one that does not verify fails the handshake
   * (TLS alert, as PostgreSQL does with `ssl_ca_file`), a client that sends none is accepted, and
   * a verified one shows as `info.tls.peerCertificate` on the connection's streams (from the
   * session ticket on resumed connections, 0-RTT included). Default: no client certificates.
   */
  clientCa?: string | Uint8Array;
  host?: string;
  port?: number;
  /** Concurrent client-initiated bidirectional streams per connection. Default 1,000. */
  maxStreamsPerConnection?: number;
  /** Connections accepted at once; further Initial packets are dropped. Default 10,000. */
  maxConnections?: number;
  /**
   * 48 bytes that encrypt session tickets. Keep them stable (and secret) across restarts so
   * resumed clients keep their 0-RTT; a random key per process is used when absent.
   */
  ticketKey?: Uint8Array;
  /** Accept 0-RTT early data. Default true. */
  enableEarlyData?: boolean;
  /**
   * What happens to streams whose first bytes arrive as 0-RTT early data (see README):
   * 'accept' (default) hands them out at once with `info.quic.earlyData = true`;
   * 'defer' withholds them until the handshake is confirmed, so replayed data never surfaces.
   */
  earlyData?: 'accept' | 'defer';
  /**
   * Validate client addresses with a stateless Retry before creating any state (costs one round
   * trip per new connection; use under spoofed-Initial floods). Default false.
   */
  retry?: boolean;
  /**
   * This endpoint is worker `index` of `count` sharing the UDP port through a reuseport group
   * steered by `quicSteeringProgram(count)`: the connection ids it issues name it.
   */
  worker?: CidOwner;
  /**
   * Adopt this bound UDP socket (a member of a reuseport group, see @quicpool/udp's
   * `reuseportGroup`) instead of binding `host:port`; the endpoint closes only its own dup.
   * Needs the native UDP module.
   */
  socketFd?: number;
  /** Key (>= 16 bytes) of the Retry tokens: workers that share it accept each other's. Random when absent. */
  retryKey?: Uint8Array;
  /**
   * Key (>= 16 bytes) of the stateless reset tokens of every connection id this endpoint issues:
   * workers that share it (and a restarted server that kept it) reset each other's connections
   * whose state they do not have, so those clients fail at once instead of at their idle timeout.
   * Random when absent.
   */
  statelessResetKey?: Uint8Array;
}

export interface QuicClientOptions extends QuicCommonOptions {
  /** DNS name the server certificate must carry (SAN); also sent as SNI. */
  serverName: string;
  /** CA bundle (PEM) to verify the server with; Node's bundled root CAs when absent. */
  ca?: string | Uint8Array;
  /** Skip certificate verification entirely. Only for throwaway development set-ups. */
  dangerouslySkipVerify?: boolean;
  /** Offer 0-RTT when a session ticket is known. Default true. */
  enableEarlyData?: boolean;
  /**
   * Client certificate chain (PEM, leaf first) and its private key, presented when the server
   * asks for one (a pooler with `clientCa`, for `cert` authentication). Give both or neither.
   */
  cert?: string | Uint8Array;
  key?: string | Uint8Array;
}

export interface QuicClientEndpointOptions extends QuicClientOptions {
  /** Server address (an IP; the certificate is checked against `serverName`). */
  host: string;
  port: number;
  /** Local address to bind; default the wildcard of the server's family. */
  localHost?: string;
  /** Where resumption tickets live; a private store when absent. */
  tickets?: QuicTicketStore;
}

export interface ResolvedCommon {
  alpn: readonly string[];
  idleTimeoutMs: number;
  keepAliveMs: number;
  initialMaxData: number;
  initialMaxStreamData: number;
  congestionControl: 'cubic' | 'reno' | 'bbr';
  socketBufferBytes: number;
  pendingWriteLimit: number;
  ackDelayMs: number;
  udpIo: UdpIoMode;
}

export function resolveCommon(o: QuicCommonOptions, role: 'client' | 'server'): ResolvedCommon {
  const alpn = o.alpn ?? [DEFAULT_ALPN];
  if (alpn.length === 0) throw new RangeError('alpn must name at least one protocol');
  return {
    alpn,
    idleTimeoutMs: o.idleTimeoutMs ?? 30_000,
    // A client keeps NAT bindings and the server's idle timer alive; servers never need to.
    keepAliveMs: o.keepAliveMs ?? (role === 'client' ? 10_000 : 0),
    initialMaxData: o.initialMaxData ?? 16 * 1024 * 1024,
    initialMaxStreamData: o.initialMaxStreamData ?? 1024 * 1024,
    congestionControl: o.congestionControl ?? 'cubic',
    socketBufferBytes: o.socketBufferBytes ?? 4 * 1024 * 1024,
    pendingWriteLimit: o.pendingWriteLimit ?? 64 * 1024,
    ackDelayMs: o.ackDelayMs ?? 20,
    udpIo: o.udpIo ?? 'auto',
  };
}

const enc = new TextEncoder();
const toBytes = (v: string | Uint8Array): Uint8Array => (typeof v === 'string' ? enc.encode(v) : v);

function applyCommon(cfg: Config, c: ResolvedCommon): void {
  cfg.setApplicationProtos([...c.alpn]);
  cfg.setMaxIdleTimeout(c.idleTimeoutMs);
  cfg.setMaxRecvUdpPayloadSize(quiche.MAX_DATAGRAM_SIZE);
  cfg.setMaxSendUdpPayloadSize(quiche.MAX_DATAGRAM_SIZE);
  cfg.setInitialMaxData(c.initialMaxData);
  cfg.setInitialMaxStreamDataBidiLocal(c.initialMaxStreamData);
  cfg.setInitialMaxStreamDataBidiRemote(c.initialMaxStreamData);
  cfg.setInitialMaxStreamDataUni(0);
  cfg.setInitialMaxStreamsUni(0);
  cfg.setCcAlgorithmName(c.congestionControl);
  // Path migration (a client's NAT rebinding) must keep working.
  cfg.setDisableActiveMigration(false);
  cfg.setActiveConnectionIdLimit(4);
  cfg.grease(true);
}

export interface BuiltServerConfig {
  config: Config;
  /** Client certificates are requested and verified (`clientCa` given). */
  verifiesClients: boolean;
  maxStreamsPerConnection: number;
  maxConnections: number;
  earlyData: 'accept' | 'defer';
  retry: boolean;
}

export function buildServerConfig(o: QuicServerOptions, common: ResolvedCommon): BuiltServerConfig {
  const clientCa = o.clientCa !== undefined ? toBytes(o.clientCa) : null;
  const config = quiche.Config.withBoringSslCtx(false, false, clientCa, [toBytes(o.key)], [toBytes(o.cert)], null);
  // quiche's verify_peer sets SSL_VERIFY_PEER alone (withBoringSslCtx(true, ...) would add
  // FAIL_IF_NO_PEER_CERT): a certificate is requested and checked against `clientCa`, and
  // clients without one still connect (they authenticate some other way).
  if (clientCa !== null) config.verifyPeer(true);
  applyCommon(config, common);
  const maxStreams = o.maxStreamsPerConnection ?? 1000;
  config.setInitialMaxStreamsBidi(maxStreams);
  const ticketKey = o.ticketKey ?? randomBytes(48);
  if (ticketKey.length !== 48) throw new RangeError('ticketKey must be 48 bytes');
  config.setTicketKey(ticketKey);
  if (o.enableEarlyData ?? true) config.enableEarlyData();
  return {
    config,
    verifiesClients: clientCa !== null,
    maxStreamsPerConnection: maxStreams,
    maxConnections: o.maxConnections ?? 10_000,
    earlyData: o.earlyData ?? 'accept',
    retry: o.retry ?? false,
  };
}

let systemCaPem: Uint8Array | undefined;

/**
 * What distinguishes this client's identity in the ticket store: a session ticket carries the
 * client certificate it was issued for, so a ticket must never be reused by a client presenting
 * another certificate (or none). '' without a certificate.
 */
export function clientIdentityOf(o: QuicClientOptions): string {
  if (o.cert === undefined) return '';
  return createHash('sha256').update(toBytes(o.cert)).digest('hex').slice(0, 32);
}

export function buildClientConfig(o: QuicClientOptions, common: ResolvedCommon): Config {
  const verify = o.dangerouslySkipVerify !== true;
  // BoringSSL in this binding has no system store wired in: "system CAs" means Node's bundle.
  const ca = verify ? (o.ca !== undefined ? toBytes(o.ca) : (systemCaPem ??= enc.encode(rootCertificates.join('\n')))) : null;
  if ((o.cert === undefined) !== (o.key === undefined)) throw new RangeError('a client certificate needs both cert and key');
  const key = o.key !== undefined ? [toBytes(o.key)] : null;
  const cert = o.cert !== undefined ? [toBytes(o.cert)] : null;
  const config = quiche.Config.withBoringSslCtx(verify, false, ca, key, cert, null);
  applyCommon(config, common);
  // The server never opens streams towards the client.
  config.setInitialMaxStreamsBidi(0);
  if (o.enableEarlyData ?? true) config.enableEarlyData();
  return config;
}
