// (a) Cold start to first row through the WAN emulator: a client that has nothing open sends
// `select 1` and waits for its row, over TCP+TLS (TCP handshake, SSLRequest, TLS, StartupMessage,
// query), a fresh QUIC connection (full handshake) and a QUIC connection resumed with a session
// ticket (0-RTT). Counted in ms and in round trips of the path's measured RTT.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { QuicClient, SessionManager, StartupHints } from '@quicpool/client';
import type { FastStartMode, SessionManagerOptions } from '@quicpool/client';
import { QuicTicketStore } from '@quicpool/transport';
import type { BenchTargets, ClientMemory, Login } from './connect.js';
import { quicManagerOptions, quicPool, tlsClientConfig } from './connect.js';
import { median } from '../report/median.js';

/**
 * quic0rttPgStartup: 0-RTT with `fastStart: false` (pg's own startup: the query waits for ReadyForQuery).
 * quic0rttReadOnly: 0-RTT with `fastStart: 'early-data'` (StartupMessage and query in the 0-RTT
 * flight) to a pooler with `quic.early_data = "read-only"` (answers before the handshake is confirmed).
 */
export type ColdPath = 'tcpTls' | 'quic' | 'quic0rtt' | 'quic0rttPgStartup' | 'quic0rttReadOnly';

export interface ColdStartResult {
  readonly trials: number;
  /** Median ms to the first row, per path. */
  readonly ms: Record<ColdPath, number>;
  /** ms / the path's measured RTT. */
  readonly rtts: Record<ColdPath, number>;
  /** Every 0-RTT trial really resumed (ticket accepted) and its stream went out as early data (read-only path included). */
  readonly resumedEveryTime: boolean;
  readonly earlyDataEveryTime: boolean;
  /** Every trial's first query left right behind the last login message. */
  readonly pipelined: { readonly quic: boolean; readonly quic0rtt: boolean };
}

export interface PathRtts {
  /** Median `select 1` round trip on an open session, TCP+TLS path. */
  readonly tcpMs: number;
  /** The same on the QUIC path. */
  readonly quicMs: number;
}

const QUERY = 'select 1 as x';

/** The median of trials, NaN when there were none. */
export const medianMs = (values: readonly number[]): number => median(values) ?? Number.NaN;

/** What one round trip costs on each path: `select 1` on an already open session, median of 15. */
export async function measurePathRtts(t: BenchTargets, login: Login): Promise<PathRtts> {
  const timeQueries = async (query: () => Promise<unknown>): Promise<number> => {
    await query();
    const samples: number[] = [];
    for (let i = 0; i < 15; i++) {
      const t0 = performance.now();
      await query();
      samples.push(performance.now() - t0);
    }
    return medianMs(samples);
  };
  const tcp = new pg.Client(tlsClientConfig(t, login));
  await tcp.connect();
  const tcpMs = await timeQueries(() => tcp.query(QUERY));
  await tcp.end();
  const manager = new SessionManager(quicManagerOptions(t, { maxConnections: 1 }));
  const quic = new QuicClient({ ...login, sessions: manager });
  await quic.connect();
  const quicMs = await timeQueries(() => quic.query(QUERY));
  await quic.end();
  await manager.close();
  return { tcpMs, quicMs };
}

async function tcpTlsFirstRow(t: BenchTargets, login: Login): Promise<number> {
  const client = new pg.Client(tlsClientConfig(t, login));
  const t0 = performance.now();
  await client.connect();
  await client.query(QUERY);
  const ms = performance.now() - t0;
  await client.end();
  return ms;
}

export interface QuicFirstRow {
  readonly ms: number;
  readonly resumed: boolean;
  readonly earlyData: boolean;
  /** The first query left right behind the last login message (QuicClient's fast start). */
  readonly pipelined: boolean;
}

/**
 * A new manager (nothing open) with what the client remembers: nothing = a client that never
 * talked to this pooler (full handshake); the previous run's ticket and login hints = 0-RTT.
 */
async function quicFirstRow(t: BenchTargets, login: Login, memory: ClientMemory, fastStart: FastStartMode = true, extra: Partial<SessionManagerOptions> = {}): Promise<QuicFirstRow> {
  const { tickets } = memory;
  const manager = new SessionManager(quicManagerOptions(t, { maxConnections: 1, ...extra }, memory));
  const pool = quicPool(login, 1, manager, fastStart);
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
    for (let waited = 0; tickets.size === 0 && waited < 3_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    return { ms, resumed: manager.stats().resumptions > 0, earlyData, pipelined };
  } finally {
    await pool.end();
    await manager.close();
  }
}

/**
 * The read-only 0-RTT path: a first connection to `readOnly` (a pooler with `quic.early_data =
 * "read-only"`) for its ticket and login hint, then a new client on a connection resumed with that
 * ticket, `fastStart: 'early-data'` (StartupMessage and the query in the 0-RTT flight): the resumed
 * one's first row (its `resumed` and `earlyData` say whether it really was 0-RTT). `extra`: more manager options (a client certificate for `cert` logins).
 */
export async function readOnlyZeroRttFirstRow(readOnly: BenchTargets, login: Login, extra: Partial<SessionManagerOptions> = {}): Promise<QuicFirstRow> {
  const memory: ClientMemory = { tickets: new QuicTicketStore(), hints: new StartupHints() };
  await quicFirstRow(readOnly, login, memory, true, extra);
  return quicFirstRow(readOnly, login, memory, 'early-data', extra);
}

/**
 * `trials` rounds of (TCP+TLS, QUIC full, QUIC 0-RTT, 0-RTT pg startup, 0-RTT read-only), interleaved;
 * medians. `readOnly`: the same path to a pooler with the read-only 0-RTT policy.
 */
export async function measureColdStart(t: BenchTargets, readOnly: BenchTargets, login: Login, rtt: PathRtts, trials: number, onTrial: (line: string) => void = () => undefined): Promise<ColdStartResult> {
  const tcp: number[] = [];
  const full: number[] = [];
  const zero: number[] = [];
  const zeroPg: number[] = [];
  const zeroRo: number[] = [];
  let resumedEveryTime = true;
  let earlyDataEveryTime = true;
  let pipelinedFull = true;
  let pipelinedZero = true;
  for (let i = 0; i < trials; i++) {
    tcp.push(await tcpTlsFirstRow(t, login));
    const memory: ClientMemory = { tickets: new QuicTicketStore(), hints: new StartupHints() };
    const fresh = await quicFirstRow(t, login, memory);
    full.push(fresh.ms);
    if (memory.tickets.size === 0) throw new Error('the pooler sent no session ticket: 0-RTT cannot be measured');
    const pgStartup = await quicFirstRow(t, login, memory, false);
    zeroPg.push(pgStartup.ms);
    const resumed = await quicFirstRow(t, login, memory);
    zero.push(resumed.ms);
    const ro = await readOnlyZeroRttFirstRow(readOnly, login);
    zeroRo.push(ro.ms);
    resumedEveryTime &&= resumed.resumed && pgStartup.resumed && ro.resumed;
    earlyDataEveryTime &&= resumed.earlyData && pgStartup.earlyData && ro.earlyData;
    onTrial(`  trial ${i + 1}: TCP+TLS ${tcp.at(-1)!.toFixed(0)} ms, QUIC full ${fresh.ms.toFixed(0)} ms, 0-RTT ${resumed.ms.toFixed(0)} ms, 0-RTT pg startup ${pgStartup.ms.toFixed(0)} ms, 0-RTT read-only ${ro.ms.toFixed(0)} ms`);
    pipelinedFull &&= fresh.pipelined;
    pipelinedZero &&= resumed.pipelined;
  }
  const ms = { tcpTls: medianMs(tcp), quic: medianMs(full), quic0rtt: medianMs(zero), quic0rttPgStartup: medianMs(zeroPg), quic0rttReadOnly: medianMs(zeroRo) };
  return {
    trials,
    ms,
    rtts: {
      tcpTls: ms.tcpTls / rtt.tcpMs,
      quic: ms.quic / rtt.quicMs,
      quic0rtt: ms.quic0rtt / rtt.quicMs,
      quic0rttPgStartup: ms.quic0rttPgStartup / rtt.quicMs,
      quic0rttReadOnly: ms.quic0rttReadOnly / rtt.quicMs,
    },
    resumedEveryTime,
    earlyDataEveryTime,
    pipelined: { quic: pipelinedFull, quic0rtt: pipelinedZero },
  };
}
