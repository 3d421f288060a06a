// PgBouncer as the peer to compare with (bench:lan, and `pnpm bench --pgbouncer`): transaction
// pooling, the same pool size, in a temp folder owned by the user Postgres runs as (PgBouncer
// refuses to run as root, so as root it is started through `runuser`; its own pid is read from its
// pidfile, so its CPU is measured alone). It is ready when it logs "process up" on its stderr. With
// `clientTls` it requires TLS of its clients (client_tls_sslmode = require) with that certificate,
// as the quicpool daemon does over TCP in the WAN scenarios.
import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, resolveRunAs } from '@quicpool/pg-fixture';
import { startWorkerProcess } from '../process/worker-process.js';

export interface PgbouncerOptions {
  readonly serverHost: string;
  readonly serverPort: number;
  readonly user: string;
  readonly password: string;
  readonly poolSize: number;
  /** Where it listens (default 127.0.0.1). */
  readonly listenHost?: string;
  /** Its clients must use TLS, with this certificate and key (PEM). Default: no TLS. */
  readonly clientTls?: { readonly certPem: string; readonly keyPem: string };
}

export type RunningPgbouncer = Awaited<ReturnType<typeof startPgbouncer>>;

/** The pgbouncer binary, or null when it is not installed. */
export function findPgbouncer(): string | null {
  for (const bin of ['pgbouncer', '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer']) {
    const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
    if (r.status === 0) return bin.startsWith('/') ? bin : (spawnSync('which', [bin], { encoding: 'utf8' }).stdout.trim() || bin);
  }
  return null;
}

export async function startPgbouncer(bin: string, o: PgbouncerOptions) {
  const runAs = resolveRunAs(); // null unless we are root
  const dir = mkdtempSync(join(tmpdir(), 'quicpool-pgbouncer-'));
  const host = o.listenHost ?? '127.0.0.1';
  const port = await freePort(host);
  const q = (s: string) => `"${s.replace(/"/g, '""')}"`;
  writeFileSync(join(dir, 'userlist.txt'), `${q(o.user)} ${q(o.password)}\n`);
  const tls: string[] = [];
  if (o.clientTls !== undefined) {
    writeFileSync(join(dir, 'server.pem'), o.clientTls.certPem);
    writeFileSync(join(dir, 'server.key'), o.clientTls.keyPem, { mode: 0o600 });
    tls.push('client_tls_sslmode = require', `client_tls_cert_file = ${join(dir, 'server.pem')}`, `client_tls_key_file = ${join(dir, 'server.key')}`);
  }
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${o.serverHost} port=${o.serverPort}`,
      '[pgbouncer]',
      `listen_addr = ${host}`,
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${o.poolSize}`,
      'min_pool_size = 0',
      'reserve_pool_size = 0',
      'max_client_conn = 2000',
      'server_tls_sslmode = disable',
      ...tls,
      'ignore_startup_parameters = extra_float_digits',
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  if (runAs !== null) for (const f of ['', ...readdirSync(dir)]) chownSync(join(dir, f), runAs.uid, runAs.gid);
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0]?.trim() ?? 'pgbouncer';
  const ini = join(dir, 'pgbouncer.ini');
  const pidFile = join(dir, 'pgbouncer.pid');
  try {
    const worker = await startWorkerProcess({
      name: 'PgBouncer',
      command: runAs === null ? bin : 'runuser',
      args: runAs === null ? [ini] : ['-u', runAs.name, '--', bin, ini],
      startTimeoutMs: 10_000,
      readyOn: 'stderr',
      ready: (line) => (line.includes('process up') ? true : null),
      // PgBouncer's immediate shutdown (runuser passes it on). Not SIGINT: that is its safe
      // shutdown, and a shell without job control starts background commands with SIGINT ignored,
      // which PgBouncer inherits (bench:lan run with `&` never ended).
      stopSignal: 'SIGTERM',
    });
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    return {
      port,
      pid,
      version,
      async stop(): Promise<void> {
        await worker.stop();
        // runuser may be gone (SIGKILL after 5 s) while PgBouncer itself still runs, holding our pipes.
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
