// The CLI as a user runs it: `quicpool start` with no config brings up the embedded PostgreSQL,
// prints a connection string that works, stops cleanly on SIGTERM, and keeps the data for next time.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@quicpool/pg-fixture';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

function startCli(stateDir: string, port: number): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [cli, 'start', '--state-dir', stateDir, '--pg-port', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no connection string within 30 s:\n${out}`)), 30_000);
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /Connect:\s+(\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve({ child, url: m[1] });
      }
    });
    child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`quicpool exited with ${code}:\n${out}`));
    });
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

describe('quicpool start (embedded PostgreSQL)', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('serves, stops on SIGTERM with exit 0, and keeps the data across restarts', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'quicpool-cli-'));
    dirs.push(stateDir);
    await chmod(stateDir, 0o711); // as root, Postgres runs as `postgres`, which must reach pgdata
    const port = await freePort();

    const first = await startCli(stateDir, port);
    try {
      const client = new pg.Client({ connectionString: first.url });
      await client.connect();
      await client.query('CREATE TABLE kept (v text)');
      await client.query("INSERT INTO kept VALUES ('still here')");
      await client.end();
    } finally {
      expect(await stop(first.child)).toBe(0);
    }

    const second = await startCli(stateDir, port);
    try {
      expect(second.url).toBe(first.url);
      const client = new pg.Client({ connectionString: second.url });
      await client.connect();
      const { rows } = await client.query('SELECT v FROM kept');
      const { rows: dir } = await client.query<{ data_directory: string }>('SHOW data_directory');
      expect(dir[0]?.data_directory).toBe(join(stateDir, 'pgdata'));
      await client.end();
      expect(rows).toEqual([{ v: 'still here' }]);
    } finally {
      expect(await stop(second.child)).toBe(0);
    }
  }, 90_000);
});
