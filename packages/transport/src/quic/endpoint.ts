// The UDP side: one socket (through the native batched module or node:dgram, see io/), datagrams
// routed to connections by destination connection id, and all work of an event-loop turn batched
// into ONE flush (setImmediate), so that ACKs leave together with the replies the application
// wrote in the same turn and every datagram of the turn leaves in one batch.
import { loadQuiche, quiche } from './native.js';
import type { Config, Header } from '@matrixai/quic/native/index.js';
import { TransportError } from '../session-stream.js';
import { buildClientConfig, buildServerConfig, clientIdentityOf, resolveCommon } from './config.js';
import type { BuiltServerConfig, QuicClientEndpointOptions, QuicServerOptions, ResolvedCommon } from './config.js';
import { QuicConnection } from './connection.js';
import type { ConnectionHost } from './connection.js';
import { CID_LEN, cidHex, newCid, routeKey } from './routing/cid.js';
import type { CidOwner } from './routing/cid.js';
import { StatelessResets } from './routing/stateless-reset.js';
import { QuicTicketStore, ticketKeyOf } from './tickets.js';
import { defaultBindHost } from './routing/udp.js';
import { RetryTokens } from './routing/retry.js';
import { decideInitial } from './routing/accept.js';
import { Flusher } from './flusher.js';
import { ClosedRoutes } from './routing/closed.js';
import { DeadlineQueue } from './deadlines.js';
import type { DatagramIo, DatagramIoOptions, UdpIoKind } from './io/datagram-io.js';
import { openDatagramIo } from './io/open.js';
import type { Peer } from './io/peer.js';

export type { QuicClientEndpointOptions } from './config.js';

export interface QuicEndpointStats {
  connections: number;
  streams: number;
  datagramsIn: number;
  datagramsOut: number;
  /** Datagrams for no known connection (or unparsable), dropped silently. */
  datagramsDropped: number;
  bytesIn: number;
  bytesOut: number;
  /** Handshakes begun (Initials accepted, or dials), completed, and failed (closed before completing). */
  handshakes: number;
  handshakesCompleted: number;
  handshakesFailed: number;
  socketErrors: number;
  /** Server with `retry: true`: Retry packets sent (address validation round trips). */
  retriesSent: number;
  /** Datagrams routed to a connection that quiche refused (undecryptable, invalid, too late). */
  datagramsRejected: number;
  /** Server: stateless resets sent for short-header packets of connections it has no state for. */
  statelessResetsSent: number;
  /** Server: peer streams already reset when first seen; never handed to `onSession`. */
  streamsResetBeforeAccept: number;
  /** Which I/O path the socket uses: the batched native module or node:dgram. */
  io: UdpIoKind;
  /** Send and receive system calls so far (one per batch on the native path). */
  sendCalls: number;
  recvCalls: number;
  /** Sends that carried several datagrams (UDP GSO). */
  gsoSends: number;
}


/** Smoothed RTT and loss of the endpoint's connections, from quiche's path statistics. */
export interface QuicPathHealth {
  /** Mean smoothed RTT of the connections' active paths (ms), null without connections. */
  rttMsAvg: number | null;
  rttMsMax: number | null;
  packetsSent: number;
  packetsLost: number;
  packetsRetransmitted: number;
}

/** Smallest datagram that can be a stateless reset (RFC 9000 10.3). */
const MIN_STATELESS_RESET = 21;

/** Spare connection ids issued per connection at most (quiche's active_connection_id_limit is 4). */
const MAX_SPARE_CIDS = 3;

/** Longest a forced close keeps the socket open for the closing period (see `forceClose`). */
const FORCED_CLOSE_LINGER_MS = 2_000;
/** A forced close may end once peers have been silent this long. */
const CLOSE_QUIET_MS = 30;

/** The binding reports quiche's `rtt` Duration in this many units per millisecond. */
const RTT_UNITS_PER_MS = 1;

type Role =
  | { kind: 'server'; built: BuiltServerConfig; owner: CidOwner | null; resets: StatelessResets; retryKey: Uint8Array | undefined }
  | { kind: 'client'; config: Config; opts: QuicClientEndpointOptions; tickets: QuicTicketStore; ticketKey: string };

export class QuicEndpoint implements ConnectionHost {
  readonly connections = new Set<QuicConnection>();
  readonly scratch = new Uint8Array(64 * 1024);
  readonly pendingWriteLimit: number;
  /** Every connection's timers (quiche's timeout, the delayed ACK) under one Node timer. */
  readonly deadlines = new DeadlineQueue();
  /** Server: called for every accepted connection. */
  onConnection: ((c: QuicConnection) => void) | null = null;
  /** Server: a connection closed before its handshake completed (see QuicConnection.error for why). */
  onHandshakeFailed: ((c: QuicConnection) => void) | null = null;
  private readonly routes = new Map<number, QuicConnection>();
  /** Server: client-chosen original DCIDs, used by its Initial packets until it learns ours. */
  private readonly initialRoutes = new Map<string, QuicConnection>();
  private readonly odcidOf = new Map<QuicConnection, string>();
  private readonly flusher: Flusher;
  private readonly counters = {
    datagramsIn: 0, datagramsDropped: 0, bytesIn: 0, handshakes: 0, handshakesCompleted: 0, handshakesFailed: 0, socketErrors: 0,
    retriesSent: 0, datagramsRejected: 0, streamsResetBeforeAccept: 0, statelessResetsSent: 0,
  };
  private readonly retryTokens: RetryTokens;
  private sweepTimer: NodeJS.Timeout | null = null;
  private closing: Promise<void> | null = null;
  private forcing: Promise<void> | null = null;
  /** Closed connections still answered with their CONNECTION_CLOSE (see `routing/closed.ts`). */
  private readonly closed = new ClosedRoutes();
  private lastCloseEchoRxAt = 0;
  private socketClosing = false;
  private accepting = true;
  private readonly localHost: Peer;
  /** Built outside the flush: Version Negotiation and Retry packets. */
  private readonly controlPacket = Buffer.allocUnsafe(quiche.MAX_DATAGRAM_SIZE);

  private constructor(
    private io: DatagramIo,
    private readonly role: Role,
    private readonly common: ResolvedCommon,
  ) {
    this.pendingWriteLimit = common.pendingWriteLimit;
    this.retryTokens = new RetryTokens(role.kind === 'server' ? role.retryKey : undefined);
    this.flusher = new Flusher(io, common.ackDelayMs, this.deadlines, (c, now) => this.afterSend(c, now));
    this.localHost = io.local;
    const sweepEvery = common.keepAliveMs > 0 ? Math.max(50, common.keepAliveMs / 2) : 5_000;
    this.sweepTimer = setInterval(this.sweep, sweepEvery);
    this.sweepTimer.unref();
  }

  /** A server endpoint listening on `host:port` (default 127.0.0.1, port 0 = any free port). */
  static async server(opts: QuicServerOptions): Promise<QuicEndpoint> {
    await loadQuiche();
    const common = resolveCommon(opts, 'server');
    const built = buildServerConfig(opts, common);
    const host = opts.host ?? '127.0.0.1';
    const ep: { current: QuicEndpoint | null } = { current: null };
    const owner = opts.worker ?? null;
    if (owner !== null && (!Number.isInteger(owner.count) || owner.count < 1 || owner.count > 256 || !Number.isInteger(owner.index) || owner.index < 0 || owner.index >= owner.count)) {
      throw new RangeError(`worker must be { index: 0..count-1, count: 1..256 }, got ${JSON.stringify(owner)}`);
    }
    const io = await openDatagramIo(common.udpIo, { ...QuicEndpoint.ioOptions(ep, host, opts.port ?? 0, common, null), ...(opts.socketFd !== undefined ? { fd: opts.socketFd } : {}) });
    const resets = new StatelessResets(opts.statelessResetKey);
    ep.current = new QuicEndpoint(io, { kind: 'server', built, owner, resets, retryKey: opts.retryKey }, common);
    return ep.current;
  }

  /** A client endpoint whose socket is connected to one server. */
  static async client(opts: QuicClientEndpointOptions): Promise<QuicEndpoint> {
    await loadQuiche();
    const common = resolveCommon(opts, 'client');
    const config = buildClientConfig(opts, common);
    const localHost = opts.localHost ?? defaultBindHost(opts.host);
    const ep: { current: QuicEndpoint | null } = { current: null };
    const io = await openDatagramIo(common.udpIo, QuicEndpoint.ioOptions(ep, localHost, 0, common, { host: opts.host, port: opts.port }));
    const tickets = opts.tickets ?? new QuicTicketStore();
    const ticketKey = ticketKeyOf(opts.host, opts.port, opts.serverName, clientIdentityOf(opts));
    ep.current = new QuicEndpoint(io, { kind: 'client', config, opts, tickets, ticketKey }, common);
    return ep.current;
  }

  /** Socket options whose callbacks reach the endpoint once it exists (datagrams cannot arrive before). */
  private static ioOptions(
    ep: { current: QuicEndpoint | null },
    host: string,
    port: number,
    common: ResolvedCommon,
    connectTo: { host: string; port: number } | null,
  ): DatagramIoOptions {
    return {
      host, port, socketBufferBytes: common.socketBufferBytes, connectTo,
      onDatagram: (data, from) => ep.current?.onMessage(data, from),
      onError: (err) => ep.current?.onSocketError(err),
    };
  }

  address(): { address: string; port: number } {
    return { address: this.localHost.host, port: this.localHost.port };
  }
  localAddress(): { address: string; port: number } {
    return this.address();
  }

  stats(): QuicEndpointStats {
    let streams = 0;
    for (const c of this.connections) streams += c.streams.size;
    const { datagramsOut, bytesOut } = this.flusher;
    const io = this.io.stats();
    return {
      connections: this.connections.size, streams, ...this.counters, datagramsOut, bytesOut,
      io: io.kind, sendCalls: io.sendCalls, recvCalls: io.recvCalls, gsoSends: io.gsoSends,
    };
  }

  /**
   * Path health summed over the open connections (quiche's own counters): for the admin console
   * and metrics. Costs a binding call per connection, so it is not part of the hot `stats()`.
   */
  pathHealth(): QuicPathHealth {
    let rttSum = 0;
    let rttMax = 0;
    let measured = 0;
    let packetsSent = 0;
    let packetsLost = 0;
    let packetsRetransmitted = 0;
    for (const c of this.connections) {
      const st = c.q.stats();
      packetsSent += st.sent;
      packetsLost += st.lost;
      packetsRetransmitted += st.retrans;
      for (const path of c.q.pathStats()) {
        if (!path.active) continue;
        rttSum += path.rtt;
        rttMax = Math.max(rttMax, path.rtt);
        measured++;
      }
    }
    return {
      rttMsAvg: measured === 0 ? null : rttSum / measured / RTT_UNITS_PER_MS,
      rttMsMax: measured === 0 ? null : rttMax / RTT_UNITS_PER_MS,
      packetsSent,
      packetsLost,
      packetsRetransmitted,
    };
  }

  /** Client: start a new connection (resuming with 0-RTT when a ticket is known). */
  connect(): QuicConnection {
    if (this.role.kind !== 'client') throw new Error('connect() needs a client endpoint');
    if (this.closing !== null) throw new TransportError('QUIC endpoint is closed', 'ECONNABORTED');
    const { opts, config, tickets, ticketKey } = this.role;
    const { cid, key } = newCid(this.routes);
    const remote = this.io.peer(opts.host, opts.port);
    const q = quiche.Connection.connect(opts.serverName, cid, this.localHost, remote, config);
    const ticket = (opts.enableEarlyData ?? true) ? tickets.get(ticketKey) : undefined;
    let resuming = false;
    if (ticket !== undefined) {
      try {
        q.setSession(ticket);
        resuming = true;
      } catch {
        tickets.delete(ticketKey); // unparsable: forget it, do a full handshake
      }
    }
    const c = new QuicConnection(this, q, {
      role: 'client', cidHex: cidHex(cid), local: this.localHost, remote,
      serverName: opts.serverName, earlyDataPolicy: 'accept', resuming,
      verifiesPeer: opts.dangerouslySkipVerify !== true,
    });
    this.routes.set(key, c);
    c.routeKeys.push(key);
    this.connections.add(c);
    this.counters.handshakes++;
    this.markDirty(c);
    return c;
  }

  /**
   * Client: move to a fresh UDP socket (new local port), as a NAT rebinding would. Connections
   * keep running; the server sees their packets arrive from a new address and migrates the path.
   */
  async rebind(): Promise<void> {
    if (this.role.kind !== 'client') throw new Error('rebind() needs a client endpoint');
    const { opts } = this.role;
    const old = this.io;
    const bindHost = opts.localHost ?? defaultBindHost(opts.host);
    const ep = { current: this as QuicEndpoint | null };
    this.io = await openDatagramIo(this.common.udpIo, QuicEndpoint.ioOptions(ep, bindHost, 0, this.common, { host: opts.host, port: opts.port }));
    this.flusher.io = this.io;
    await old.close();
  }

  /** The port the socket is really bound to now (changes after `rebind`). */
  socketPort(): number {
    return this.io.local.port;
  }

  // --- receive path ---------------------------------------------------------------------------

  private onSocketError(err: NodeJS.ErrnoException): void {
    this.counters.socketErrors++;
    // A client's connected socket reports ICMP port unreachable as ECONNREFUSED: nobody
    // listens there. Fail connections still handshaking now instead of after the idle timeout.
    // Established ones ignore it (ICMP is unauthenticated; QUIC recovers or times out).
    if (err.code !== 'ECONNREFUSED' || this.role.kind !== 'client') return;
    for (const c of this.connections) {
      if (!c.isEstablished) c.abort(new TransportError(`no QUIC server answers at ${this.role.opts.host}:${this.role.opts.port}`, 'ECONNREFUSED'));
    }
  }

  private onMessage(msg: Uint8Array, from: Peer): void {
    if (this.socketClosing) return; // the socket is going away
    this.counters.datagramsIn++;
    this.flusher.noteDatagram();
    this.counters.bytesIn += msg.length;
    let c: QuicConnection | undefined;
    if ((msg[0]! & 0x80) === 0) {
      // Short header: our DCID starts right after the first byte.
      if (msg.length > CID_LEN) c = this.routes.get(routeKey(msg, 1));
    } else {
      c = this.routeLong(msg, from);
    }
    if (c === undefined) {
      if ((msg[0]! & 0x80) === 0 && msg.length > CID_LEN && this.closed.size > 0) {
        const key = routeKey(msg, 1);
        const now = Date.now();
        const echo = this.closed.echoFor(key, now);
        if (echo !== null || this.closed.has(key)) {
          // A peer of a closed connection is still sending: it may have missed our CLOSE.
          this.lastCloseEchoRxAt = now;
          if (echo !== null) this.sendRaw(echo.packet, echo.packet.length, echo.to, false);
          return;
        }
      }
      if ((msg[0]! & 0x80) === 0) {
        if (this.role.kind === 'server') this.statelessReset(msg, from, this.role.resets);
        else if (msg.length >= MIN_STATELESS_RESET && this.offerReset(msg)) return;
      }
      this.counters.datagramsDropped++;
      return;
    }
    if (!c.receive(msg, from)) this.counters.datagramsRejected++;
  }

  /**
   * Client: a short-header datagram that names none of our connections may be a stateless reset
   * (its bytes after the first are random). Only quiche knows the tokens the server announced, so
   * each connection to that server gets to check it; true when one of them took it as its reset.
   */
  private offerReset(msg: Uint8Array): boolean {
    for (const c of this.connections) if (c.tryStatelessReset(msg)) return true;
    return false;
  }

  /** A short-header packet for no connection of ours: answer with its CID's stateless reset. */
  private statelessReset(msg: Uint8Array, from: Peer, resets: StatelessResets): void {
    if (msg.length <= CID_LEN || this.socketClosing) return;
    const out = this.controlPacket;
    const n = resets.build(msg.subarray(1, 1 + CID_LEN), msg.length, out, Date.now());
    if (n === 0) return;
    this.io.sendOne(out, n, from);
    this.counters.statelessResetsSent++;
  }

  private routeLong(msg: Uint8Array, from: Peer): QuicConnection | undefined {
    let hdr: Header;
    try {
      hdr = quiche.Header.fromSlice(msg, CID_LEN);
    } catch {
      return undefined;
    }
    const dcid = hdr.dcid;
    let c = dcid.length === CID_LEN ? this.routes.get(routeKey(dcid, 0)) : undefined;
    if (c !== undefined) return c;
    if (this.role.kind !== 'server') return undefined;
    const odcid = cidHex(dcid);
    c = this.initialRoutes.get(odcid);
    if (c !== undefined) return c;
    if (hdr.ty !== quiche.Type.Initial) return undefined;
    return this.accept(hdr, msg, from, odcid, this.role.built);
  }

  private accept(hdr: Header, msg: Uint8Array, from: Peer, odcid: string, built: BuiltServerConfig): QuicConnection | undefined {
    if (!this.accepting || this.connections.size >= built.maxConnections) return undefined;
    const role = this.role as Extract<Role, { kind: 'server' }>;
    const d = decideInitial(hdr, msg.length, { address: from.host, port: from.port }, built.retry, this.routes, this.retryTokens, role.owner);
    switch (d.kind) {
      case 'drop':
        return undefined;
      case 'negotiate':
      case 'retry': {
        const out = this.controlPacket;
        const n = d.kind === 'negotiate'
          ? quiche.negotiateVersion(hdr.scid, hdr.dcid, out)
          : quiche.retry(hdr.scid, hdr.dcid, d.newScid, d.token, hdr.version, out);
        this.io.sendOne(out, n, from);
        if (d.kind === 'retry') this.counters.retriesSent++;
        return undefined;
      }
      case 'accept':
        break;
      default: {
        const never: never = d;
        throw new Error(`unhandled decision ${JSON.stringify(never)}`);
      }
    }
    const remote = from;
    // quiche copies the config's transport parameters into the connection: the reset token the
    // client learns for this CID is set right before.
    built.config.setStatelessResetToken(role.resets.tokenValue(d.scid));
    const q = quiche.Connection.accept(d.scid, d.odcid, this.localHost, remote, built.config);
    const c = new QuicConnection(this, q, {
      role: 'server', cidHex: cidHex(d.scid), local: this.localHost, remote,
      serverName: null, earlyDataPolicy: built.earlyData, resuming: false, verifiesPeer: built.verifiesClients,
    });
    this.routes.set(d.key, c);
    c.routeKeys.push(d.key);
    this.initialRoutes.set(odcid, c);
    this.odcidOf.set(c, odcid);
    this.connections.add(c);
    this.counters.handshakes++;
    this.onConnection?.(c);
    return c;
  }

  // --- flush path (see flusher.ts) -------------------------------------------------------------

  markDirty(c: QuicConnection): void {
    this.flusher.markDirty(c);
  }

  markReceived(c: QuicConnection): void {
    this.flusher.markReceived(c);
  }

  sendRaw(buf: Buffer, len: number, to: Peer, closeEcho: boolean): void {
    if (this.socketClosing) return;
    if (closeEcho) this.lastCloseEchoRxAt = Date.now();
    this.io.sendOne(buf, len, to);
    this.flusher.datagramsOut++;
    this.flusher.bytesOut += len;
  }

  countRejected(n: number): void {
    this.counters.datagramsRejected += n;
  }

  countResetBeforeAccept(): void {
    this.counters.streamsResetBeforeAccept++;
  }

  private afterSend(c: QuicConnection, now: number): void {
    c.afterSend(now);
    if (c.isClosed || !c.isEstablished) return;
    if (!c.cidsIssued && this.role.kind === 'server') this.issueCids(c, this.role);
    const odcid = this.odcidOf.get(c);
    if (odcid !== undefined) {
      // The client uses our CID now; its Initial-phase DCID route can go.
      this.initialRoutes.delete(odcid);
      this.odcidOf.delete(c);
    }
    if (!c.ticketPolled && this.role.kind === 'client') this.pollTicket(c, this.role.tickets, this.role.ticketKey);
  }

  /**
   * Server: spare connection ids for the client (as many as it accepts), each naming this worker
   * and with its stateless reset token, so a client that migrates or rotates its DCID still
   * reaches this worker; ids it retires are unrouted (`sweep`).
   */
  private issueCids(c: QuicConnection, role: Extract<Role, { kind: 'server' }>): void {
    c.cidsIssued = true;
    for (let left = Math.min(c.q.sourceCidsLeft(), MAX_SPARE_CIDS); left > 0; left--) {
      const { cid, key } = newCid(this.routes, role.owner);
      try {
        c.q.newSourceCid(cid, role.resets.tokenValue(cid), false);
      } catch {
        return; // the limit was reached after all: nothing else to issue
      }
      this.routes.set(key, c);
      c.routeKeys.push(key);
    }
    this.markDirty(c);
  }

  /** Connection ids the client retired (RETIRE_CONNECTION_ID): their routes go. */
  private unrouteRetired(c: QuicConnection): void {
    for (let cid = c.q.retiredScidNext(); cid !== null; cid = c.q.retiredScidNext()) {
      const key = routeKey(cid, 0);
      if (this.routes.get(key) === c) this.routes.delete(key);
      const i = c.routeKeys.indexOf(key);
      if (i >= 0) c.routeKeys.splice(i, 1);
    }
  }

  private pollTicket(c: QuicConnection, tickets: QuicTicketStore, key: string): void {
    const t = c.q.session();
    if (t === null) return;
    tickets.set(key, t);
    c.ticketPolled = true;
  }

  /** Keep-alive PINGs and ticket refresh, for all connections at once. */
  private readonly sweep = (): void => {
    const now = Date.now();
    const ka = this.common.keepAliveMs;
    for (const c of this.connections) {
      if (!c.isEstablished || c.isClosed) continue;
      if (c.cidsIssued) this.unrouteRetired(c);
      if (ka > 0 && now - c.lastSendAt >= ka) {
        c.q.sendAckEliciting();
        this.markDirty(c);
      }
      // Servers may send newer tickets later: keep the newest.
      if (this.role.kind === 'client') c.ticketPolled = false;
    }
    this.closed.expire(now);
  };

  handshakeCompleted(): void {
    this.counters.handshakesCompleted++;
  }

  connectionClosed(c: QuicConnection): void {
    if (!c.isEstablished) {
      this.counters.handshakesFailed++;
      this.onHandshakeFailed?.(c);
    }
    const now = Date.now();
    for (const k of c.routeKeys) {
      if (this.routes.get(k) !== c) continue;
      this.routes.delete(k);
      this.closed.add(k, c.closePacket, c.closeTo, now);
    }
    const odcid = this.odcidOf.get(c);
    if (odcid !== undefined) this.initialRoutes.delete(odcid);
    this.odcidOf.delete(c);
    this.connections.delete(c);
  }

  // --- shutdown -------------------------------------------------------------------------------

  /** Stop accepting new connections (server); existing ones continue. */
  stopAccepting(): void {
    this.accepting = false;
  }

  /**
   * Graceful (default): stop accepting, let every connection finish its streams and close with
   * NO_ERROR; after `timeoutMs` (if given) whatever is still open is closed forcibly. Forced:
   * CONNECTION_CLOSE to every peer now, every stream errors, socket closed. A forced close may
   * follow a graceful one that is still waiting.
   */
  close(options: { graceful?: boolean; timeoutMs?: number } = {}): Promise<void> {
    const graceful = options.graceful ?? true;
    if (this.closing !== null) {
      if (!graceful) void this.forceClose();
      return this.closing;
    }
    this.closing = this.doClose(graceful, options.timeoutMs);
    return this.closing;
  }

  /**
   * CONNECTION_CLOSE to every remaining peer, on the wire now; every stream errors at once. The
   * socket stays open for the closing period (quiche's 3 PTO, at most FORCED_CLOSE_LINGER_MS):
   * a peer whose CLOSE was lost (full receive buffer, loss) keeps sending, and each connection
   * answers with its CLOSE again (`QuicConnection.closePacket`).
   */
  private forceClose(): Promise<void> {
    this.forcing ??= (async () => {
      const conns = [...this.connections];
      for (const c of conns) void c.close({ graceful: false, reason: 'endpoint shut down' });
      this.flusher.flushNow();
      if (conns.length === 0 && this.closed.echoing === 0) return;
      // Linger until quiche's closing periods are over and no peer has sent anything for
      // CLOSE_QUIET_MS (one that missed our CLOSE keeps sending and is answered), at most
      // FORCED_CLOSE_LINGER_MS.
      const t0 = Date.now();
      this.lastCloseEchoRxAt = t0;
      while (Date.now() - t0 < FORCED_CLOSE_LINGER_MS) {
        const quiet = Date.now() - this.lastCloseEchoRxAt >= CLOSE_QUIET_MS;
        if (quiet && conns.every((c) => c.isClosed)) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      for (const c of conns) c.finalize();
    })();
    return this.forcing;
  }

  private async doClose(graceful: boolean, timeoutMs: number | undefined): Promise<void> {
    this.accepting = false;
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
    if (graceful) {
      const all = Promise.all([...this.connections].map((c) => c.close({ graceful: true })));
      if (timeoutMs === undefined) {
        await all;
      } else {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([all, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
        clearTimeout(timer);
      }
    }
    await this.forceClose();
    this.socketClosing = true;
    this.deadlines.close();
    await this.io.close();
  }
}
