// The tests' PostgreSQL: the runtime server of @quicpool/postgres with what the suite needs on top.
// Authentication is SCRAM-SHA-256 for everyone, except `trustUser` (trust) and `md5User` (md5), so
// one cluster serves the tests of every auth method; it serves TLS after SSLRequest with a fresh
// self-signed certificate and listens on a unix socket as well.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PostgresServer as RuntimeServer } from '@quicpool/postgres';
import type { ShutdownMode } from '@quicpool/postgres';

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
  /** Postgres server version, e.g. "17.6". */
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

const TRUST_USER = 'trust_user';
const MD5_USER = 'md5_user';

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
host replication all 127.0.0.1/32 scram-sha-256
`;

/** A self-signed certificate for localhost and 127.0.0.1 (EC P-256, 30 days). */
async function serverCertificate(): Promise<{ certPem: string; keyPem: string }> {
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
  return { certPem: cert.cert, keyPem: cert.private };
}

export class PostgresServer {
  private constructor(
    private readonly server: RuntimeServer,
    readonly info: PgConnectionInfo,
  ) {}

  get dataDir(): string {
    return this.server.dataDir;
  }

  get pid(): number | null {
    return this.server.pid;
  }

  /** A `postgresql://` URL for the superuser (or another role of the fixture). */
  connectionString(user = this.info.user, password = user === this.info.user ? this.info.password : ''): string {
    const auth = password ? `${encodeURIComponent(user)}:${encodeURIComponent(password)}` : encodeURIComponent(user);
    return `postgresql://${auth}@${this.info.host}:${this.info.port}/${this.info.database}`;
  }

  static async start(options: StartPostgresOptions = {}): Promise<PostgresServer> {
    const tls = await serverCertificate();
    const server = await RuntimeServer.start({ ...options, hba: HBA, tls });
    try {
      const md5Password = randomBytes(12).toString('base64url');
      await prepareRoles(server, md5Password);
      const i = server.info;
      return new PostgresServer(server, {
        host: i.host, port: i.port, database: i.database, user: i.user, password: i.password,
        trustUser: TRUST_USER, md5User: MD5_USER, md5Password, serverVersion: i.serverVersion,
        tlsCertPem: tls.certPem, socketDir: i.socketDir,
      });
    } catch (err) {
      await server.stop();
      throw err;
    }
  }

  /** Stops Postgres (fast shutdown) and, for a temporary cluster, removes its data. */
  stop(): Promise<void> {
    return this.server.stop();
  }

  /** Stops ('fast' by default, or 'immediate') and starts again on the same port with the same data (for fault tests). */
  restart(mode?: ShutdownMode): Promise<void> {
    return this.server.restart(mode);
  }

  /** Stops the server, keeping its data; `startAgain()` brings it back on the same port. */
  shutdown(mode?: ShutdownMode): Promise<void> {
    return this.server.shutdown(mode);
  }

  startAgain(): Promise<void> {
    return this.server.startAgain();
  }

  /** A streaming standby of this cluster on another port (this server stops for a moment to be copied). */
  async startStandby(): Promise<PostgresServer> {
    const standby = await this.server.startStandby();
    return new PostgresServer(standby, { ...this.info, port: standby.info.port, socketDir: standby.info.socketDir });
  }

  /** Promotes a standby; poll pg_is_in_recovery() for when it is done. */
  promote(): Promise<void> {
    return this.server.promote();
  }

  /** Kills the postmaster without a clean shutdown (for fault tests); `restart()` brings it back. */
  crash(): void {
    this.server.crash();
  }
}

/** The fixture's extra roles (on a new cluster) and a fresh md5 password. */
async function prepareRoles(server: RuntimeServer, md5Password: string): Promise<void> {
  const { host, port, user, password } = server.info;
  const client = new pg.Client({ host, port, user, password, database: 'postgres' });
  await client.connect();
  try {
    if (server.created) {
      await client.query(`CREATE ROLE ${TRUST_USER} LOGIN CREATEDB`);
      await client.query(`CREATE ROLE ${MD5_USER} LOGIN`);
    }
    // md5 needs an md5-hashed secret (a SCRAM one makes Postgres answer with SCRAM instead).
    await client.query(`SET password_encryption = 'md5'`);
    await client.query(`ALTER ROLE ${MD5_USER} PASSWORD '${md5Password}'`);
  } finally {
    await client.end();
  }
}

/** Starts a real Postgres; always `stop()` it (the watchdog ends it if this process dies first). */
export function startPostgres(options?: StartPostgresOptions): Promise<PostgresServer> {
  return PostgresServer.start(options);
}
