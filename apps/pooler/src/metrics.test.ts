// The HTTP endpoint's health paths, served on an ephemeral loopback port: /healthz answers while
// the process serves, /readyz follows the readiness function (503 with its reason), other paths 404.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { expositionOf, serveMetrics } from './metrics.js';

describe('serveMetrics', () => {
  it('answers /healthz 200, /readyz 200 or 503 with the reason, /metrics, and 404 or 405 otherwise', async () => {
    let why: string | null = 'shutting down';
    const endpoint = await serveMetrics(expositionOf(new Registry()), '127.0.0.1', 0, () => Promise.resolve(why));
    const get = async (path: string, method = 'GET'): Promise<[number, string]> => {
      const res = await fetch(`http://127.0.0.1:${endpoint.port}${path}`, { method });
      return [res.status, await res.text()];
    };
    try {
      expect(await get('/healthz')).toEqual([200, 'ok\n']);
      expect(await get('/readyz')).toEqual([503, 'not ready: shutting down\n']);
      why = null;
      expect(await get('/readyz?verbose')).toEqual([200, 'ready\n']);
      expect((await get('/metrics'))[0]).toBe(200);
      expect((await get('/'))[0]).toBe(404);
      expect((await get('/healthz', 'POST'))[0]).toBe(405);
    } finally {
      await endpoint.close();
    }
  });
});
