// The admin console's commands. Result columns follow PgBouncer's SHOW output where PgBouncer has
// the same notion (column names, units: times in microseconds, addresses split into addr/port);
// quicpool-only facts (transport, QUIC) get their own columns or commands.
import { SQLSTATE } from '@quicpool/wire';
import type { PoolerView } from '../core/view.js';
import type { AdminColumnType, AdminCommands, AdminResult } from './console.js';

export interface QuicListenerRow {
  readonly listener: string;
  /** The worker whose endpoint this is (0 for the only one). */
  readonly worker: number;
  readonly connections: number;
  readonly streams: number;
  /** Handshakes begun; of them, those that failed (closed before completing: ALPN, certificate, timeout). */
  readonly handshakes: number;
  readonly handshakesCompleted: number;
  readonly handshakesFailed: number;
  readonly datagramsIn: number;
  readonly datagramsOut: number;
  readonly datagramsDropped: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** Smoothed RTT (ms, whole) over the open connections' active paths; null without connections. */
  readonly avgRttMs: number | null;
  readonly maxRttMs: number | null;
  /** Packets sent and declared lost by the open connections (connections that closed drop out). */
  readonly packetsSent: number;
  readonly packetsLost: number;
}

export interface ConfigRow {
  readonly key: string;
  readonly value: string;
  readonly default: string;
  /** Applied by RELOAD without a restart. */
  readonly changeable: boolean;
}

/** One worker of the daemon (SHOW WORKERS). */
export interface WorkerRow {
  readonly worker: number;
  /** Its thread (0: the main thread, with one worker). */
  readonly thread: number;
  readonly state: 'starting' | 'running' | 'stopping' | 'restarting';
  readonly clients: number;
  readonly servers: number;
  /** CPU time of its thread so far (ms); null while it cannot be asked. */
  readonly cpuMs: number | null;
  /** Times it was replaced after it died. */
  readonly restarts: number;
  /** CancelRequests that arrived at it (for its own sessions or, passed on, another worker's). */
  readonly cancelRequests: number;
  /** Cancels it sent to the server for its own sessions (wherever the request arrived). */
  readonly cancelsForwarded: number;
}

/**
 * The daemon as its admin console sees it: every answer is for the whole daemon (all workers),
 * wherever the console session runs.
 */
export interface AdminContext {
  view(): Promise<PoolerView>;
  quic(): Promise<readonly QuicListenerRow[]>;
  workers(): Promise<readonly WorkerRow[]>;
  /** PAUSE (every worker): resolves once no server connection is lent, or after admin.pause_timeout_ms. */
  pause(): Promise<boolean>;
  resume(): Promise<void>;
  config(): Promise<readonly ConfigRow[]>;
  /** Re-reads the config file; resolves with what was (not) applied, rejects when invalid. */
  reload(): Promise<string>;
  /** Starts a graceful shutdown (after the answer is sent). */
  shutdown(): void;
  /** KILL WORKER n: the worker fails as a crash would (its clients get 57P01) and is replaced. */
  killWorker(worker: number): Promise<string>;
}

type Col = readonly [string, AdminColumnType];
const rows = (columns: readonly Col[], data: readonly (readonly (string | number | null)[])[], tag = `SHOW`): AdminResult => ({
  kind: 'rows',
  columns: columns.map(([name, type]) => ({ name, type })),
  rows: data,
  tag,
});
const us = (ms: number): number => Math.round(ms * 1000);
const time = (epochMs: number): string => new Date(epochMs).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');

export const SHOW_COLUMNS = {
  pools: [['database', 'text'], ['user', 'text'], ['cl_active', 'int'], ['cl_waiting', 'int'], ['sv_active', 'int'], ['sv_idle', 'int'], ['sv_used', 'int'], ['sv_tested', 'int'], ['sv_login', 'int'], ['maxwait', 'int'], ['maxwait_us', 'int'], ['pool_mode', 'text'], ['host', 'text'], ['server_down', 'int']],
  stats: [['database', 'text'], ['user', 'text'], ['total_xact_count', 'int'], ['total_query_count', 'int'], ['total_received', 'int'], ['total_sent', 'int'], ['total_xact_time', 'int'], ['total_query_time', 'int'], ['total_wait_time', 'int'], ['avg_xact_time', 'int'], ['avg_query_time', 'int'], ['avg_wait_time', 'int']],
  clients: [['type', 'text'], ['user', 'text'], ['database', 'text'], ['state', 'text'], ['addr', 'text'], ['port', 'int'], ['local_addr', 'text'], ['local_port', 'int'], ['connect_time', 'text'], ['tls', 'text'], ['transport', 'text'], ['pinned', 'text'], ['worker', 'int']],
  servers: [['type', 'text'], ['user', 'text'], ['database', 'text'], ['state', 'text'], ['addr', 'text'], ['port', 'int'], ['local_addr', 'text'], ['local_port', 'int'], ['connect_time', 'text'], ['remote_pid', 'int'], ['worker', 'int'], ['host', 'text']],
  config: [['key', 'text'], ['value', 'text'], ['default', 'text'], ['changeable', 'text']],
  quic: [['listener', 'text'], ['worker', 'int'], ['connections', 'int'], ['streams', 'int'], ['handshakes', 'int'], ['datagrams_in', 'int'], ['datagrams_out', 'int'], ['datagrams_dropped', 'int'], ['bytes_in', 'int'], ['bytes_out', 'int'], ['early_data_sessions', 'int'], ['avg_rtt_ms', 'int'], ['max_rtt_ms', 'int'], ['packets_sent', 'int'], ['packets_lost', 'int'], ['handshakes_failed', 'int']],
  help: [['command', 'text'], ['description', 'text']],
  workers: [['worker', 'int'], ['thread', 'int'], ['state', 'text'], ['clients', 'int'], ['servers', 'int'], ['cpu_ms', 'int'], ['restarts', 'int'], ['cancel_requests', 'int'], ['cancels_forwarded', 'int']],
} as const satisfies Record<string, readonly Col[]>;

/** SHOW HELP: every command the console takes. */
const HELP: readonly (readonly [string, string])[] = [
  ['SHOW POOLS', 'clients and server connections per pool'],
  ['SHOW STATS', 'transactions, queries, bytes and times per pool'],
  ['SHOW CLIENTS', 'one row per client session'],
  ['SHOW SERVERS', 'one row per server connection'],
  ['SHOW CONFIG', 'the configuration: value, default, changeable by RELOAD'],
  ['SHOW QUIC', 'QUIC listeners: connections, streams, datagrams, RTT, loss'],
  ['SHOW WORKERS', 'the workers: thread, state, clients, servers, CPU'],
  ['SHOW HELP', 'this list'],
  ['PAUSE', 'lend no server connection until RESUME; answers once none is lent'],
  ['RESUME', 'end PAUSE'],
  ['RELOAD', 're-read the configuration file'],
  ['SHUTDOWN', 'stop the pooler gracefully'],
  ['KILL WORKER n', 'fail worker n as a crash would; it is replaced'],
];

function showPools(v: PoolerView): AdminResult {
  const clients = new Map<string, { active: number; waiting: number }>();
  for (const c of v.clients) {
    const key = `${c.database}\0${c.user}`;
    const n = clients.get(key) ?? { active: 0, waiting: 0 };
    if (c.state === 'waiting') n.waiting++;
    else if (c.state !== 'login') n.active++;
    clients.set(key, n);
  }
  return rows(
    SHOW_COLUMNS.pools,
    v.pools
      .filter((p) => !p.virtual)
      .map((p) => {
        const c = clients.get(`${p.database}\0${p.user}`) ?? { active: 0, waiting: 0 };
        const maxWaitUs = us(p.maxWaitMs);
        return [p.database, p.user, c.active, c.waiting, p.active, p.idle, 0, p.resetting, p.connecting, Math.floor(maxWaitUs / 1e6), maxWaitUs % 1e6, p.poolMode, p.serverHost, p.serverDown ? 1 : 0];
      }),
  );
}

function showStats(v: PoolerView): AdminResult {
  const data = v.pools
    .filter((p) => !p.virtual)
    .map((p) => [
      p.database,
      p.user,
      p.xactCountTotal,
      p.queryCountTotal,
      p.receivedBytesTotal,
      p.sentBytesTotal,
      us(p.xactTimeMsTotal),
      p.queryTimeUsTotal,
      us(p.waitTimeMsTotal),
      p.xactCountTotal === 0 ? 0 : us(p.xactTimeMsTotal / p.xactCountTotal),
      p.queryCountTotal === 0 ? 0 : Math.round(p.queryTimeUsTotal / p.queryCountTotal),
      p.xactCountTotal === 0 ? 0 : us(p.waitTimeMsTotal / p.xactCountTotal),
    ]);
  return rows(SHOW_COLUMNS.stats, data);
}

function showClients(v: PoolerView): AdminResult {
  const data = v.clients.map((c) => {
    const info = c.info;
    return ['C', c.user, c.database, c.state, info.remoteAddress, info.remotePort, info.localAddress, info.localPort, time(c.connectedAt), info.tls?.protocol ?? '', info.kind, c.pinned ?? '', c.worker];
  });
  return rows(SHOW_COLUMNS.clients, data);
}

function showServers(v: PoolerView): AdminResult {
  const data = v.servers.map((f) => {
    const i = f.info;
    return ['S', f.user, f.database, f.state === 'resetting' ? 'used' : f.state, i.remoteAddress, i.remotePort, i.localAddress, i.localPort, time(f.connectedAt), f.processId, f.worker, f.host];
  });
  return rows(SHOW_COLUMNS.servers, data);
}

async function showQuic(ctx: AdminContext): Promise<AdminResult> {
  const [listeners, v] = await Promise.all([ctx.quic(), ctx.view()]);
  // Early-data sessions are counted by the pooler, for the whole daemon: on the first row.
  return rows(SHOW_COLUMNS.quic, listeners.map((q, i) => [q.listener, q.worker, q.connections, q.streams, q.handshakes, q.datagramsIn, q.datagramsOut, q.datagramsDropped, q.bytesIn, q.bytesOut, i === 0 ? v.earlyDataSessionsTotal : 0, q.avgRttMs, q.maxRttMs, q.packetsSent, q.packetsLost, q.handshakesFailed]));
}

async function showWorkers(ctx: AdminContext): Promise<AdminResult> {
  return rows(SHOW_COLUMNS.workers, (await ctx.workers()).map((w) => [w.worker, w.thread, w.state, w.clients, w.servers, w.cpuMs === null ? null : Math.round(w.cpuMs), w.restarts, w.cancelRequests, w.cancelsForwarded]));
}

async function killWorker(ctx: AdminContext, which: string): Promise<AdminResult> {
  const n = /^\d+$/.test(which) ? Number(which) : NaN;
  if (!Number.isInteger(n)) return { kind: 'error', sqlstate: SQLSTATE.SYNTAX_ERROR, message: `KILL WORKER: expected a worker number, got ${which}` };
  try {
    await ctx.killWorker(n);
    return { kind: 'command', tag: 'KILL' };
  } catch (e) {
    return { kind: 'error', sqlstate: SQLSTATE.OBJECT_NOT_IN_PREREQUISITE_STATE, message: e instanceof Error ? e.message : String(e) };
  }
}

export function createAdminCommands(ctx: AdminContext): AdminCommands {
  return {
    async run(statement: string): Promise<AdminResult> {
      const words = statement.toLowerCase().split(/\s+/);
      const [verb, what, extra] = words;
      if (verb === 'kill' && what === 'worker' && extra !== undefined && words.length === 3) return killWorker(ctx, extra);
      if (extra !== undefined || (verb !== 'show' && what !== undefined)) {
        return { kind: 'error', sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED, message: `unsupported admin command: ${statement}` };
      }
      switch (verb) {
        case 'show':
          switch (what) {
            case 'pools':
              return showPools(await ctx.view());
            case 'stats':
              return showStats(await ctx.view());
            case 'clients':
              return showClients(await ctx.view());
            case 'servers':
              return showServers(await ctx.view());
            case 'config':
              return rows(SHOW_COLUMNS.config, (await ctx.config()).map((r) => [r.key, r.value, r.default, r.changeable ? 'yes' : 'no']));
            case 'quic':
              return showQuic(ctx);
            case 'workers':
              return showWorkers(ctx);
            case 'help':
              return rows(SHOW_COLUMNS.help, HELP);
            default:
              return { kind: 'error', sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED, message: `SHOW ${what ?? ''}: expected POOLS, STATS, CLIENTS, SERVERS, CONFIG, QUIC, WORKERS or HELP` };
          }
        case 'pause':
          // Like PgBouncer: PAUSE answers once no server connection is lent to a client.
          await ctx.pause();
          return { kind: 'command', tag: 'PAUSE' };
        case 'resume':
          await ctx.resume();
          return { kind: 'command', tag: 'RESUME' };
        case 'reload':
          try {
            await ctx.reload();
            return { kind: 'command', tag: 'RELOAD' };
          } catch (e) {
            return { kind: 'error', sqlstate: SQLSTATE.CONFIG_FILE_ERROR, message: `RELOAD failed, the old configuration stays: ${e instanceof Error ? e.message : String(e)}` };
          }
        case 'shutdown':
          setTimeout(() => ctx.shutdown(), 10);
          return { kind: 'command', tag: 'SHUTDOWN' };
        default:
          return { kind: 'error', sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED, message: `unknown admin command: ${statement} (SHOW HELP lists the commands)` };
      }
    },
  };
}
