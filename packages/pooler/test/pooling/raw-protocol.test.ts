// The pooler at the byte level, over TCP: protocol 3.2 and NegotiateProtocolVersion, bounded
// startup packets, cancel keys, and timeouts, with a hand-driven client. The timeout tests run
// their own pooler on a manual clock: a timeout passes when the test moves the clock.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackendDecoder, encodeFrontend, encodeStartupPacket } from '@quicpool/wire';
import type { BackendMessage } from '@quicpool/wire';
import { eventually } from '../hostile/helpers.js';
import { ManualClock, turns } from '../support/manual-clock.js';
import { pgInfo, rejection, startPooler, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

/** A raw client: sends bytes, collects decoded backend messages until a predicate holds or the socket closes. */
class RawClient {
  readonly socket: net.Socket;
  readonly messages: BackendMessage[] = [];
  closed = false;
  private readonly decoder = new BackendDecoder();
  private waiters: (() => void)[] = [];

  constructor(port: number) {
    this.socket = net.connect({ host: '127.0.0.1', port });
    this.socket.on('data', (c: Buffer) => {
      this.decoder.push(c);
      this.messages.push(...this.decoder.drain());
      this.wake();
    });
    this.socket.on('error', () => undefined);
    this.socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  async until(done: (m: BackendMessage[]) => boolean, ms = 5000): Promise<BackendMessage[]> {
    const deadline = Date.now() + ms;
    while (!done(this.messages) && !this.closed) {
      if (Date.now() > deadline) throw new Error(`timed out; got ${this.messages.map((m) => m.type).join(',')}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    return this.messages;
  }

  end(): void {
    this.socket.destroy();
  }
}

const ready = (ms: BackendMessage[]) => ms.some((m) => m.type === 'ReadyForQuery');

let p: TestPooler;
beforeAll(async () => {
  p = await startPooler({ pool: { poolSize: 2 } });
});
afterAll(async () => {
  await p.close();
});

function startup(version: number, extra: Record<string, string> = {}): Buffer {
  return encodeStartupPacket({ type: 'StartupMessage', protocolVersion: version, parameters: { user: pgInfo.trustUser, database: pgInfo.database, ...extra } });
}

describe('raw protocol', () => {
  it('speaks 3.2 with a 32-byte cancel key and no NegotiateProtocolVersion', async () => {
    const c = new RawClient(p.port);
    try {
      c.socket.write(startup((3 << 16) | 2));
      const ms = await c.until(ready);
      expect(ms.some((m) => m.type === 'NegotiateProtocolVersion')).toBe(false);
      const key = ms.find((m) => m.type === 'BackendKeyData');
      expect(key?.type === 'BackendKeyData' && key.secretKey.length).toBe(32);
      expect(ms.find((m) => m.type === 'ParameterStatus' && m.name === 'server_version')).toBeTruthy();
      c.socket.write(encodeFrontend({ type: 'Query', query: 'select 42' }));
      await c.until((m) => m.filter((x) => x.type === 'ReadyForQuery').length === 2);
      expect(c.messages.some((m) => m.type === 'DataRow' && m.values[0]?.toString() === '42')).toBe(true);
    } finally {
      c.end();
    }
  });

  it('answers NegotiateProtocolVersion for 3.9 and unknown _pq_ options', async () => {
    const c = new RawClient(p.port);
    try {
      c.socket.write(startup((3 << 16) | 9, { '_pq_.compression': 'on' }));
      const ms = await c.until(ready);
      expect(ms[0]).toEqual({ type: 'NegotiateProtocolVersion', newestProtocolVersion: (3 << 16) | 2, unrecognizedOptions: ['_pq_.compression'] });
    } finally {
      c.end();
    }
  });

  it('rejects an oversized startup packet with 08P01 and closes', async () => {
    const c = new RawClient(p.port);
    try {
      const b = Buffer.alloc(8);
      b.writeInt32BE(1_000_000, 0);
      b.writeInt32BE(3 << 16, 4);
      c.socket.write(b);
      const ms = await c.until(() => false);
      expect(c.closed).toBe(true);
      expect(ms[0]).toMatchObject({ type: 'ErrorResponse', fields: { C: '08P01' } });
    } finally {
      c.end();
    }
  });

  it('closes a client that does not finish authenticating within authTimeoutMs with 57014', async () => {
    const AUTH_TIMEOUT_MS = 300;
    const clock = new ManualClock();
    const t = await startPooler({ authTimeoutMs: AUTH_TIMEOUT_MS }, { clock });
    const c = new RawClient(t.port);
    try {
      c.socket.write(encodeStartupPacket({ type: 'StartupMessage', protocolVersion: 3 << 16, parameters: { user: pgInfo.user } }));
      await c.until((m) => m.some((x) => x.type === 'AuthenticationSASL')); // SCRAM is asked for; we never answer
      // The timer armed when the pooler accepted the client ...
      expect(clock.timersDue(clock.now() + AUTH_TIMEOUT_MS)).toBe(1);
      // ... has not fired a millisecond early ...
      clock.advance(AUTH_TIMEOUT_MS - 1);
      await turns();
      expect(c.closed).toBe(false);
      expect(c.messages.map((m) => m.type)).toEqual(['AuthenticationSASL']);
      // ... and closes the session once it is due.
      clock.advance(1);
      const ms = await c.until(() => false);
      expect(ms[0]?.type).toBe('AuthenticationSASL');
      expect(ms[1]).toMatchObject({ type: 'ErrorResponse', fields: { C: '57014' } });
    } finally {
      c.end();
      await t.close();
    }
  });

  it('ignores a CancelRequest with a wrong key', async () => {
    const before = p.pooler.stats().cancelsForwardedTotal;
    await withClient(p.clientConfig(), async (a) => {
      const slow = a.query('select pg_sleep(0.3) as s');
      await new Promise((r) => setTimeout(r, 50));
      const info = a as unknown as { processID: number; secretKey: number };
      const wrong = Buffer.alloc(4);
      wrong.writeInt32BE((info.secretKey ^ 1) | 0);
      const c = new RawClient(p.port);
      c.socket.write(encodeStartupPacket({ type: 'CancelRequest', processId: info.processID, secretKey: wrong }));
      await c.until(() => false);
      expect((await slow).rows).toHaveLength(1);
    });
    expect(p.pooler.stats().cancelsForwardedTotal).toBe(before);
  });

  it('closes a client idle longer than clientIdleTimeoutMs with 57P05', async () => {
    const IDLE_TIMEOUT_MS = 300;
    const clock = new ManualClock();
    const t = await startPooler({ pool: { clientIdleTimeoutMs: IDLE_TIMEOUT_MS } }, { clock });
    try {
      await withClient(t.clientConfig(), async (a) => {
        const errors: Error[] = [];
        a.on('error', (e) => errors.push(e));
        await a.query('select 1');
        // Idle again: the timer is armed on the pooler's clock ...
        await eventually(() => clock.timersDue(clock.now() + IDLE_TIMEOUT_MS) === 1, 5000, 'client idle timer armed');
        // ... and has not fired a millisecond early ...
        clock.advance(IDLE_TIMEOUT_MS - 1);
        await turns();
        expect(errors).toEqual([]);
        expect(t.pooler.stats().clients).toBe(1);
        // ... but once it is due (the FATAL comes while no query runs: an 'error' event).
        clock.advance(1);
        await eventually(() => errors.length > 0, 5000, 'idle session closed');
        const e = await rejection(a.query('select 1'));
        expect([e, ...errors].map((x) => (x as { code?: string }).code)).toContain('57P05');
      });
    } finally {
      await t.close();
    }
  });
});
