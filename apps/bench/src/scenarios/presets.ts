// The original experiment's load, for the `original` scenario (and anyone comparing with it).
// See docs/benchmark.md (--original-exact): the article says 100 -> 5,000 q/s over 30 s, but its code's ramp
// (a bracket slip) went from about 0 to about 10,000 q/s in 500 ms ticks, and its client prepared
// every statement (two round trips per query).
import type { Ramp } from '../load/schedule.js';

/** What the article describes. */
export const ARTICLE_RAMP: Ramp = { startRate: 100, endRate: 5_000, durationMs: 30_000 };

/** What the original code really offered (--original-exact): ~150,000 queries in 30 s. */
export const ORIGINAL_EXACT_RAMP: Ramp = { startRate: 0, endRate: 10_000, durationMs: 30_000 };
export const ORIGINAL_EXACT_TICK_MS = 500;

/** Sessions of the original's two sides: TCP 500 sessions with TLS; QUIC 50 connections x 40 streams. */
export const ORIGINAL_TCP_SESSIONS = 500;
export const ORIGINAL_QUIC_CONNECTIONS = 50;
export const ORIGINAL_QUIC_STREAMS_PER_CONNECTION = 40;

/** Quick mode (--quick): the same shapes, shortened. */
export const QUICK_ARTICLE_RAMP: Ramp = { startRate: 100, endRate: 5_000, durationMs: 4_000 };
export const QUICK_ORIGINAL_EXACT_RAMP: Ramp = { startRate: 0, endRate: 10_000, durationMs: 4_000 };
/** Quick mode runs `fair` and `loss` with this share of the sessions (500 vs 25 x 20): opening 2,000 TLS sessions twice per scenario alone would take most of the 3 minutes. */
export const QUICK_FAIR_SESSION_SCALE = 0.25;

/** The emulated WAN: 15 ms each way, 30 ms RTT, as the article. */
export const WAN_ONE_WAY_DELAY_MS = 15;

/** `fair` and `loss`: sessions on each side (TCP connections; QUIC 50 x 40 streams). */
export const FAIR_SESSIONS = 2_000;
/** `sockets`: TCP connections, equal to QUIC's connection count. */
export const SOCKETS_TCP_CONNECTIONS = 50;
/** `loss`: share of packets dropped per direction. */
export const LOSS_RATE = 0.01;
