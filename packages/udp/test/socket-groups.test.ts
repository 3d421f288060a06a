// Socket groups on loopback: a steering program puts every datagram on the member it names, a
// member whose adopted dup is closed keeps its place (and its queued datagrams) in the group, TCP
// members made here take connections through net.Server#listen({ fd }), and nothing leaks.
import dgram from 'node:dgram';
import { readdirSync } from 'node:fs';
import net from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { BatchedUdpSocket, closeSocket, dupSocket, reuseportGroup, socketGroupSupport } from '../src/index.js';
import type { BpfInstruction, SocketGroup } from '../src/index.js';

const groups: SocketGroup[] = [];
const sockets: BatchedUdpSocket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.close();
  for (const g of groups.splice(0)) g.close();
});

/** ld [0] (the first byte); mod #n; ret a. */
const firstByteModulo = (n: number): BpfInstruction[] => [
  [0x30, 0, 0, 0],
  [0x94, 0, 0, n],
  [0x16, 0, 0, 0],
];

const openFds = (): number => readdirSync('/proc/self/fd').length;

function adopt(fd: number, got: number[][], i: number): BatchedUdpSocket {
  const s = BatchedUdpSocket.open({
    address: '127.0.0.1',
    fd,
    gro: false,
    onDatagrams(sock, n) {
      for (let k = 0; k < n; k++) got[i]!.push(sock.rxView(k)[0]!);
    },
    onError: () => undefined,
  });
  sockets.push(s);
  return s;
}

async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

function sendBytes(port: number, firstBytes: readonly number[]): Promise<void> {
  const c = dgram.createSocket('udp4');
  return new Promise((resolve) => {
    let left = firstBytes.length;
    for (const b of firstBytes) {
      c.send(Buffer.from([b, 1, 2, 3]), port, '127.0.0.1', () => {
        if (--left === 0) c.close(() => resolve());
      });
    }
  });
}

describe('reuseport socket groups', () => {
  test('are available with the native module', () => {
    expect(socketGroupSupport()).toEqual({ available: true });
  });

  test('a steering program puts each datagram on the member it names', async () => {
    const g = reuseportGroup({ protocol: 'udp', host: '127.0.0.1', port: 0, count: 3, program: firstByteModulo(3) });
    groups.push(g);
    expect(g.steering).toEqual({ kind: 'bpf' });
    expect(g.fds).toHaveLength(3);
    const got: number[][] = [[], [], []];
    const members = g.fds.map((fd, i) => adopt(fd, got, i));
    for (const m of members) expect(m.info().port).toBe(g.port);
    const bytes = Array.from({ length: 90 }, (_, i) => i);
    await sendBytes(g.port, bytes);
    await until(() => got.flat().length === 90);
    got.forEach((list, i) => {
      expect(list).toHaveLength(30);
      for (const b of list) expect(b % 3).toBe(i);
    });
  });

  test('closing an adopted member leaves its place: datagrams for it wait for the next adopter', async () => {
    const g = reuseportGroup({ protocol: 'udp', host: '127.0.0.1', port: 0, count: 2, program: firstByteModulo(2) });
    groups.push(g);
    const got: number[][] = [[], []];
    const first = g.fds.map((fd, i) => adopt(fd, got, i));
    first[1]!.close();
    await sendBytes(g.port, [0, 1, 2, 3, 5, 7]);
    await until(() => got[0]!.length === 2);
    expect(got[1]).toEqual([]);
    // A new worker adopts the same member: what arrived meanwhile is there, nothing went to member 0.
    adopt(g.fds[1]!, got, 1);
    await until(() => got[1]!.length === 4);
    expect(got[0]).toEqual([0, 2]);
    expect(got[1]).toEqual([1, 3, 5, 7]);
  });

  test('TCP members listen through net.Server#listen({ fd }) and share the connections', async () => {
    const g = reuseportGroup({ protocol: 'tcp', host: '127.0.0.1', port: 0, count: 2 });
    groups.push(g);
    expect(g.steering.kind).toBe('none');
    const accepted = [0, 0];
    const servers = await Promise.all(
      g.fds.map(
        (fd, i) =>
          new Promise<net.Server>((resolve) => {
            const s = net.createServer((c) => {
              accepted[i]!++;
              c.end();
            });
            s.listen({ fd: dupSocket(fd) }, () => resolve(s));
          }),
      ),
    );
    for (const s of servers) expect((s.address() as net.AddressInfo).port).toBe(g.port);
    await Promise.all(
      Array.from({ length: 40 }, () => new Promise<void>((resolve, reject) => {
        const c = net.connect(g.port, '127.0.0.1');
        c.on('error', reject);
        c.on('close', () => resolve());
        c.resume();
      })),
    );
    expect(accepted[0]! + accepted[1]!).toBe(40);
    // The kernel hashes connections over the members: both get some (all on one: 2^-39).
    expect(accepted[0]).toBeGreaterThan(0);
    expect(accepted[1]).toBeGreaterThan(0);
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });

  test('a port taken by a socket without SO_REUSEPORT is refused with EADDRINUSE', async () => {
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as net.AddressInfo).port;
    expect(() => reuseportGroup({ protocol: 'tcp', host: '127.0.0.1', port, count: 2 })).toThrow(expect.objectContaining({ code: 'EADDRINUSE' }));
    await new Promise((r) => taken.close(r));
  });

  test('descriptors come back: groups, dups and adopted sockets closed leave the fd table as it was', () => {
    const before = openFds();
    for (let i = 0; i < 20; i++) {
      const u = reuseportGroup({ protocol: 'udp', host: '127.0.0.1', port: 0, count: 2, program: firstByteModulo(2) });
      const t = reuseportGroup({ protocol: 'tcp', host: '::1', port: 0, count: 2 });
      const s = BatchedUdpSocket.open({ address: '127.0.0.1', fd: u.fds[0]!, onDatagrams: () => undefined, onError: () => undefined });
      closeSocket(dupSocket(t.fds[1]!));
      s.close();
      u.close();
      t.close();
    }
    expect(openFds()).toBe(before);
  });

  test('bad options are refused before any socket is made', () => {
    expect(() => reuseportGroup({ protocol: 'udp', host: '127.0.0.1', port: 0, count: 0 })).toThrow(RangeError);
    expect(() => reuseportGroup({ protocol: 'tcp', host: '127.0.0.1', port: 0, count: 2, program: firstByteModulo(2) })).toThrow(TypeError);
    expect(() => BatchedUdpSocket.open({ address: '127.0.0.1', fd: 0, onDatagrams: () => undefined, onError: () => undefined })).toThrow(/not a bound UDP socket/);
  });
});
