// A one-client UDP relay between the agent and a pooler, for the fast-start tests: the pooler's
// datagrams can reach the agent late (a fixed delay: so a cancel comes before the pooler's key,
// and a query is written before the handshake completes), and the agent's datagrams that carry a
// Handshake or 1-RTT packet (its handshake Finished, its ACKs) can be held until release(), so the
// pooler cannot confirm the handshake meanwhile: whatever it answers then, it answered from early
// data. Loopback, port 0; close() ends it.
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';

export interface UdpRelay {
  readonly port: number;
  /** Datagrams held so far (not yet released). */
  readonly held: number;
  /** How late the pooler's datagrams reach the agent (settable). */
  downDelayMs: number;
  /** Hold, from now on, every agent datagram with a Handshake or 1-RTT packet in it. */
  hold(): void;
  /** Sends what was held and stops holding. */
  release(): void;
  close(): Promise<void>;
}

const LONG_HEADER = 0x80;
const FIXED_BIT = 0x40;
const TYPE_INITIAL = 0;
const TYPE_HANDSHAKE = 2;

function varint(b: Buffer, at: number): [value: number, next: number] {
  const len = 1 << (b[at]! >> 6);
  let v = b[at]! & 0x3f;
  for (let i = 1; i < len; i++) v = v * 256 + b[at + i]!;
  return [v, at + len];
}

/** The datagram carries a Handshake packet or a short-header (1-RTT) one (coalesced packets walked). */
export function carriesHandshakeOr1Rtt(d: Buffer): boolean {
  let at = 0;
  while (at < d.length) {
    const first = d[at]!;
    // A short header has the fixed bit set; zeros after the packets are padding.
    if ((first & LONG_HEADER) === 0) return (first & FIXED_BIT) !== 0;
    const type = (first & 0x30) >> 4;
    if (type === TYPE_HANDSHAKE) return true;
    let p = at + 5; // first byte, version
    p += 1 + d[p]!; // destination connection ID
    p += 1 + d[p]!; // source connection ID
    if (type === TYPE_INITIAL) {
      const [tokenLength, next] = varint(d, p);
      p = next + tokenLength;
    }
    const [length, next] = varint(d, p);
    at = next + length;
  }
  return false;
}

export async function startUdpRelay(target: { host: string; port: number }, o: { downDelayMs: number }): Promise<UdpRelay> {
  const front = dgram.createSocket('udp4');
  const back = dgram.createSocket('udp4');
  const timers = new Set<NodeJS.Timeout>();
  const held: Buffer[] = [];
  let holding = false;
  let client: dgram.RemoteInfo | null = null;
  let closed = false;
  front.on('message', (d, from) => {
    client = from;
    if (holding && carriesHandshakeOr1Rtt(d)) held.push(Buffer.from(d));
    else back.send(d, target.port, target.host);
  });
  back.on('message', (d) => {
    const t = setTimeout(() => {
      timers.delete(t);
      if (!closed && client !== null) front.send(d, client.port, client.address);
    }, relay.downDelayMs);
    timers.add(t);
  });
  await new Promise<void>((r) => front.bind(0, '127.0.0.1', () => r()));
  await new Promise<void>((r) => back.bind(0, '127.0.0.1', () => r()));
  const relay: UdpRelay = {
    port: (front.address() as AddressInfo).port,
    downDelayMs: o.downDelayMs,
    get held() {
      return held.length;
    },
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const d of held.splice(0)) back.send(d, target.port, target.host);
    },
    async close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      await Promise.all([front, back].map((s) => new Promise<void>((r) => s.close(() => r()))));
    },
  };
  return relay;
}
