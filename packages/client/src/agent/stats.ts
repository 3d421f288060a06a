// What the agent counts and the events it emits (the CLI logs and exports them).
import type { SessionManagerStats } from '../stats.js';

export interface AgentCounters {
  /** Local connections accepted (TCP and unix). */
  accepted: number;
  /** Local sessions that got a QUIC stream and were forwarded. */
  sessions: number;
  /** StartupMessages that left before the QUIC handshake was confirmed (0-RTT early data). */
  earlyStartups: number;
  /** CancelRequests carried to the pooler on a fresh stream. */
  cancels: number;
  /** Local sessions the agent answered itself (fast start), before the pooler's answer. */
  fastStarts: number;
  /** Fast-started sessions whose login the pooler refused (its error reached the client in place of the first answer). */
  fastStartsRefused: number;
  /** CancelRequests for a fast-started session that waited for the pooler's key. */
  cancelsHeld: number;
  /** Local sessions that passed the agent's local password check. */
  localLogins: number;
  /** SSLRequest / GSSENCRequest answered 'N'. */
  encryptionDeclined: number;
  /** Local sessions refused, by SQLSTATE: 53300 (limits), 08001 (no pooler), 08P01 (bad startup), 57P01 (shutting down), 28000/28P01 (local checks). */
  refused: Record<string, number>;
  /** Local sessions whose QUIC stream failed under them (the pooler or the connection went away). */
  streamsLost: number;
  /** Local clients that went away without Terminate (their stream was reset). */
  clientsVanished: number;
  /** Times reading a local client paused because its QUIC stream's buffer was full (backpressure up). */
  pausedUp: number;
  /** Times reading a QUIC stream paused because its local client's socket buffer was full (backpressure down). */
  pausedDown: number;
  /** Bytes from local clients to the poolers. */
  bytesUp: number;
  /** Bytes from the poolers to local clients. */
  bytesDown: number;
}

export interface AgentStats extends AgentCounters {
  /** Local sessions carried over a QUIC stream right now. */
  readonly active: number;
  /** Local sessions waiting for a QUIC stream right now. */
  readonly waiting: number;
  readonly manager: SessionManagerStats;
}

/** How a carried session ended: 'refusedByPooler' is a fast start whose login the pooler refused. */
export type SessionEnd = 'clean' | 'vanished' | 'streamLost' | 'drained' | 'refusedByPooler';

export type RefusalCode = '53300' | '08001' | '08006' | '08P01' | '57P01' | '28000' | '28P01';

export type AgentEvent =
  | { readonly type: 'sessionStarted'; readonly user: string; readonly database: string; readonly peer: string; readonly early: boolean }
  | { readonly type: 'sessionEnded'; readonly user: string; readonly database: string; readonly peer: string; readonly how: SessionEnd; readonly durationMs: number }
  | { readonly type: 'refused'; readonly sqlstate: RefusalCode; readonly reason: string; readonly peer: string; readonly user: string | null }
  | { readonly type: 'cancel'; readonly peer: string };

export interface AgentEvents {
  event: [AgentEvent];
}

export function emptyAgentCounters(): AgentCounters {
  return {
    accepted: 0, sessions: 0, earlyStartups: 0, localLogins: 0, cancels: 0, fastStarts: 0, fastStartsRefused: 0, cancelsHeld: 0, encryptionDeclined: 0, refused: {},
    streamsLost: 0, clientsVanished: 0, pausedUp: 0, pausedDown: 0, bytesUp: 0, bytesDown: 0,
  };
}
