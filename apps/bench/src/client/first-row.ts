// (a) Cold start to first row across the WAN path: a client with nothing open sends `select 1` over TCP+TLS, a fresh QUIC
// connection or one resumed with a ticket (0-RTT), and waits for the row: in ms and in the path's measured RTTs.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { QuicClient, QuicPool, SessionManager, StartupHints } from '@quicpool/client';
import type { FastStartMode, SessionManagerOptions } from '@quicpool/client';
import { QuicTicketStore } from '@quicpool/transport';
import type { BenchTargets, Login } from './connect.js';
import { firstRowMs, quicManagerOptions, tlsClientConfig } from './connect.js';
import { median } from '../report/median.js';

// quic0rttPgStartup: 0-RTT with `fastStart: false` (the query waits for ReadyForQuery); quic0rttReadOnly:
// `fastStart: 'early-data'` to a pooler with `quic.early_data = "read-only"` (answers before the handshake ends).
export const COLD_PATHS = ['tcpTls', 'quic', 'quic0rtt', 'quic0rttPgStartup', 'quic0rttReadOnly'] as const;
export type ColdPath = (typeof COLD_PATHS)[number];

/** A value per key, in the order of `keys`. */
export const byKey = <K extends string, V>(keys: readonly K[], f: (k: K) => V): Record<K, V> =>
  Object.fromEntries(keys.map((k) => [k, f(k)])) as Record<K, V>;
/** A figure per cold-start path, in COLD_PATHS order. */
export const byColdPath = <V>(f: (p: ColdPath) => V): Record<ColdPath, V> => byKey(COLD_PATHS, f);

export type ColdStartResult = Awaited<ReturnType<typeof measureColdStart>>;
export type PathRtts = Awaited<ReturnType<typeof measurePathRtts>>;

const QUERY = 'select 1 as x';

/** The median of trials, NaN when there were none. */
export const medianMs = (values: readonly number[]): number => median(values) ?? Number.NaN;

/** One round trip on an open session: the median of 15 runs of `query`. */
export async function roundTripMs(query: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < 15; i++) {
    const t0 = performance.now();
    await query();
    samples.push(performance.now() - t0);
  }
  return medianMs(samples);
}

/** What one round trip costs on each path: `select 1` on an already open session (one untimed first), ms. */
export async function measurePathRtts(t: BenchTargets, login: Login) {
  const rttOn = async (c: pg.Client | QuicClient): Promise<number> => {
    await c.connect();
    await c.query(QUERY);
    const ms = await roundTripMs(() => c.query(QUERY));
    await c.end();
    return ms;
  };
  const tcpMs = await rttOn(new pg.Client(tlsClientConfig(t, login)));
  const manager = new SessionManager(quicManagerOptions(t, { maxConnections: 1 }));
  const quicMs = await rttOn(new QuicClient({ ...login, sessions: manager }));
  await manager.close();
  return { tcpMs, quicMs };
}

/** What a client keeps from its previous connections to a pooler: session tickets and login hints (manager options). */
const newMemory = () => ({ tickets: new QuicTicketStore(), startupHints: new StartupHints() });

/** A first row on a new manager with what the client remembers: nothing (full handshake), or a ticket and hints (0-RTT). */
async function quicFirstRow(
  t: BenchTargets, login: Login, memory: ReturnType<typeof newMemory>, fastStart: FastStartMode = true, extra: Partial<SessionManagerOptions> = {},
) {
  const manager = new SessionManager(quicManagerOptions(t, { maxConnections: 1, ...memory, ...extra }));
  const pool = new QuicPool({ ...login, max: 1, idleTimeoutMillis: 0, quic: manager, fastStart });
  try {
    const t0 = performance.now();
    const client = await pool.connect();
    await client.query(QUERY);
    const ms = performance.now() - t0;
    const quicClient = client as unknown as QuicClient;
    const earlyData = quicClient.sessionStream?.info.quic?.earlyData === true;
    const pipelined = quicClient.startupPipelined === true;
    client.release();
    // The handshake is done by now (the row came back); the ticket for the next run follows it.
    for (let waited = 0; memory.tickets.size === 0 && waited < 3_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    // pipelined: the first query left right behind the last login message (QuicClient's fast start).
    return { ms, resumed: manager.stats().resumptions > 0, earlyData, pipelined };
  } finally {
    await pool.end();
    await manager.close();
  }
}

// The read-only 0-RTT path: a first connection to `readOnly` for its ticket and login hint, then the first row of a client
// resumed with them, `fastStart: 'early-data'` (`resumed`, `earlyData`: was it 0-RTT); `extra`: e.g. a client certificate.
export async function readOnlyZeroRttFirstRow(readOnly: BenchTargets, login: Login, extra: Partial<SessionManagerOptions> = {}) {
  const memory = newMemory();
  await quicFirstRow(readOnly, login, memory, true, extra);
  return quicFirstRow(readOnly, login, memory, 'early-data', extra);
}

/** `trials` interleaved rounds of every cold path, medians; `readOnly`: the pooler with the read-only 0-RTT policy. */
export async function measureColdStart(t: BenchTargets, readOnly: BenchTargets, login: Login, rtt: PathRtts, trials: number, onTrial: (line: string) => void) {
  const samples = byColdPath((): number[] => []);
  let resumedEveryTime = true;
  let earlyDataEveryTime = true;
  const pipelined = { quic: true, quic0rtt: true };
  for (let i = 0; i < trials; i++) {
    const tcp = await firstRowMs(tlsClientConfig(t, login), QUERY);
    const memory = newMemory();
    const fresh = await quicFirstRow(t, login, memory);
    if (memory.tickets.size === 0) throw new Error('the pooler sent no session ticket: 0-RTT cannot be measured');
    const pgStartup = await quicFirstRow(t, login, memory, false);
    const resumed = await quicFirstRow(t, login, memory);
    const ro = await readOnlyZeroRttFirstRow(readOnly, login);
    const trial = { tcpTls: tcp, quic: fresh.ms, quic0rtt: resumed.ms, quic0rttPgStartup: pgStartup.ms, quic0rttReadOnly: ro.ms };
    for (const p of COLD_PATHS) samples[p].push(trial[p]);
    resumedEveryTime &&= resumed.resumed && pgStartup.resumed && ro.resumed;
    earlyDataEveryTime &&= resumed.earlyData && pgStartup.earlyData && ro.earlyData;
    const f = (ms: number): string => `${ms.toFixed(0)} ms`;
    onTrial(`  trial ${i + 1}: TCP+TLS ${f(tcp)}, QUIC full ${f(fresh.ms)}, 0-RTT ${f(resumed.ms)}, 0-RTT pg startup ${f(pgStartup.ms)}, 0-RTT read-only ${f(ro.ms)}`);
    pipelined.quic &&= fresh.pipelined;
    pipelined.quic0rtt &&= resumed.pipelined;
  }
  const ms = byColdPath((p) => medianMs(samples[p]));
  const rtts = byColdPath((p) => ms[p] / (p === 'tcpTls' ? rtt.tcpMs : rtt.quicMs));
  // resumedEveryTime, earlyDataEveryTime: every 0-RTT trial (read-only path included) resumed and sent its stream as early data;
  // pipelined: every trial's first query left right behind the last login message.
  return { trials, ms, rtts, resumedEveryTime, earlyDataEveryTime, pipelined };
}
