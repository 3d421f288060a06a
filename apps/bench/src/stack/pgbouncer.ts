// PgBouncer, the peer to compare with (bench:lan, `pnpm bench --pgbouncer`): transaction pooling, the
// same pool size, in a temp folder owned by Postgres's user (as root it starts through `runuser`, since it
// refuses root; its own pid, from its pidfile, is the one measured). Ready when it logs "process up" on
// stderr. `clientTls`: its clients must use TLS with that certificate, as the daemon's do over TCP.
import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, resolveRunAs } from '@quicpool/pg-fixture';
import { startWorkerProcess } from '../process/worker-process.js';
import { orNull } from '../telemetry/proc.js';

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
  const ini = join(dir, 'pgbouncer.ini');
  const pidFile = join(dir, 'pgbouncer.pid');
  writeFileSync(ini, [
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
    `pidfile = ${pidFile}`,
    '',
  ].join('\n'));
  if (runAs !== null) for (const f of ['', ...readdirSync(dir)]) chownSync(join(dir, f), runAs.uid, runAs.gid);
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0]?.trim() ?? 'pgbouncer';
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
        orNull(() => process.kill(pid, 'SIGKILL'));
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
