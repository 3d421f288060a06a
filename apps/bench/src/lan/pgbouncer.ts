// PgBouncer as the peer to compare with: transaction pooling, the same pool size, in a temp folder
// owned by the user Postgres runs as (PgBouncer refuses to run as root, so as root it is started
// through `runuser`; its own pid is read from its pidfile, so its CPU is measured alone).
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, resolveRunAs } from '@quicpool/pg-fixture';

export interface PgbouncerOptions {
  readonly serverHost: string;
  readonly serverPort: number;
  readonly user: string;
  readonly password: string;
  readonly poolSize: number;
}

export interface RunningPgbouncer {
  readonly port: number;
  readonly pid: number;
  readonly version: string;
  stop(): Promise<void>;
}

/** The pgbouncer binary, or null when it is not installed. */
export function findPgbouncer(): string | null {
  for (const bin of ['pgbouncer', '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer']) {
    const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
    if (r.status === 0) return bin.startsWith('/') ? bin : (spawnSync('which', [bin], { encoding: 'utf8' }).stdout.trim() || bin);
  }
  return null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export async function startPgbouncer(bin: string, o: PgbouncerOptions): Promise<RunningPgbouncer> {
  const runAs = resolveRunAs(); // null unless we are root
  const dir = mkdtempSync(join(tmpdir(), 'quicpool-pgbouncer-'));
  const port = await freePort('127.0.0.1');
  const q = (s: string) => `"${s.replace(/"/g, '""')}"`;
  writeFileSync(join(dir, 'userlist.txt'), `${q(o.user)} ${q(o.password)}\n`);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${o.serverHost} port=${o.serverPort}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
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
      'ignore_startup_parameters = extra_float_digits',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  if (runAs !== null) for (const f of ['', 'userlist.txt', 'pgbouncer.ini']) chownSync(join(dir, f), runAs.uid, runAs.gid);
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0]?.trim() ?? 'pgbouncer';
  const child: ChildProcess = runAs !== null
    ? spawn('runuser', ['-u', runAs.name, '--', bin, join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(bin, [join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const pidFile = join(dir, 'pgbouncer.pid');
  const deadline = Date.now() + 10_000;
  let pid = 0;
  while (pid === 0 || !(await canConnect(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      const log = existsSync(join(dir, 'pgbouncer.log')) ? readFileSync(join(dir, 'pgbouncer.log'), 'utf8') : '';
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pgbouncer did not start: ${stderr}${log}`);
    }
    if (pid === 0 && existsSync(pidFile)) pid = Number(readFileSync(pidFile, 'utf8').trim()) || 0;
    await sleep(50);
  }
  return {
    port,
    pid,
    version,
    async stop(): Promise<void> {
      try {
        process.kill(pid, 'SIGINT'); // PgBouncer's immediate shutdown
      } catch {
        // already gone
      }
      await Promise.race([exited, sleep(3000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
