// The admin console's commands. Result columns follow PgBouncer's SHOW output where PgBouncer has
// the same notion (column names, units: times in microseconds, addresses split into addr/port);
// quicpool-only facts (transport, QUIC) get their own columns or commands.
import { SQLSTATE } from '@quicpool/wire';
import type { Pooler } from '../server.js';
import type { AdminColumnType, AdminCommands, AdminResult } from './console-server.js';

export interface QuicListenerRow {
  readonly listener: string;
  readonly connections: number;
  readonly streams: number;
  readonly handshakes: number;
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

/** What the daemon provides beyond the pooler itself. */
export interface AdminContext {
  readonly pooler: Pooler;
  quic(): readonly QuicListenerRow[];
  config(): readonly ConfigRow[];
  /** Re-reads the config file; resolves with what was (not) applied, rejects when invalid. */
  reload(): Promise<string>;
  /** Starts a graceful shutdown (after the answer is sent). */
  shutdown(): void;
  /** Longest PAUSE waits for running transactions (ms). */
  readonly pauseTimeoutMs: number;
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
  pools: [['database', 'text'], ['user', 'text'], ['cl_active', 'int'], ['cl_waiting', 'int'], ['sv_active', 'int'], ['sv_idle', 'int'], ['sv_used', 'int'], ['sv_tested', 'int'], ['sv_login', 'int'], ['maxwait', 'int'], ['maxwait_us', 'int'], ['pool_mode', 'text']],
  stats: [['database', 'text'], ['user', 'text'], ['total_xact_count', 'int'], ['total_query_count', 'int'], ['total_received', 'int'], ['total_sent', 'int'], ['total_xact_time', 'int'], ['total_query_time', 'int'], ['total_wait_time', 'int'], ['avg_xact_time', 'int'], ['avg_query_time', 'int'], ['avg_wait_time', 'int']],
  clients: [['type', 'text'], ['user', 'text'], ['database', 'text'], ['state', 'text'], ['addr', 'text'], ['port', 'int'], ['local_addr', 'text'], ['local_port', 'int'], ['connect_time', 'text'], ['tls', 'text'], ['transport', 'text']],
  servers: [['type', 'text'], ['user', 'text'], ['database', 'text'], ['state', 'text'], ['addr', 'text'], ['port', 'int'], ['local_addr', 'text'], ['local_port', 'int'], ['connect_time', 'text'], ['remote_pid', 'int']],
  config: [['key', 'text'], ['value', 'text'], ['default', 'text'], ['changeable', 'text']],
  quic: [['listener', 'text'], ['connections', 'int'], ['streams', 'int'], ['handshakes', 'int'], ['datagrams_in', 'int'], ['datagrams_out', 'int'], ['datagrams_dropped', 'int'], ['bytes_in', 'int'], ['bytes_out', 'int'], ['early_data_sessions', 'int'], ['avg_rtt_ms', 'int'], ['max_rtt_ms', 'int'], ['packets_sent', 'int'], ['packets_lost', 'int']],
} as const satisfies Record<string, readonly Col[]>;

function showPools(ctx: AdminContext): AdminResult {
  const p = ctx.pooler;
  const mode = p.config.pool.poolMode;
  return rows(
    SHOW_COLUMNS.pools,
    p.stats().pools.map((s) => [s.database, s.user, s.clients - s.waiting, s.waiting, s.active, s.idle, 0, s.resetting, s.connecting, 0, 0, mode]),
  );
}

function showStats(ctx: AdminContext): AdminResult {
  // Query and byte totals are the pools' own (PoolStats); transaction and wait times the control's counters.
  const traffic = new Map(ctx.pooler.stats().pools.map((p) => [`${p.database}\0${p.user}`, p]));
  const data = [...ctx.pooler.control.counters.values()].map((c) => {
    const t = traffic.get(`${c.database}\0${c.user}`);
    const queries = t?.queryCountTotal ?? 0;
    const queryUs = t?.queryTimeUsTotal ?? 0;
    return [
      c.database,
      c.user,
      c.xactCount,
      queries,
      t?.receivedBytesTotal ?? 0,
      t?.sentBytesTotal ?? 0,
      us(c.xactMsTotal),
      queryUs,
      us(c.waitMsTotal),
      c.xactCount === 0 ? 0 : us(c.xactMsTotal / c.xactCount),
      queries === 0 ? 0 : Math.round(queryUs / queries),
      c.waitCount === 0 ? 0 : us(c.waitMsTotal / c.waitCount),
    ];
  });
  return rows(SHOW_COLUMNS.stats, data);
}

function showClients(ctx: AdminContext): AdminResult {
  const control = ctx.pooler.control;
  const data = [...control.clients()].map((c) => {
    const facts = control.clientFactsOf(c);
    const s = c.session;
    const state = s.phase === 'startup' || s.phase === 'authenticating' || s.phase === 'connecting' ? 'login' : c.backend !== null ? 'active' : s.busy ? 'waiting' : 'idle';
    const info = facts?.info;
    return ['C', s.user, s.database, state, info?.remoteAddress ?? '', info?.remotePort ?? 0, info?.localAddress ?? '', info?.localPort ?? 0, facts === undefined ? '' : time(facts.connectedAt), info?.tls?.protocol ?? '', info?.kind ?? ''];
  });
  return rows(SHOW_COLUMNS.clients, data);
}

function showServers(ctx: AdminContext): AdminResult {
  const control = ctx.pooler.control;
  const lent = new Set<unknown>();
  for (const c of control.clients()) if (c.backend !== null) lent.add(c.backend.socket);
  const data = [...control.servers]
    .filter((f) => f.database !== control.adminRoute?.database)
    .map((f) => {
      const sock = f.connection.socket;
      return ['S', f.user, f.database, lent.has(sock) ? 'active' : 'idle', sock.remoteAddress ?? '', sock.remotePort ?? 0, sock.localAddress ?? '', sock.localPort ?? 0, time(f.connectedAt), f.connection.processId];
    });
  return rows(SHOW_COLUMNS.servers, data);
}

async function pause(ctx: AdminContext): Promise<AdminResult> {
  const control = ctx.pooler.control;
  control.pause();
  // Like PgBouncer: PAUSE answers once no server connection is lent to a client.
  const deadline = Date.now() + ctx.pauseTimeoutMs;
  while (control.activeServers() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return { kind: 'command', tag: 'PAUSE' };
}

export function createAdminCommands(ctx: AdminContext): AdminCommands {
  return {
    async run(statement: string): Promise<AdminResult> {
      const words = statement.toLowerCase().split(/\s+/);
      const [verb, what, extra] = words;
      if (extra !== undefined || (verb !== 'show' && what !== undefined)) {
        return { kind: 'error', sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED, message: `unsupported admin command: ${statement}` };
      }
      switch (verb) {
        case 'show':
          switch (what) {
            case 'pools':
              return showPools(ctx);
            case 'stats':
              return showStats(ctx);
            case 'clients':
              return showClients(ctx);
            case 'servers':
              return showServers(ctx);
            case 'config':
              return rows(SHOW_COLUMNS.config, ctx.config().map((r) => [r.key, r.value, r.default, r.changeable ? 'yes' : 'no']));
            case 'quic':
              return rows(SHOW_COLUMNS.quic, ctx.quic().map((q) => [q.listener, q.connections, q.streams, q.handshakes, q.datagramsIn, q.datagramsOut, q.datagramsDropped, q.bytesIn, q.bytesOut, ctx.pooler.control.earlyDataSessions, q.avgRttMs, q.maxRttMs, q.packetsSent, q.packetsLost]));
            default:
              return { kind: 'error', sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED, message: `SHOW ${what ?? ''}: expected POOLS, STATS, CLIENTS, SERVERS, CONFIG or QUIC` };
          }
        case 'pause':
          return pause(ctx);
        case 'resume':
          ctx.pooler.control.resume();
          return { kind: 'command', tag: 'RESUME' };
        case 'reload':
          try {
            await ctx.reload();
            return { kind: 'command', tag: 'RELOAD' };
          } catch (e) {
            return { kind: 'error', sqlstate: 'F0000' /* config_file_error */, message: `RELOAD failed, the old configuration stays: ${e instanceof Error ? e.message : String(e)}` };
          }
        case 'shutdown':
          setTimeout(() => ctx.shutdown(), 10);
          return { kind: 'command', tag: 'SHUTDOWN' };
        default:
          return { kind: 'error', sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED, message: `unknown admin command: ${statement} (SHOW, PAUSE, RESUME, RELOAD, SHUTDOWN)` };
      }
    },
  };
}
