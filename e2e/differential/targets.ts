// Where a script runs: straight to the run's Postgres over TCP (the reference), or through a
// pooler in session or transaction mode, over TCP or over QUIC (session streams from
// @quicpool/client's SessionManager). Each target opens raw Duplex streams; the scripts speak
// the protocol on them themselves.
import net from 'node:net';
import type { Duplex } from 'node:stream';
import pg from 'pg';
import { inject } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { untilBackendState } from '@quicpool/pg-fixture';
import type { BackendState } from '@quicpool/pg-fixture';
import { SessionManager } from '@quicpool/client';
import { createPooler } from '@quicpool/pooler';
import type { Pooler } from '@quicpool/pooler';
import { generateDevCertificates, listenTcp, QuicListener } from '@quicpool/transport';
import { encodeFrontend } from '@quicpool/wire';
import { WireSession } from './wire-session.js';

export const pgInfo = inject('pg');

export type Mode = 'direct' | 'session' | 'transaction';
export type Via = 'tcp' | 'quic';

export interface Target {
  readonly name: string;
  readonly mode: Mode;
  readonly via: Via;
  /** A new connection (TCP) or session stream (QUIC), open and not yet spoken on. */
  open(): Promise<Duplex>;
}

function tcp(port: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => resolve(s)).once('error', reject);
  });
}

export const directTarget: Target = { name: 'direct', mode: 'direct', via: 'tcp', open: () => tcp(pgInfo.port) };

export interface PoolerTargets {
  readonly targets: readonly Target[];
  readonly poolers: readonly Pooler[];
  close(): Promise<void>;
}

/** A session-mode and a transaction-mode pooler, each on TCP and on QUIC. */
export async function startPoolerTargets(): Promise<PoolerTargets> {
  const certs = await generateDevCertificates({ names: ['localhost'] });
  const targets: Target[] = [];
  const poolers: Pooler[] = [];
  const closers: Array<() => Promise<void>> = [];
  for (const mode of ['session', 'transaction'] as const) {
    const pooler = createPooler({
      server: { host: pgInfo.host, port: pgInfo.port },
      users: { [pgInfo.trustUser]: { auth: 'trust' } },
      pool: { poolMode: mode, poolSize: 4, queryWaitTimeoutMs: 10_000 },
    });
    const tcpListener = await listenTcp({ host: '127.0.0.1', port: 0 });
    const quicListener = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0 });
    pooler.listen(tcpListener);
    pooler.listen(quicListener);
    const manager = new SessionManager({ endpoints: [`127.0.0.1:${quicListener.address().port}`], ca: certs.caPem, serverName: 'localhost' });
    await manager.warm();
    const tcpPort = tcpListener.address().port;
    targets.push({ name: `${mode}/tcp`, mode, via: 'tcp', open: () => tcp(tcpPort) });
    targets.push({ name: `${mode}/quic`, mode, via: 'quic', open: () => manager.acquire() });
    poolers.push(pooler);
    closers.push(async () => {
      await manager.close({ graceful: false });
      await quicListener.close({ graceful: false });
      await pooler.close({ graceful: false });
    });
  }
  return {
    targets,
    poolers,
    close: async () => {
      for (const c of closers) await c();
    },
  };
}

/** The superuser's direct connection: finds server processes, terminates them, sets up tables. */
export class Admin {
  private constructor(private readonly c: pg.Client) {}

  static async connect(): Promise<Admin> {
    const c = new pg.Client({ host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database });
    await c.connect();
    return new Admin(c);
  }

  async run(sql: string): Promise<void> {
    await this.c.query(sql);
  }

  /** Waits until server process `pid` is in `state` (pg_stat_activity). */
  waitState(pid: string, state: Exclude<BackendState, 'gone'>): Promise<void> {
    return untilBackendState(this.c, pid, state);
  }

  /** Waits until server process `pid` is inside pg_sleep (running, not between messages). */
  waitSleeping(pid: string): Promise<void> {
    return untilBackendState(this.c, pid, 'active', { waitEvent: 'PgSleep' });
  }

  /** pg_terminate_backend, then waits until the process is gone (its FATAL is sent by then). */
  async terminate(pid: string): Promise<void> {
    await this.c.query('select pg_terminate_backend($1)', [pid]);
    await untilBackendState(this.c, pid, 'gone');
  }

  end(): Promise<void> {
    return this.c.end();
  }
}

/** What a script is given: sessions on its target, cancels, the admin connection. */
export class ScriptContext {
  readonly sessions: WireSession[] = [];

  constructor(
    readonly target: Target,
    readonly admin: Admin,
  ) {}

  get mode(): Mode {
    return this.target.mode;
  }

  /** A connection on which nothing was sent yet. */
  async open(label: string): Promise<WireSession> {
    const s = new WireSession(label, await this.target.open());
    this.sessions.push(s);
    return s;
  }

  /** A logged-in session (the trust user), with extra startup parameters. */
  async connect(label: string, parameters: Record<string, string> = {}): Promise<WireSession> {
    const s = await this.open(label);
    await s.startup({ user: pgInfo.trustUser, database: pgInfo.database, ...parameters });
    return s;
  }

  /** A CancelRequest for `s` on a new connection of the same target, as libpq sends it; waits for its close. */
  async cancel(s: WireSession): Promise<void> {
    const c = await this.target.open();
    const closed = new Promise<void>((resolve) => {
      c.on('error', () => resolve());
      c.on('close', () => resolve());
      c.on('end', () => {
        if (!c.writableEnded) c.end();
        resolve();
      });
    });
    c.resume();
    c.write(encodeFrontend({ type: 'CancelRequest', processId: s.processId, secretKey: s.secretKey }));
    await closed;
  }

  /** Ends every session still open (Terminate, then the close) and returns each one's tokens. */
  async finish(): Promise<Record<string, string[]>> {
    const out: Record<string, string[]> = {};
    for (const s of this.sessions) {
      if (!s.closed) await s.terminate();
      out[s.label] = s.tokens;
    }
    return out;
  }

  /** After a failed script: nothing stays open. */
  destroyAll(): void {
    for (const s of this.sessions) s.destroy();
  }
}
