// Random datagram loss between client and server (the fixture's UDP fault relay, seeded, both
// directions): streams carrying checksummed payloads both ways arrive byte-exact. quiche's loss
// recovery runs on whichever I/O path the suite uses (native batched UDP here; node:dgram in
// the transport-dgram project).
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, test } from 'vitest';
import { startUdpFaultRelay } from '@quicpool/pg-fixture';
import type { SessionStream } from '../src/session-stream.js';
import { QuicDialer, QuicListener } from '../src/quic/index.js';
import { randomBytes, readBytes, writeChunked } from './helpers.js';
import { devCerts, expectedUdpIo } from './quic-helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const STREAMS = 12;
const BYTES = 256 * 1024;
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

// Under loss a stream's end (a FIN sent without data) is occasionally never delivered: quiche
// does not send such a lost FIN again (src/quic/README.md, "Writes": measured, not fixed; in the
// full suite it stalled the 5% case in 3 of 3 runs and the 1% case in 1 of 5). So the streams'
// bytes are checked without waiting for their ends; ends are tested without loss (quic-fin.test.ts).
describe.each([0.01, 0.05])('%s datagram loss per direction', (loss) => {
  test('every stream echoes its payload byte-exact (checksummed both ways)', async () => {
    const c = await devCerts();
    const listener = await QuicListener.listen({ cert: c.cert, key: c.key });
    cleanups.push(() => listener.close({ graceful: false }));
    // The server echoes each stream's bytes back, then reports the checksum of what it received.
    const serverSums: string[] = [];
    listener.onSession((s: SessionStream) => {
      s.on('error', () => {});
      const parts: Buffer[] = [];
      let got = 0;
      s.on('data', (d: Buffer) => {
        parts.push(d);
        got += d.length;
        s.write(d);
        if (got === BYTES) serverSums.push(sha(Buffer.concat(parts)));
      });
      s.on('end', () => s.end());
    });
    const relay = await startUdpFaultRelay({ host: '127.0.0.1', port: listener.address().port }, { loss, seed: Math.round(loss * 1000) });
    cleanups.push(() => relay.close());
    const dialer = new QuicDialer({ host: '127.0.0.1', port: relay.port, serverName: 'localhost', ca: c.ca, connections: 2 });
    cleanups.push(() => dialer.close({ graceful: false }));

    // Streams whose end may still be missing are closed here, before the dialer aborts them.
    const opened: SessionStream[] = [];
    cleanups.push(async () => {
      for (const s of opened) s.destroy();
    });
    const payloads = Array.from({ length: STREAMS }, (_, i) => randomBytes(BYTES, 1000 + i));
    const echoed = await Promise.all(
      payloads.map(async (p, i) => {
        const s = await dialer.open();
        opened.push(s);
        const back = readBytes(s, BYTES);
        await writeChunked(s, p, 77 + i, 16 * 1024);
        return back;
      }),
    );
    for (let i = 0; i < STREAMS; i++) {
      expect(echoed[i]!.length).toBe(BYTES);
      expect(sha(echoed[i]!)).toBe(sha(payloads[i]!));
    }
    expect(serverSums.sort()).toEqual(payloads.map(sha).sort());
    // The relay really dropped datagrams (a loss test without loss proves nothing).
    expect(relay.counters.dropped).toBeGreaterThan(0);
    const ratio = relay.counters.dropped / (relay.counters.dropped + relay.counters.relayed);
    expect(ratio).toBeGreaterThan(loss / 3);
    expect((await dialer.stats()).io).toBe(expectedUdpIo());
    expect(listener.stats().io).toBe(expectedUdpIo());
  }, 60_000);
});
