// The native module alone, on loopback: batches of random sizes arrive exactly and from the
// right addresses over IPv4 and IPv6, with GSO/GRO and without; errors are reported, not thrown;
// a closed socket gives its descriptor back.
import { readdirSync } from 'node:fs';
import { release } from 'node:os';
import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import { BatchedUdpSocket, loadUdpBinding, udpAddress } from '../src/index.js';
import type { BatchedUdpOptions, UdpAddress } from '../src/index.js';

interface Received {
  bytes: Buffer;
  host: string;
  port: number;
}

const open: BatchedUdpSocket[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

function receiver(address: string, o: Partial<BatchedUdpOptions> = {}): { socket: BatchedUdpSocket; got: Received[]; errors: NodeJS.ErrnoException[] } {
  const got: Received[] = [];
  const errors: NodeJS.ErrnoException[] = [];
  const socket = BatchedUdpSocket.open({
    address,
    ...o,
    onDatagrams(s, n) {
      for (let i = 0; i < n; i++) {
        const from = s.rxAddress(i);
        got.push({ bytes: Buffer.from(s.rxView(i)), host: from.host, port: from.port });
      }
    },
    onError: (e) => errors.push(e),
  });
  open.push(socket);
  return { socket, got, errors };
}

async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('timed out waiting for datagrams');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Writes `payloads` into the send slots of `s` and sends them in one call. */
function sendBatch(s: BatchedUdpSocket, payloads: Uint8Array[], to: UdpAddress | null): void {
  payloads.forEach((p, i) => {
    s.txSlot(i).set(p);
    s.setTx(i, p.length, to);
  });
  expect(s.send(payloads.length)).toBe(0);
}

const batches = fc.array(fc.array(fc.uint8Array({ minLength: 1, maxLength: 1452 }), { minLength: 1, maxLength: 64 }), { minLength: 1, maxLength: 6 });

/** Runs the batches from a sender to a receiver on `host` and returns what arrived. */
async function roundTrip(host: string, connected: boolean, gsoGro: boolean, run: Uint8Array[][]): Promise<Received[]> {
  const rx = receiver(host, { gro: gsoGro });
  const rxPort = rx.socket.info().port!;
  const tx = receiver(host, { gso: gsoGro, ...(connected ? { connect: { address: host, port: rxPort } } : {}) });
  const txPort = tx.socket.info().port!;
  const to = connected ? null : udpAddress(host, rxPort);
  let total = 0;
  for (const batch of run) {
    sendBatch(tx.socket, batch, to);
    total += batch.length;
  }
  await until(() => rx.got.length >= total);
  for (const r of rx.got) expect(r.port).toBe(txPort);
  expect(rx.errors).toEqual([]);
  expect(tx.errors).toEqual([]);
  rx.socket.close();
  tx.socket.close();
  return rx.got;
}

test('the module loads on this machine (Linux with node-gyp): the native path is the one under test', () => {
  const s = loadUdpBinding();
  expect(s.available ? 'available' : s.reason).toBe('available');
});

describe.each([
  ['IPv4', '127.0.0.1'],
  ['IPv6', '::1'],
])('%s', (_name, host) => {
  test.each([
    ['unconnected', false],
    ['connected', true],
  ])('%s: random batches (1-64 datagrams of 1-1,452 bytes) arrive exactly, in order, from the sender', async (_n, connected) => {
    await fc.assert(
      fc.asyncProperty(batches, async (run) => {
        const got = await roundTrip(host, connected, true, run);
        expect(got.map((r) => r.bytes)).toEqual(run.flat().map((p) => Buffer.from(p)));
        for (const r of got) expect(r.host).toBe(host);
      }),
      { numRuns: 12 },
    );
  });

  test('GSO and GRO are on where the kernel has them, and what arrives is identical with them off', async () => {
    const probe = receiver(host);
    const [major = 0, minor = 0] = release().split('.').map(Number);
    const hasBoth = major > 5 || (major === 5 && minor >= 0);
    expect(probe.socket.info().gso).toBe(hasBoth);
    expect(probe.socket.info().gro).toBe(hasBoth);
    probe.socket.close();
    await fc.assert(
      fc.asyncProperty(batches, async (run) => {
        const on = await roundTrip(host, false, true, run);
        const off = await roundTrip(host, false, false, run);
        expect(on.map((r) => r.bytes)).toEqual(off.map((r) => r.bytes));
      }),
      { numRuns: 6 },
    );
  });
});

test('equal-size runs to one peer leave as GSO sends and arrive as GRO runs (fewer syscalls than datagrams)', async () => {
  const rx = receiver('127.0.0.1');
  const tx = receiver('127.0.0.1', { connect: { address: '127.0.0.1', port: rx.socket.info().port! } });
  const payloads = Array.from({ length: 40 }, (_, i) => Buffer.alloc(200, i));
  sendBatch(tx.socket, payloads, null);
  await until(() => rx.got.length >= 40);
  expect(rx.got.map((r) => r.bytes)).toEqual(payloads);
  const sent = tx.socket.stats();
  const got = rx.socket.stats();
  expect(sent).toMatchObject({ datagramsOut: 40, sendCalls: 1, gsoSends: 1 });
  expect(got.datagramsIn).toBe(40);
  expect(got.recvCalls).toBeLessThan(40);
  expect(got.groMerged).toBeGreaterThan(0);
});

test('a datagram to a port nobody listens on: ECONNREFUSED is reported through onError, never thrown', async () => {
  const gone = receiver('127.0.0.1');
  const port = gone.socket.info().port!;
  gone.socket.close();
  const tx = receiver('127.0.0.1', { connect: { address: '127.0.0.1', port } });
  sendBatch(tx.socket, [Buffer.from('anyone?')], null);
  await until(() => tx.errors.length > 0);
  expect(tx.errors[0]!.code).toBe('ECONNREFUSED');
  // The socket stays usable (libuv stopped polling on the error; the module resumes it): once
  // someone listens on that port again, datagrams flow both ways.
  const back = receiver('127.0.0.1', { port });
  tx.socket.txSlot(0).set(Buffer.from('again'));
  tx.socket.setTx(0, 5, null);
  expect(() => tx.socket.send(1)).not.toThrow();
  await until(() => back.got.length > 0);
  expect(back.got[0]!.bytes.toString()).toBe('again');
  sendBatch(back.socket, [Buffer.from('reply')], udpAddress('127.0.0.1', tx.socket.info().port!));
  await until(() => tx.got.length > 0);
  expect(tx.got[0]!.bytes.toString()).toBe('reply');
});

test('bind errors are thrown as ErrnoExceptions at open', () => {
  const a = receiver('127.0.0.1');
  expect(() => receiver('127.0.0.1', { port: a.socket.info().port! })).toThrow(expect.objectContaining({ code: 'EADDRINUSE' }));
});

test('a closed socket gives its descriptor back', () => {
  const fds = (): number => readdirSync('/proc/self/fd').length;
  const before = fds();
  const sockets = Array.from({ length: 20 }, () => receiver('127.0.0.1').socket);
  expect(fds()).toBe(before + 20);
  for (const s of sockets) s.close();
  expect(fds()).toBe(before);
  for (const s of sockets) expect(s.info().closed).toBe(true);
});
