// Shared fixtures for the QUIC tests: dev certificates (generated once per file) and helpers that
// collect stream output without assuming how the bytes were chunked.
import type { Duplex } from 'node:stream';
import { generateDevCertificates } from '../src/certs.js';

export interface TestCerts {
  ca: string;
  cert: string;
  key: string;
}

/** A fresh CA and a server certificate for DNS names localhost and quicpool.test. */
export async function makeCerts(): Promise<TestCerts> {
  const c = await generateDevCertificates({ names: ['localhost', 'quicpool.test'] });
  return { ca: c.caPem, cert: c.certPem, key: c.keyPem };
}

let certs: Promise<TestCerts> | null = null;
/** One certificate set per test file. */
export function devCerts(): Promise<TestCerts> {
  certs ??= makeCerts();
  return certs;
}

/** Reads until the stream ends; rejects on error. */
export function readAll(s: Duplex): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    s.on('data', (d: Buffer) => parts.push(d));
    s.once('end', () => resolve(Buffer.concat(parts)));
    s.once('error', reject);
  });
}

/** Reads exactly n bytes (leaves the stream flowing). */
export function readN(s: Duplex, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let got = 0;
    const onData = (d: Buffer): void => {
      parts.push(d);
      got += d.length;
      if (got >= n) {
        s.off('data', onData);
        s.off('error', reject);
        resolve(Buffer.concat(parts));
      }
    };
    s.on('data', onData);
    s.once('error', reject);
  });
}

/** Resolves with the stream's error (rejects if it ends cleanly instead). */
export function errorOf(s: Duplex): Promise<Error & { code?: string }> {
  return new Promise((resolve, reject) => {
    if (s.errored !== null) {
      resolve(s.errored as Error & { code?: string });
      return;
    }
    s.once('error', (e: Error & { code?: string }) => resolve(e));
    s.once('close', () => {
      if (s.errored === null) reject(new Error('stream closed without error'));
    });
    s.resume();
  });
}

export async function waitFor(cond: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * The I/O path QUIC endpoints of this run use: the native batched module, or node:dgram in the
 * transport-dgram project, which runs the QUIC suite with the module made unloadable
 * (QUICPOOL_UDP_NATIVE_PATH naming a file that is not one).
 */
export function expectedUdpIo(): 'native' | 'dgram' {
  return process.env.QUICPOOL_UDP_NATIVE_PATH !== undefined && process.env.QUICPOOL_UDP_NATIVE_PATH !== '' ? 'dgram' : 'native';
}
