// Options of the session manager, their defaults and validation. The peer grants streams per
// connection (initial_max_streams_bidi); we never ask for more than it granted, so
// `streamsPerConnection` is only an upper bound of our own.
import type { QuicCommonOptions, QuicTicketStore } from '@quicpool/transport';
import type { StartupHints } from './fast-start.js';

/** One pooler endpoint: `'host:port'`, `'[v6]:port'`, or an object. */
export type EndpointSpec = string | { readonly host: string; readonly port: number; readonly serverName?: string };

/** How the pooler's certificate is checked. Verification is on unless explicitly disabled. */
export interface CertificateOptions {
  /** CA bundle (PEM) that must have signed the pooler's certificate. Default: Node's bundled public roots. */
  readonly ca?: string | Uint8Array;
  /** Path of a PEM CA file, read once when the manager is created. */
  readonly caFile?: string;
  /**
   * SHA-256 fingerprint (`AA:BB:...` or plain hex) of the pooler's leaf certificate. When set, the
   * certificate must match it exactly (CA and name are not checked); 0-RTT is off, since nothing
   * may be sent before the pin is checked.
   */
  readonly pinnedFingerprint?: string;
  /** DNS name the certificate must carry. Default: the endpoint's host when it is a name. */
  readonly serverName?: string;
  /** Accept ANY certificate: a man in the middle can read everything. Throwaway dev set-ups only. */
  readonly dangerouslyAcceptAnyCertificate?: boolean;
  /**
   * Client certificate chain (PEM, leaf first) presented to the pooler, with its private key: a
   * pooler with a client CA maps it to the users its sessions may log in as without a password
   * (`cert` authentication). Give `cert` and `key`, or `certFile` and `keyFile` (read once).
   */
  readonly cert?: string | Uint8Array;
  readonly key?: string | Uint8Array;
  readonly certFile?: string;
  readonly keyFile?: string;
}

export interface SessionManagerOptions extends CertificateOptions {
  /** Pooler endpoints. Connections are spread over them; one that fails is skipped for a while. */
  readonly endpoints: readonly EndpointSpec[];
  /** Most QUIC connections kept, across all endpoints. Default 4. */
  readonly maxConnections?: number;
  /** Most concurrent session streams on one connection (also bounded by the peer's grant). Default 100. */
  readonly streamsPerConnection?: number;
  /** Connections kept open even when idle (opened by `warm()` or on first use). Default 0. */
  readonly minConnections?: number;
  /** Open the next connection in the background once this share of open capacity is in use. Default 0.75. */
  readonly preOpenRatio?: number;
  /** Close a connection with no streams for this long (down to `minConnections`). Default 60,000 ms; 0 = never. */
  readonly idleTimeoutMs?: number;
  /** Longest wait for a session stream before `acquire()` rejects. Default 30,000 ms; 0 = forever. */
  readonly acquireTimeoutMs?: number;
  /** A connection whose handshake has not completed after this long is given up (ETIMEDOUT). Default 10,000 ms. */
  readonly connectTimeoutMs?: number;
  /** First back-off after an endpoint failed; doubles per failure up to 30 s. Default 1,000 ms. */
  readonly endpointRetryMs?: number;
  /** Resume with 0-RTT when a session ticket is known. Default true (off with a pinned fingerprint). */
  readonly earlyData?: boolean;
  /** Where session tickets live; share one store across managers to resume across them. */
  readonly tickets?: QuicTicketStore;
  /**
   * Which logins the pooler accepted without a password, learned by QuicClient (pipelined startup
   * under trust); share one store, like `tickets`, so a new manager starts with what an old one learned.
   */
  readonly startupHints?: StartupHints;
  /** Transport tuning passed to every QUIC connection (ALPN, idle timeout, keep-alive, windows ...). */
  readonly quic?: QuicCommonOptions;
}

export interface ResolvedManagerOptions {
  readonly maxConnections: number;
  readonly streamsPerConnection: number;
  readonly minConnections: number;
  readonly preOpenRatio: number;
  readonly idleTimeoutMs: number;
  readonly acquireTimeoutMs: number;
  readonly endpointRetryMs: number;
  readonly connectTimeoutMs: number;
  readonly earlyData: boolean;
}

export const DEFAULT_SESSION_MANAGER_OPTIONS: ResolvedManagerOptions = {
  maxConnections: 4,
  streamsPerConnection: 100,
  minConnections: 0,
  preOpenRatio: 0.75,
  idleTimeoutMs: 60_000,
  acquireTimeoutMs: 30_000,
  endpointRetryMs: 1_000,
  connectTimeoutMs: 10_000,
  earlyData: true,
};

/** The most sessions the manager can hold at once. */
export function sessionCapacity(options: Pick<ResolvedManagerOptions, 'maxConnections' | 'streamsPerConnection'>): number {
  return options.maxConnections * options.streamsPerConnection;
}

export function resolveManagerOptions(o: SessionManagerOptions): ResolvedManagerOptions {
  const d = DEFAULT_SESSION_MANAGER_OPTIONS;
  const r: ResolvedManagerOptions = {
    maxConnections: o.maxConnections ?? d.maxConnections,
    streamsPerConnection: o.streamsPerConnection ?? d.streamsPerConnection,
    minConnections: o.minConnections ?? d.minConnections,
    preOpenRatio: o.preOpenRatio ?? d.preOpenRatio,
    idleTimeoutMs: o.idleTimeoutMs ?? d.idleTimeoutMs,
    acquireTimeoutMs: o.acquireTimeoutMs ?? d.acquireTimeoutMs,
    endpointRetryMs: o.endpointRetryMs ?? d.endpointRetryMs,
    connectTimeoutMs: o.connectTimeoutMs ?? d.connectTimeoutMs,
    earlyData: (o.earlyData ?? d.earlyData) && o.pinnedFingerprint === undefined,
  };
  for (const key of ['maxConnections', 'streamsPerConnection'] as const) {
    const v = r[key];
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${key} must be a whole number >= 1, got ${v}`);
  }
  for (const key of ['minConnections', 'idleTimeoutMs', 'acquireTimeoutMs', 'endpointRetryMs', 'connectTimeoutMs'] as const) {
    const v = r[key];
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`${key} must be a whole number >= 0, got ${v}`);
  }
  if (r.minConnections > r.maxConnections) throw new RangeError('minConnections must not exceed maxConnections');
  if (!(r.preOpenRatio > 0 && r.preOpenRatio <= 1)) throw new RangeError('preOpenRatio must be in (0, 1]');
  if (o.endpoints.length === 0) throw new RangeError('endpoints must name at least one pooler');
  return r;
}
