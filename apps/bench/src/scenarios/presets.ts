// The original experiment's load, for the `original` scenario (and anyone comparing with it).
// See ../shared/seeds/README.md: the article says 100 -> 5,000 q/s over 30 s, but its code's ramp
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
