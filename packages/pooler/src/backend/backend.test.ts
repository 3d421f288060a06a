// What a server's bytes become for the client the backend is lent to: runs of the messages it only forwards,
// one view per run, and every other message on its own, all in the order received.
import { BackendDecoder, encodeBackend } from '@quicpool/wire';
import type { RawMessage } from '@quicpool/wire';
import { createMemoryPair } from '@quicpool/transport';
import { describe, expect, it, vi } from 'vitest';
import { WriteBatcher } from '../runtime/write-batcher.js';
import { ManualClock } from '../../test/support/manual-clock.js';
import { Backend } from './backend.js';
import { Link } from './link.js';
import type { Waiter } from './link.js';

const T = encodeBackend({ type: 'RowDescription', fields: [{ name: 'x', tableOid: 0, columnAttributeNumber: 0, dataTypeOid: 23, dataTypeSize: 4, typeModifier: -1, format: 0 }] });
const D1 = encodeBackend({ type: 'DataRow', values: [Buffer.from('1')] });
const D2 = encodeBackend({ type: 'DataRow', values: [Buffer.from('2')] });
const C = encodeBackend({ type: 'CommandComplete', tag: 'SELECT 2' });
const Z = encodeBackend({ type: 'ReadyForQuery', status: 'I' });

type Seen = { readonly run: Buffer } | { readonly message: RawMessage } | { readonly lost: string };

/** A client that forwards rows, row descriptions and CommandCompletes, and records what it gets. */
function recorder(): Waiter & { seen: Seen[] } {
  const seen: Seen[] = [];
  return {
    seen,
    onBackend: () => undefined,
    onError: () => undefined,
    passesThrough: (type) => type === 0x54 || type === 0x44 || type === 0x43,
    forward: (run) => void seen.push({ run: Buffer.from(run) }),
    onBackendMessage: (message) => void seen.push({ message: { type: message.type, bytes: Buffer.from(message.bytes) } }),
    onBackendLost: (lost) => void seen.push({ lost }),
  };
}

function attached(client: Waiter): { backend: Backend; server: ReturnType<typeof createMemoryPair>[1]; closed: string[] } {
  const [ours, server] = createMemoryPair();
  const closed: string[] = [];
  const backend = new Backend(
    { server: { host: '127.0.0.1', port: 5432 }, role: undefined, stream: ours, decoder: new BackendDecoder(), parameters: new Map(), processId: 1, secretKey: Buffer.alloc(4), input: null },
    new ManualClock(),
    new WriteBatcher(),
    // As the pool does: a closed backend is 'closed' (its stream's own close event then changes nothing).
    { onResetDone: () => undefined, onClosed: (b, reason) => { b.state = 'closed'; closed.push(reason); } },
  );
  backend.state = 'active';
  backend.link = new Link(client, 0, 0);
  return { backend, server, closed };
}

describe('Backend input', () => {
  it('gives the client runs of pass-through messages as one view each, the rest one by one, in order', async () => {
    const client = recorder();
    const { server } = attached(client);
    server.write(Buffer.concat([T, D1, D2, C, Z, D1]));
    await vi.waitFor(() => expect(client.seen).toHaveLength(3));
    expect(client.seen).toEqual([{ run: Buffer.concat([T, D1, D2, C]) }, { message: { type: 0x5a, bytes: Z } }, { run: D1 }]);
  });

  it('a message split across reads ends the run before it; the client gets it whole', async () => {
    const client = recorder();
    const { server } = attached(client);
    const both = Buffer.concat([D1, D2]);
    server.write(both.subarray(0, D1.length + 3));
    await vi.waitFor(() => expect(client.seen).toHaveLength(1));
    server.write(both.subarray(D1.length + 3));
    await vi.waitFor(() => expect(client.seen).toHaveLength(2));
    expect(client.seen).toEqual([{ run: D1 }, { run: D2 }]);
  });

  it('forwards what came before malformed bytes, then reports the connection lost', async () => {
    const client = recorder();
    const { server, closed } = attached(client);
    server.write(Buffer.concat([D1, D2, Buffer.from([0x01, 0, 0, 0, 4])]));
    await vi.waitFor(() => expect(closed).toHaveLength(1));
    expect(client.seen).toEqual([{ run: Buffer.concat([D1, D2]) }]);
    expect(closed[0]).toMatch(/^protocol error from server: unknown message type/);
  });

  it('a client without the shortcut gets every message as onBackendMessage', async () => {
    const client = recorder();
    const plain: Waiter = { onBackend: client.onBackend, onError: client.onError, onBackendMessage: client.onBackendMessage, onBackendLost: client.onBackendLost };
    const { server } = attached(plain);
    server.write(Buffer.concat([D1, Z]));
    await vi.waitFor(() => expect(client.seen).toHaveLength(2));
    expect(client.seen).toEqual([{ message: { type: 0x44, bytes: D1 } }, { message: { type: 0x5a, bytes: Z } }]);
  });
});
