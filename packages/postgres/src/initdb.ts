// A new cluster: initdb as the server's user, the superuser's password through a temporary file
// (never on a command line), and our pg_hba.conf.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { PostgresBinaries, RunAs } from './binaries.js';

export interface NewCluster {
  readonly dataDir: string;
  readonly user: string;
  readonly password: string;
  readonly hba: string;
}

function run(cmd: string, args: readonly string[], runAs: RunAs | null): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const output: string[] = [];
    const child = spawn(cmd, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C', LANG: 'C' },
      ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
    });
    child.stdout?.on('data', (b: Buffer) => output.push(b.toString()));
    child.stderr?.on('data', (b: Buffer) => output.push(b.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output: output.join('') }));
  });
}

export async function initdb(binaries: PostgresBinaries, runAs: RunAs | null, c: NewCluster): Promise<void> {
  await mkdir(c.dataDir, { recursive: true, mode: 0o700 });
  const owned = async (path: string): Promise<void> => {
    if (runAs) await chown(path, runAs.uid, runAs.gid);
  };
  await owned(c.dataDir);
  if (runAs && (await run('test', ['-w', c.dataDir], runAs)).code !== 0) {
    throw new Error(
      `Postgres runs as user '${runAs.name}', who cannot write ${c.dataDir} (a parent folder is not ` +
        `searchable by that user, e.g. a home folder with mode 700). Choose a data folder elsewhere.`,
    );
  }
  const pwfile = join(dirname(c.dataDir), `.quicpool-pwfile-${process.pid}-${randomBytes(4).toString('hex')}`);
  await writeFile(pwfile, `${c.password}\n`, { mode: 0o600 });
  await owned(pwfile);
  try {
    const args = ['-D', c.dataDir, '-U', c.user, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C', '--no-sync'];
    const r = await run(binaries.initdb, args, runAs);
    if (r.code !== 0) throw new Error(`initdb failed (exit ${r.code}):\n${r.output}`);
  } finally {
    await rm(pwfile, { force: true });
  }
  const hba = join(c.dataDir, 'pg_hba.conf');
  await writeFile(hba, c.hba, { mode: 0o600 });
  await owned(hba);
}
