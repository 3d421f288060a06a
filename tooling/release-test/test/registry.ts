// A throwaway npm registry: verdaccio in this process, storage in a temp folder, on a free
// loopback port. quicpool's own packages (@quicpool/*, quicpool) are local only: published here,
// never looked up elsewhere. Every other package is proxied from the npm registry this machine is
// configured with, so `npm install` from here gets pg, pino, @matrixai/quic ... as a user's would.
import { writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { runServer } from 'verdaccio';

export interface LocalRegistry {
  /** e.g. http://127.0.0.1:41234/ */
  readonly url: string;
  /** An .npmrc holding the auth token of the registry's one user, for publishing. */
  readonly authFile: string;
  close(): Promise<void>;
}

export async function startRegistry(dir: string, upstream: string): Promise<LocalRegistry> {
  const config = join(dir, 'config.yaml');
  await writeFile(
    config,
    [
      `storage: ${JSON.stringify(join(dir, 'storage'))}`,
      'auth:',
      '  htpasswd:',
      `    file: ${JSON.stringify(join(dir, 'htpasswd'))}`,
      '    max_users: 1',
      'uplinks:',
      '  upstream:',
      `    url: ${JSON.stringify(upstream)}`,
      '    timeout: 60s',
      'packages:',
      "  '@quicpool/*':",
      '    access: $all',
      '    publish: $authenticated',
      "  'quicpool':",
      '    access: $all',
      '    publish: $authenticated',
      "  '**':",
      '    access: $all',
      '    proxy: upstream',
      'web:',
      '  enable: false',
      'log: { type: stdout, format: json, level: error }',
      '',
    ].join('\n'),
  );
  const server: Server = await runServer(config);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}/`;
  const close = (): Promise<void> =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  try {
    // The user who publishes (verdaccio's htpasswd plugin creates it and answers with a token).
    const res = await fetch(`${url}-/user/org.couchdb.user:release-test`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'release-test', password: 'release-test-password' }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json()) as { token?: unknown };
    if (!res.ok || typeof body.token !== 'string') throw new Error(`registry refused the publishing user: ${res.status} ${JSON.stringify(body)}`);
    const authFile = join(dir, 'publish.npmrc');
    await writeFile(authFile, `//127.0.0.1:${port}/:_authToken=${body.token}\n`, { mode: 0o600 });
    return { url, authFile, close };
  } catch (err) {
    await close();
    throw err;
  }
}
