// Turning quiche's failures into the TransportError codes session-stream users already handle.
// quiche throws `GenericFailure` errors whose message is its error name (e.g. `StreamReset(7)`),
// and reports connection-level failures through `localError()` / `peerError()`.
import type { ConnectionError } from '@matrixai/quic/native/index.js';
import { TransportError } from '../session-stream.js';

/** Application error codes we put on RESET_STREAM / STOP_SENDING / CONNECTION_CLOSE. */
export const AppError = {
  /** Orderly close of a connection. */
  NoError: 0,
  /** The local side destroyed the stream (abort, like a TCP RST). */
  StreamCancelled: 1,
  /** The endpoint was closed forcibly. */
  Shutdown: 2,
} as const;

const CRYPTO_ERROR_START = 0x100;
const CRYPTO_ERROR_END = 0x1ff;

/** TLS alert descriptions worth naming in an error message (RFC 8446 6.2). */
const TLS_ALERTS: Readonly<Record<number, string>> = {
  40: 'handshake failure',
  42: 'bad certificate',
  43: 'unsupported certificate',
  45: 'certificate expired',
  46: 'certificate unknown',
  48: 'unknown CA (certificate not trusted)',
  80: 'internal error',
  112: 'unrecognized name',
  120: 'no application protocol (ALPN mismatch)',
};

/** Code of a `StreamReset(n)` / `StreamStopped(n)` failure, or null for anything else. */
export function streamErrorCode(err: unknown, kind: 'StreamReset' | 'StreamStopped'): number | null {
  if (!(err instanceof Error)) return null;
  const m = err.message;
  if (!m.startsWith(kind)) return null;
  const n = Number.parseInt(m.slice(kind.length + 1), 10);
  return Number.isFinite(n) ? n : 0;
}

export function isQuicheError(err: unknown, name: string): boolean {
  return err instanceof Error && err.message.startsWith(name);
}

function describe(e: ConnectionError): string {
  const reason = e.reason.length > 0 ? `: ${Buffer.from(e.reason).toString('utf8')}` : '';
  return `${e.isApp ? 'application' : 'transport'} error 0x${e.errorCode.toString(16)}${reason}`;
}

function tlsError(e: ConnectionError, who: 'local' | 'peer', serverName: string | null): TransportError | null {
  if (e.isApp || e.errorCode < CRYPTO_ERROR_START || e.errorCode > CRYPTO_ERROR_END) return null;
  const alert = e.errorCode - CRYPTO_ERROR_START;
  const what = TLS_ALERTS[alert] ?? `TLS alert ${alert}`;
  const name = serverName === null ? '' : ` for server name '${serverName}'`;
  const side = who === 'local' ? 'rejected the server' : 'was rejected by the peer';
  if (alert === 120) return new TransportError(`QUIC handshake failed${name}: ${what}`, 'ECONNREFUSED');
  return new TransportError(`QUIC TLS handshake ${side}${name}: ${what}`, 'ERR_TLS_CERT');
}

/** The error every open stream of a closed connection receives. */
export function connectionClosedError(
  info: {
    timedOut: boolean;
    local: ConnectionError | null;
    peer: ConnectionError | null;
    closedLocally: TransportError | null;
    established: boolean;
  },
  serverName: string | null,
): TransportError {
  if (info.closedLocally !== null) return info.closedLocally;
  if (info.local !== null) {
    const t = tlsError(info.local, 'local', serverName);
    if (t !== null) return t;
  }
  if (info.peer !== null) {
    const t = tlsError(info.peer, 'peer', serverName);
    if (t !== null) return t;
    return new TransportError(`QUIC connection closed by peer (${describe(info.peer)})`, 'ECONNRESET');
  }
  if (info.timedOut) {
    return info.established
      ? new TransportError('QUIC connection idle timeout', 'ETIMEDOUT')
      : new TransportError('QUIC handshake timed out (no answer from server)', 'ETIMEDOUT');
  }
  if (info.local !== null) return new TransportError(`QUIC connection failed (${describe(info.local)})`, 'ECONNABORTED');
  return new TransportError('QUIC connection closed', 'ECONNABORTED');
}
