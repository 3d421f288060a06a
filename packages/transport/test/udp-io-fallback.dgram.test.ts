// Runs only in the transport-dgram project, where QUICPOOL_UDP_NATIVE_PATH names a file that is
// not a Node-API module: the native module cannot load, 'auto' falls back to node:dgram with one
// process warning, and asking for 'native' explicitly fails with the reason.
import { expect, test } from 'vitest';
import { QuicDialer, QuicListener, udpIoStatus } from '../src/index.js';
import { devCerts, readAll } from './quic-helpers.js';

test('the module is unloadable in this project, and udpIoStatus says why', () => {
  expect(process.env.QUICPOOL_UDP_NATIVE_PATH).toMatch(/not-a-module\.node$/);
  const s = udpIoStatus();
  expect(s.kind).toBe('dgram');
  expect(s.reason).toMatch(/not-a-module\.node|invalid ELF header|file too short/);
});

test("'auto' falls back to node:dgram with exactly one process warning; traffic flows", async () => {
  const warnings: Error[] = [];
  const onWarning = (w: Error): void => void warnings.push(w);
  process.on('warning', onWarning);
  const c = await devCerts();
  const listener = await QuicListener.listen({ cert: c.cert, key: c.key });
  const second = await QuicListener.listen({ cert: c.cert, key: c.key });
  listener.onSession((s) => s.pipe(s));
  const dialer = new QuicDialer({ host: '127.0.0.1', port: listener.address().port, serverName: 'localhost', ca: c.ca });
  try {
    const s = await dialer.open();
    const r = readAll(s);
    s.end('over the fallback');
    expect((await r).toString()).toBe('over the fallback');
    expect(listener.stats().io).toBe('dgram');
    expect((await dialer.stats()).io).toBe('dgram');
    await new Promise((r2) => setImmediate(r2)); // warnings are emitted on the next tick
    const ours = warnings.filter((w) => (w as Error & { code?: string }).code === 'QUICPOOL_UDP_FALLBACK');
    expect(ours).toHaveLength(1);
    expect(ours[0]!.message).toMatch(/native UDP module unavailable .*QUIC uses node:dgram/);
  } finally {
    process.off('warning', onWarning);
    await dialer.close({ graceful: false });
    await listener.close({ graceful: false });
    await second.close({ graceful: false });
  }
});

test("udpIo: 'native' refuses to start without the module, naming the reason", async () => {
  const c = await devCerts();
  await expect(QuicListener.listen({ cert: c.cert, key: c.key, udpIo: 'native' })).rejects.toThrow(/native UDP I\/O requested .* unavailable/);
});
