// What this machine can do at best, to put the QUIC ping-pong figures in context, CPU per round trip per side:
// - quiche alone: two raw quiche connections wired back to back in memory, 200-byte requests on `streams` streams;
// - Node UDP alone: two dgram sockets bouncing 200-byte datagrams (one send + one receive per round trip and side);
// - the native batched module alone: the same with @quicpool/udp (recvmmsg/sendmmsg, GSO/GRO).
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { quiche } from '@matrixai/quic/native/index.js';
import type { Config } from '@matrixai/quic/native/index.js';
import { generateDevCertificates } from '@quicpool/transport';
import { BatchedUdpSocket, loadUdpBinding, udpAddress } from '@quicpool/udp';
import type { UdpAddress } from '@quicpool/udp';
import { round1 } from '../report/round.js';

export type Floor = Awaited<ReturnType<typeof measureFloor>>;

const PAYLOAD = Buffer.alloc(200, 0x61);

/** 40 in flight, as in the 1x40 run: quiche's work per packet and the UDP syscalls, nothing of ours. */
export async function measureFloor() {
  const quiche = round1(await quicheFloor(40));
  const udp = round1(await udpFloor(40));
  const nativeUdp = await nativeUdpFloor(40);
  return {
    quicheUsPerRtPerSide: quiche,
    udpUsPerRtPerSide: udp,
    sumUsPerRtPerSide: round1(quiche + udp),
    /** null where the native module is not available. */
    nativeUdpUsPerRtPerSide: nativeUdp === null ? null : round1(nativeUdp),
    nativeSumUsPerRtPerSide: nativeUdp === null ? null : round1(quiche + nativeUdp),
  };
}

/** CPU per datagram counted by `datagrams()` over `durationMs`, after 300 ms of warm-up. */
async function cpuPerDatagram(datagrams: () => number, durationMs: number): Promise<number> {
  await sleep(300);
  const n0 = datagrams();
  const cpu0 = process.cpuUsage();
  await sleep(durationMs);
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / Math.max(1, datagrams() - n0);
}

function configure(c: Config): Config {
  c.setApplicationProtos(['pgsql/3']);
  c.setInitialMaxStreamsBidi(1000);
  c.setInitialMaxData(16 * 1024 * 1024);
  c.setInitialMaxStreamDataBidiLocal(1024 * 1024);
  c.setInitialMaxStreamDataBidiRemote(1024 * 1024);
  c.setMaxIdleTimeout(30_000);
  return c;
}

async function quicheFloor(streams: number, rounds = 2000): Promise<number> {
  const certs = await generateDevCertificates({ names: ['localhost'] });
  const enc = new TextEncoder();
  const sc = configure(quiche.Config.withBoringSslCtx(false, false, null, [enc.encode(certs.keyPem)], [enc.encode(certs.certPem)], null));
  const cc = configure(quiche.Config.withBoringSslCtx(false, false, null, null, null, null));
  const a = { host: '127.0.0.1', port: 1 };
  const b = { host: '127.0.0.1', port: 2 };
  const c = quiche.Connection.connect('localhost', randomBytes(8), a, b, cc);
  const s = quiche.Connection.accept(randomBytes(8), null, b, a, sc);
  const bufs = Array.from({ length: streams + 8 }, () => Buffer.allocUnsafeSlow(1500));
  const lens: number[] = [];
  const rb = new Uint8Array(65536);
  const ia = { from: a, to: b };
  const ib = { from: b, to: a };
  const xfer = (from: typeof c, to: typeof c, info: typeof ia): void => {
    lens.length = 0;
    for (;;) {
      const r = from.send(bufs[lens.length]!);
      if (r === null || lens.length === bufs.length - 1) break;
      lens.push(r[0]);
    }
    for (let i = 0; i < lens.length; i++) to.recv(bufs[i]!.subarray(0, lens[i]), info);
  };
  for (let i = 0; i < 10; i++) {
    xfer(c, s, ia);
    xfer(s, c, ib);
  }
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < streams; k++) c.streamSend(k * 4, PAYLOAD, false);
    xfer(c, s, ia);
    for (let k = 0; k < streams; k++) {
      s.streamRecv(k * 4, rb);
      s.streamSend(k * 4, PAYLOAD, false);
    }
    xfer(s, c, ib);
    for (let k = 0; k < streams; k++) c.streamRecv(k * 4, rb);
  }
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / (rounds * streams) / 2;
}

async function udpFloor(inFlight: number, durationMs = 1500): Promise<number> {
  const open = (): Promise<dgram.Socket> =>
    new Promise((resolve) => {
      const s = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
      s.bind(0, '127.0.0.1', () => resolve(s));
    });
  const x = await open();
  const y = await open();
  await new Promise<void>((r) => x.connect(y.address().port, '127.0.0.1', r));
  await new Promise<void>((r) => y.connect(x.address().port, '127.0.0.1', r));
  let n = 0;
  let running = true;
  for (const s of [x, y]) {
    s.on('message', () => {
      n++;
      if (running) s.send(PAYLOAD);
    });
  }
  for (let i = 0; i < inFlight; i++) x.send(PAYLOAD);
  const usPerDatagram = await cpuPerDatagram(() => n, durationMs);
  running = false;
  await sleep(50);
  x.close();
  y.close();
  return usPerDatagram;
}

/** As `udpFloor` over the native module, each batch answered with one sendmmsg; null where the module is not available. */
async function nativeUdpFloor(inFlight: number, durationMs = 1500): Promise<number | null> {
  if (!loadUdpBinding().available) return null;
  let n = 0;
  let running = true;
  const answer = (s: BatchedUdpSocket, count: number, to: UdpAddress | null): void => {
    n += count;
    if (!running) return;
    for (let i = 0; i < count; i++) {
      s.txSlot(i).set(PAYLOAD);
      s.setTx(i, PAYLOAD.length, to);
    }
    s.send(count);
  };
  let yAddress: UdpAddress | null = null;
  const x = BatchedUdpSocket.open({ address: '127.0.0.1', onDatagrams: (s, c) => answer(s, c, yAddress), onError: () => {} });
  const y = BatchedUdpSocket.open({
    address: '127.0.0.1',
    connect: { address: '127.0.0.1', port: x.info().port! },
    onDatagrams: (s, c) => answer(s, c, null),
    onError: () => {},
  });
  yAddress = udpAddress('127.0.0.1', y.info().port!);
  try {
    answer(y, inFlight, null);
    return await cpuPerDatagram(() => n, durationMs);
  } finally {
    running = false;
    x.close();
    y.close();
  }
}
