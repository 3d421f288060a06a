// Peers of an endpoint as one interned object each: what quiche wants (`{ host, port }`) plus
// the numeric form the native UDP module speaks (family and address words). Interning lets the
// receive path recognise a known peer without building a string, and a connection tell "same
// path" by identity.
import type { Host } from '@matrixai/quic/native/index.js';

export interface Peer extends Host {
  readonly host: string;
  readonly port: number;
  readonly family: 4 | 6;
  /** IPv4: the address as one host-order word; IPv6: four words (0 where unknown, e.g. dgram). */
  readonly w0: number;
  readonly w1: number;
  readonly w2: number;
  readonly w3: number;
}

/** Interned peers are forgotten wholesale beyond this many (connections keep their own). */
const MAX_PEERS = 65_536;

export class PeerTable {
  private readonly byText = new Map<string, Map<number, Peer>>();
  private readonly byWords4 = new Map<number, Peer>();
  private readonly byWords6 = new Map<string, Peer>();
  private size = 0;

  /** The peer for an IP literal and port; `words` parses the literal when it is new. */
  fromText(host: string, port: number, words: (host: string) => Omit<Peer, 'host' | 'port'>): Peer {
    const ports = this.byText.get(host);
    const known = ports?.get(port);
    if (known !== undefined) return known;
    const p: Peer = { host, port, ...words(host) };
    this.remember(p);
    return p;
  }

  /** The peer for numeric words; `text` formats the address when it is new. */
  fromWords(family: 4 | 6, port: number, w0: number, w1: number, w2: number, w3: number, text: () => string): Peer {
    if (family === 4) {
      const p = this.byWords4.get((w0 >>> 0) * 65_536 + port);
      if (p !== undefined) return p;
    } else {
      const p = this.byWords6.get(`${w0},${w1},${w2},${w3},${port}`);
      if (p !== undefined) return p;
    }
    const p: Peer = { host: text(), port, family, w0, w1, w2, w3 };
    this.remember(p);
    return p;
  }

  private remember(p: Peer): void {
    if (this.size >= MAX_PEERS) this.clear();
    let ports = this.byText.get(p.host);
    if (ports === undefined) this.byText.set(p.host, (ports = new Map()));
    ports.set(p.port, p);
    if (p.family === 4) this.byWords4.set((p.w0 >>> 0) * 65_536 + p.port, p);
    else this.byWords6.set(`${p.w0},${p.w1},${p.w2},${p.w3},${p.port}`, p);
    this.size++;
  }

  private clear(): void {
    this.byText.clear();
    this.byWords4.clear();
    this.byWords6.clear();
    this.size = 0;
  }
}

/** Whether two peers name the same address (interned ones are simply identical). */
export function samePeer(a: Host, b: Host): boolean {
  return a === b || (a.port === b.port && a.host === b.host);
}
