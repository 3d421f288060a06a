// The embedded PostgreSQL as a user meets it: a first start whose port is taken fails with a
// message that says so and leaves a state folder the next start can use (the credentials are
// written before initdb), and Ctrl-C (SIGINT to the whole process group, as a terminal sends it)
// drains: the postmaster runs in its own group, so a running query completes and the exit code is 0.
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, untilQueryRunning } from '@quicpool/pg-fixture';
import { startEmbedded } from '../src/embedded.js';
import { runCli, startDaemon } from './daemon.js';

let stateDir: string;
let args: string[];
let pgPort: number;

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'quicpool-embedded-'));
  await chmod(stateDir, 0o711); // as root, Postgres runs as `postgres`, which must reach pgdata
  pgPort = await freePort(); // Postgres has no port 0: this one is found free, then squatted on purpose
  args = ['--state-dir', stateDir, '--pg-port', String(pgPort), '--port', '0', '--set', 'listen.quic=false', '--set', 'metrics.enabled=false'];
});
afterAll(async () => {
  await rm(stateDir, { recursive: true, force: true });
});

const listen = (p: number): Promise<Server> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(p, '127.0.0.1', () => resolve(s));
  });

describe('the embedded PostgreSQL', () => {
  it('a first start on a taken port fails clearly, and once the port is free the next start works', async () => {
    const squatter = await listen(pgPort);
    let failed: Awaited<ReturnType<typeof runCli>>;
    try {
      failed = await runCli(['start', ...args]);
    } finally {
      await new Promise<void>((r) => squatter.close(() => r()));
    }
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain(`the embedded PostgreSQL could not listen on 127.0.0.1:${pgPort}: the port is in use by another program (choose another with --pg-port or embedded.port). Free it and start again`);
    const daemon = await startDaemon(args);
    try {
      const url = /Connect:\s+(\S+)/.exec(daemon.output())?.[1] ?? '';
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      expect((await c.query<{ port: string }>("SELECT current_setting('port') AS port")).rows[0]?.port).toBe(String(pgPort));
      await c.end();
    } finally {
      expect(await daemon.stop('SIGTERM')).toBe(0);
    }
  }, 60_000);

  it('Ctrl-C (SIGINT to the process group) drains: a running query completes, then exit 0', async () => {
    const daemon = await startDaemon(args, {}, { detached: true });
    const pid = daemon.child.pid ?? 0;
    const url = /Connect:\s+(\S+)/.exec(daemon.output())?.[1] ?? '';
    const c = new pg.Client({ connectionString: url });
    c.on('error', () => undefined);
    const watcher = new pg.Client({ connectionString: url });
    try {
      await c.connect();
      await watcher.connect();
      const text = "SELECT pg_sleep(1.5), 'done' AS v";
      const sleeping = c.query(text);
      sleeping.catch(() => undefined);
      // The query is running on the server before the signal goes (an observed fact, bounded).
      await untilQueryRunning(watcher, text);
      await watcher.end();
      process.kill(-pid, 'SIGINT'); // the whole group, as a terminal's Ctrl-C
      await daemon.waitFor(/draining client sessions/);
      expect((await sleeping).rows).toEqual([{ pg_sleep: '', v: 'done' }]);
      await c.end();
      expect(await daemon.stop('SIGCONT')).toBe(0); // it exits by itself once drained
    } finally {
      await watcher.end().catch(() => undefined);
      await c.end().catch(() => undefined);
      await daemon.stop('SIGKILL');
    }
  }, 60_000);

  it('a data folder without its credentials file is refused, naming the folder to delete', async () => {
    const orphan = await mkdtemp(join(tmpdir(), 'quicpool-orphan-'));
    try {
      await chmod(orphan, 0o711);
      await mkdir(join(orphan, 'pgdata'));
      await writeFile(join(orphan, 'pgdata', 'PG_VERSION'), '17\n');
      await expect(startEmbedded(orphan, pgPort)).rejects.toThrow(`Delete ${join(orphan, 'pgdata')} to create a new cluster`);
    } finally {
      await rm(orphan, { recursive: true, force: true });
    }
  });
});
