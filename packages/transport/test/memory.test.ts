import { describe, expect, it } from 'vitest';
import { createMemoryPair } from '../src/index.js';
import { describeSessionStreamContract } from './contract.js';
import { nextError } from './helpers.js';

describeSessionStreamContract('memory', () => ({
  connect: () => Promise.resolve(createMemoryPair()),
}));

describe('memory pair', () => {
  it('applies backpressure: writes wait until the reader reads', async () => {
    const [client, server] = createMemoryPair({ highWaterMark: 1024 });
    server.pause();
    let more = true;
    let written = 0;
    while (more && written < 1_000_000) {
      more = client.write(Buffer.alloc(512));
      written += 512;
    }
    expect(more).toBe(false);
    expect(written).toBeLessThan(8 * 1024); // stopped near the two buffers' high-water marks
    const drained = new Promise((resolve) => client.once('drain', resolve));
    server.resume();
    await drained;
    client.destroy();
    server.destroy();
  });

  it('writing to a destroyed peer fails with EPIPE', async () => {
    const [client, server] = createMemoryPair();
    server.destroy();
    const error = nextError(client);
    client.write('anyone?');
    expect((await error)?.code).toBe('EPIPE');
  });

  it('the two sides see each other as remote ports', () => {
    const [client, server] = createMemoryPair();
    expect(client.info.remotePort).toBe(server.info.localPort);
    expect(server.info.remotePort).toBe(client.info.localPort);
    client.destroy();
    server.destroy();
  });
});
