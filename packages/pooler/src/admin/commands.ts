// The admin console's commands. Result columns follow PgBouncer's SHOW output where PgBouncer has
// the same notion (column names, units: times in microseconds, addresses split into addr/port);
// quicpool-only facts (transport, QUIC) get their own columns or commands.
import { SQLSTATE } from '@quicpool/wire';
import type { Pooler } from '../server.js';
import type { AdminColumnType, AdminCommands, AdminResult } from './console.js';

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
  clients: [['type', 'text'], ['user', 'text'], ['database', 'text'], ['state', 'text'], ['addr', 'text'], ['port', 'int'], ['local_addr', 'text'], ['local_port', 'int'], ['connect_time', 'text'], ['tls', 'text'], ['transport', 'text'], ['pinned', 'text']],
  servers: [['type', 'text'], ['user', 'text'], ['database', 'text'], ['state', 'text'], ['addr', 'text'], ['port', 'int'], ['local_addr', 'text'], ['local_port', 'int'], ['connect_time', 'text'], ['remote_pid', 'int']],
  config: [['key', 'text'], ['value', 'text'], ['default', 'text'], ['changeable', 'text']],
  quic: [['listener', 'text'], ['connections', 'int'], ['streams', 'int'], ['handshakes', 'int'], ['datagrams_in', 'int'], ['datagrams_out', 'int'], ['datagrams_dropped', 'int'], ['bytes_in', 'int'], ['bytes_out', 'int'], ['early_data_sessions', 'int'], ['avg_rtt_ms', 'int'], ['max_rtt_ms', 'int'], ['packets_sent', 'int'], ['packets_lost', 'int']],
} as const satisfies Record<string, readonly Col[]>;

function showPools(ctx: AdminContext): AdminResult {
  const v = ctx.pooler.view();
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
        return [p.database, p.user, c.active, c.waiting, p.active, p.idle, 0, p.resetting, p.connecting, Math.floor(maxWaitUs / 1e6), maxWaitUs % 1e6, p.poolMode];
      }),
  );
}

function showStats(ctx: AdminContext): AdminResult {
  const data = ctx.pooler
    .view()
    .pools.filter((p) => !p.virtual)
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

function showClients(ctx: AdminContext): AdminResult {
  const data = ctx.pooler.view().clients.map((c) => {
    const info = c.info;
    return ['C', c.user, c.database, c.state, info.remoteAddress, info.remotePort, info.localAddress, info.localPort, time(c.connectedAt), info.tls?.protocol ?? '', info.kind, c.pinned ?? ''];
  });
  return rows(SHOW_COLUMNS.clients, data);
}

function showServers(ctx: AdminContext): AdminResult {
  const data = ctx.pooler.view().servers.map((f) => {
    const i = f.info;
    return ['S', f.user, f.database, f.state === 'resetting' ? 'used' : f.state, i.remoteAddress, i.remotePort, i.localAddress, i.localPort, time(f.connectedAt), f.processId];
  });
  return rows(SHOW_COLUMNS.servers, data);
}

async function pause(ctx: AdminContext): Promise<AdminResult> {
  // Like PgBouncer: PAUSE answers once no server connection is lent to a client.
  await ctx.pooler.pause(ctx.pauseTimeoutMs);
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
              return rows(SHOW_COLUMNS.quic, ctx.quic().map((q) => [q.listener, q.connections, q.streams, q.handshakes, q.datagramsIn, q.datagramsOut, q.datagramsDropped, q.bytesIn, q.bytesOut, ctx.pooler.view().earlyDataSessionsTotal, q.avgRttMs, q.maxRttMs, q.packetsSent, q.packetsLost]));
            default:
              return { kind: 'error', sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED, message: `SHOW ${what ?? ''}: expected POOLS, STATS, CLIENTS, SERVERS, CONFIG or QUIC` };
          }
        case 'pause':
          return pause(ctx);
        case 'resume':
          ctx.pooler.resume();
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
          return { kind: 'error', sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED, message: `unknown admin command: ${statement} (SHOW, PAUSE, RESUME, RELOAD, SHUTDOWN)` };
      }
    },
  };
}
