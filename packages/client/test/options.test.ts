import { describe, expect, it } from 'vitest';
import { DEFAULT_SESSION_MANAGER_OPTIONS, normalizeFingerprint, parseEndpoint, resolveManagerOptions, sessionCapacity } from '../src/index.js';

const endpoints = ['127.0.0.1:6432'];

describe('session manager options', () => {
  it('defaults and capacity', () => {
    expect(resolveManagerOptions({ endpoints })).toEqual(DEFAULT_SESSION_MANAGER_OPTIONS);
    expect(sessionCapacity(resolveManagerOptions({ endpoints, maxConnections: 50, streamsPerConnection: 40 }))).toBe(2000);
    expect(resolveManagerOptions({ endpoints, pinnedFingerprint: 'AA' }).earlyData).toBe(false);
  });

  it('rejects bad values, naming the option', () => {
    expect(() => resolveManagerOptions({ endpoints, maxConnections: 0 })).toThrow(/^maxConnections must be/);
    expect(() => resolveManagerOptions({ endpoints, streamsPerConnection: 2.5 })).toThrow(/^streamsPerConnection must be/);
    expect(() => resolveManagerOptions({ endpoints, minConnections: 5, maxConnections: 2 })).toThrow(/minConnections/);
    expect(() => resolveManagerOptions({ endpoints, preOpenRatio: 0 })).toThrow(/preOpenRatio/);
    expect(() => resolveManagerOptions({ endpoints: [] })).toThrow(/endpoints/);
  });

  it('parses endpoints and fingerprints', () => {
    expect(parseEndpoint('db.example.com:6432')).toEqual({ host: 'db.example.com', port: 6432, serverName: undefined });
    expect(parseEndpoint('[::1]:7000')).toEqual({ host: '::1', port: 7000, serverName: undefined });
    expect(() => parseEndpoint('nohost')).toThrow(/host:port/);
    expect(() => parseEndpoint('a:70000')).toThrow(/bad port/);
    expect(normalizeFingerprint('ab:'.repeat(31) + 'ab')).toBe('AB'.repeat(32));
    expect(() => normalizeFingerprint('zz')).toThrow(/SHA-256/);
  });
});
