// SO_PEERCRED through the native module: the peer of a unix socket is this very process (same
// pid, uid and gid); a TCP socket has none.
import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { peerCredentials, peerCredentialsSupport } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'qp-peercred-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function accepted(listen: (s: Server) => void, dial: (s: Server) => Socket): Promise<{ server: Server; client: Socket; peer: Socket }> {
  const server = createServer();
  const peer = new Promise<Socket>((resolve) => server.once('connection', resolve));
  await new Promise<void>((resolve) => {
    server.once('listening', () => resolve());
    listen(server);
  });
  const client = dial(server);
  return { server, client, peer: await peer };
}

describe('peerCredentials', () => {
  it('is available with the native module', () => {
    expect(peerCredentialsSupport()).toEqual({ available: true });
  });

  it('names this process as the peer of a unix socket, and nothing for TCP', async () => {
    const path = join(dir, 's');
    const unix = await accepted((s) => s.listen(path), () => createConnection(path));
    const tcp = await accepted((s) => s.listen(0, '127.0.0.1'), (s) => createConnection((s.address() as AddressInfo).port, '127.0.0.1'));
    try {
      expect(peerCredentials(unix.peer)).toEqual({ pid: process.pid, uid: process.getuid?.(), gid: process.getgid?.() });
      expect(peerCredentials(tcp.peer)).toBeNull();
    } finally {
      for (const x of [unix, tcp]) {
        x.client.destroy();
        x.peer.destroy();
        await new Promise<void>((r) => x.server.close(() => r()));
      }
    }
  });
});
