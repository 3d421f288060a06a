// What the session manager counts and the events it emits.
import { TransportError } from '@quicpool/transport';
import type { PoolerEndpoint } from './endpoints.js';

export interface ManagerCounters {
  /** Connections started (full handshakes and resumption attempts). */
  handshakes: number;
  /** Connections whose server accepted the session ticket (0-RTT possible). */
  resumptions: number;
  /** Session streams handed out. */
  acquired: number;
  /** Acquires that could not be served at once and waited. */
  waits: number;
  /** Connection attempts that failed before their handshake completed. */
  connectionFailures: number;
  /** Established connections that died (peer closed, idle timeout, network). */
  connectionsLost: number;
  /** Acquires that were refused (timeout, nothing reachable). */
  acquireFailures: number;
  /** Connections closed because they had no streams for `idleTimeoutMs`. */
  idleClosed: number;
}

export interface EndpointStats {
  readonly endpoint: string;
  readonly connections: number;
  readonly down: boolean;
  readonly lastError: string | null;
}

export interface SessionManagerStats extends ManagerCounters {
  /** Connections that can carry streams now. */
  readonly connections: number;
  /** Connections still handshaking. */
  readonly connecting: number;
  readonly streamsInUse: number;
  /** Acquires waiting right now. */
  readonly waiting: number;
  readonly endpoints: readonly EndpointStats[];
}

export interface SessionManagerEvents {
  connectionOpen: [info: { endpoint: string; resumed: boolean }];
  connectionLost: [info: { endpoint: string; error: Error; streamsInUse: number }];
  endpointDown: [info: { endpoint: string; error: Error; retryInMs: number }];
  endpointUp: [info: { endpoint: string }];
}

export function emptyCounters(): ManagerCounters {
  return {
    handshakes: 0, resumptions: 0, acquired: 0, waits: 0,
    connectionFailures: 0, connectionsLost: 0, acquireFailures: 0, idleClosed: 0,
  };
}

/** Every endpoint failed recently: one error naming each, with the code of the first failure. */
export function unreachableError(endpoints: readonly PoolerEndpoint[]): TransportError {
  const parts = endpoints.map((e) => `${e.label}: ${e.lastError?.message ?? 'not tried'}`);
  const first = endpoints.find((e) => e.lastError !== null)?.lastError;
  const code = first instanceof TransportError ? first.code : 'ECONNREFUSED';
  return new TransportError(`no quicpool pooler reachable (${parts.join('; ')})`, code, { cause: first ?? undefined });
}
