// The client variants that go through quicpool: node-postgres over TCP (TLS after SSLRequest, as
// the original's TCP side) and node-postgres sessions carried as QUIC streams by @quicpool/client's
// SessionManager. Each prepare() starts a fresh pooler process, a WAN emulator process (or, for
// `lossy`, the emulator inside a network namespace with real packet drops), and tears all of it down
// in dispose(). Both sides use the same session pool, queue bound, deadlines and query.
import { readdirSync, readFileSync } from 'node:fs';
import type { ClientConfig } from 'pg';
import { pgStream, SessionManager } from '@quicpool/client';
import { generateDevCertificates } from '@quicpool/transport';
import type { LossyNetns } from '../../netns/lossy-netns.js';
import { createLossyNetns } from '../../netns/lossy-netns.js';
import { openPgSession } from '../../load/pg-session.js';
import { pgPoolVariant } from '../../load/pg-pool-variant.js';
import { PooledVariant } from '../../load/session-pool.js';
import type { ClientVariant } from '../../load/variant.js';
import type { PreparedVariant, ScenarioContext, VariantPlan } from '../types.js';
import type { WorkerChild } from './child.js';
import { startWorker } from './child.js';
import type { PoolerReady, PoolerWorkerConfig } from './pooler-worker.js';
import type { WanReady, WanWorkerConfig } from './wan-worker.js';

/** The client-to-pooler hop: emulated WAN delay, none, or WAN delay plus real loss. */
export type PathSpec = { kind: 'wan'; delayMs: number } | { kind: 'lan' } | { kind: 'lossy'; delayMs: number; lossRate: number };

export interface PgTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

/** The context's Postgres as plain fields (the pooler needs them; --pg gives a URL). */
export function pgTarget(config: ClientConfig): PgTarget {
  if (config.connectionString !== undefined) {
    const url = new URL(config.connectionString);
    return {
      host: decodeURIComponent(url.hostname) || '127.0.0.1',
      port: Number(url.port || 5432),
      user: decodeURIComponent(url.username) || 'postgres',
      password: decodeURIComponent(url.password),
      database: decodeURIComponent(url.pathname.slice(1)) || decodeURIComponent(url.username) || 'postgres',
    };
  }
  const password = typeof config.password === 'string' ? config.password : '';
  return { host: config.host ?? '127.0.0.1', port: config.port ?? 5432, user: config.user ?? 'postgres', password, database: config.database ?? config.user ?? 'postgres' };
}

export const POOL_SIZE = 20;
const SERVER_NAME = 'localhost';

interface Stack {
  /** Where the client connects. */
  host: string;
  port: number;
  caPem: string;
  poolerPid: number;
  wanPid: number | null;
  rttMs: number | null;
  netns: LossyNetns | null;
  dispose(): Promise<void>;
}

async function startStack(ctx: ScenarioContext, protocol: 'tcp' | 'quic', path: PathSpec, tls: boolean): Promise<Stack> {
  if (ctx.script === null) throw new Error('quicpool variants need the bench program (ctx.script) to start the pooler and the WAN emulator');
  const script = ctx.script;
  const pg = pgTarget(ctx.pg);
  const certs = await generateDevCertificates({ names: [SERVER_NAME] });
  const netns = path.kind === 'lossy' ? createLossyNetns(path.lossRate) : null;
  const children: Array<WorkerChild<unknown>> = [];
  const dispose = async (): Promise<void> => {
    const t0 = Date.now();
    for (const child of children.reverse()) await child.stop();
    netns?.close();
    if (process.env.QPB_DEBUG === '1') ctx.log(`stack dispose ${Date.now() - t0} ms`);
  };
  try {
    const poolerConfig: PoolerWorkerConfig = {
      server: { host: pg.host, port: pg.port },
      user: pg.user,
      password: pg.password,
      poolSize: POOL_SIZE,
      host: netns === null ? '127.0.0.1' : netns.hostIp,
      tcp: protocol === 'tcp',
      cert: tls || protocol === 'quic' ? { certPem: certs.certPem, keyPem: certs.keyPem } : null,
      quic: protocol === 'quic',
    };
    const pooler = await startWorker<PoolerReady>(script, 'pooler', poolerConfig);
    children.push(pooler);
    const targetPort = protocol === 'tcp' ? pooler.ready.tcpPort : pooler.ready.quicPort;
    if (targetPort === null) throw new Error('pooler did not open the listener asked for');
    if (path.kind === 'lan') {
      return { host: '127.0.0.1', port: targetPort, caPem: certs.caPem, poolerPid: pooler.ready.pid, wanPid: null, rttMs: null, netns: null, dispose };
    }
    const wanConfig: WanWorkerConfig = {
      listenHost: netns === null ? '127.0.0.1' : netns.nsIp,
      targetHost: netns === null ? '127.0.0.1' : netns.hostIp,
      relays: [{ protocol: protocol === 'tcp' ? 'tcp' : 'udp', targetPort }],
      delayMs: path.delayMs,
    };
    const wan = await startWorker<WanReady>(script, 'wan', wanConfig, netns === null ? {} : { netns: netns.name });
    children.push(wan);
    const port = wan.ready.ports[0];
    if (port === undefined) throw new Error('WAN emulator reported no port');
    netns?.dropOnPort(port);
    return { host: wanConfig.listenHost, port, caPem: certs.caPem, poolerPid: pooler.ready.pid, wanPid: wan.ready.pid, rttMs: wan.ready.rttMs, netns, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/** Open file descriptors of a process (/proc/<pid>/fd), or null when not readable. */
export function fdsOf(pid: number | null): number | null {
  if (pid === null) return null;
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

/**
 * Soft limit of open files of this process (/proc/self/limits), or null. Node raises its soft
 * limit to the hard limit at start, so this is also the most a child process can get.
 */
export function fdSoftLimit(): number | null {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    return soft === undefined || soft === 'unlimited' ? null : Number(soft);
  } catch {
    return null;
  }
}

function pathInfo(stack: Stack, extra: Record<string, string | number | null>): () => Record<string, string | number | null> {
  return () => {
    // Read while every session is still open (info() runs before the variant closes).
    const info: Record<string, string | number | null> = { ...extra, port: stack.port, fdSoftLimit: fdSoftLimit(), poolerFds: fdsOf(stack.poolerPid), wanFds: fdsOf(stack.wanPid) };
    if (stack.netns !== null) {
      const dropped = stack.netns.dropped();
      info.lossMethod = stack.netns.method;
      info.droppedUp = dropped.up;
      info.droppedDown = dropped.down;
    }
    return info;
  };
}

export interface TcpPlanOptions {
  name: string;
  sessions: number;
  tls: boolean;
  path: PathSpec;
  /** Prepare every statement (two round trips per query, the original client). */
  prepare?: boolean;
}

/** node-postgres, one TCP connection per session, to quicpool over `path`. */
export function tcpPlan(o: TcpPlanOptions): VariantPlan {
  return {
    name: o.name,
    async prepare(ctx: ScenarioContext): Promise<PreparedVariant> {
      const limit = fdSoftLimit();
      if (limit !== null && limit < o.sessions + 256) {
        throw new Error(`${o.sessions} TCP sessions need ~${o.sessions + 256} file descriptors; the soft limit is ${limit} (raise it: ulimit -n ${o.sessions + 1024})`);
      }
      const stack = await startStack(ctx, 'tcp', o.path, o.tls);
      const pg = pgTarget(ctx.pg);
      const variant = pgPoolVariant({
        name: o.name,
        sessions: o.sessions,
        connectionConfig: { host: stack.host, port: stack.port, user: pg.user, password: pg.password, database: pg.database },
        ...(o.tls ? { ssl: { ca: stack.caPem, servername: SERVER_NAME } } : {}),
        prepare: o.prepare === true,
        connectConcurrency: 100,
      });
      return {
        variant,
        poolerPid: stack.poolerPid,
        rttMs: stack.rttMs,
        dispose: () => stack.dispose(),
        info: pathInfo(stack, { transport: o.tls ? 'tcp+tls' : 'tcp', connections: o.sessions }),
      };
    },
  };
}

export interface QuicPlanOptions {
  name: string;
  connections: number;
  streamsPerConnection: number;
  path: PathSpec;
  prepare?: boolean;
}

/** node-postgres sessions, each a QUIC stream, `connections` x `streamsPerConnection`. */
export function quicPlan(o: QuicPlanOptions): VariantPlan {
  return {
    name: o.name,
    async prepare(ctx: ScenarioContext): Promise<PreparedVariant> {
      const stack = await startStack(ctx, 'quic', o.path, true);
      const pg = pgTarget(ctx.pg);
      const manager = new SessionManager({
        endpoints: [{ host: stack.host, port: stack.port, serverName: SERVER_NAME }],
        ca: stack.caPem,
        maxConnections: o.connections,
        streamsPerConnection: o.streamsPerConnection,
        idleTimeoutMs: 0,
        acquireTimeoutMs: 120_000,
        connectTimeoutMs: 20_000,
      });
      const config: ClientConfig = { user: pg.user, password: pg.password, database: pg.database };
      const pooled = new PooledVariant({
        name: o.name,
        sessions: o.connections * o.streamsPerConnection,
        connectConcurrency: 200,
        connect: async () => openPgSession({ config: { ...config, stream: await pgStream(manager) }, prepare: o.prepare === true }),
      });
      const variant: ClientVariant = {
        name: pooled.name,
        sessions: pooled.sessions,
        open: () => pooled.open(),
        query: (sql, deadline) => pooled.query(sql, deadline),
        close: async () => {
          await pooled.close();
          await manager.close({ graceful: false });
        },
      };
      return {
        variant,
        poolerPid: stack.poolerPid,
        rttMs: stack.rttMs,
        dispose: () => stack.dispose(),
        info: () => {
          const s = manager.stats();
          return { ...pathInfo(stack, { transport: 'quic' })(), connections: s.connections, handshakes: s.handshakes, connectionsLost: s.connectionsLost };
        },
      };
    },
  };
}
