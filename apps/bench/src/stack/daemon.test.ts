import { describe, expect, it } from 'vitest';
import { daemonConfig, parseListening } from './daemon.js';

describe('the daemon as a user starts it', () => {
  it('writes a config file of quicpool.toml keys, users as their own tables', () => {
    const text = daemonConfig({
      listenHost: '10.201.3.1',
      upstream: { host: '127.0.0.1', port: 5432 },
      users: { postgres: { password: 'p"w' }, trust_user: { auth: 'trust' } },
      poolSize: 20,
      stateDir: '/tmp/x',
      settings: { quic: { idle_timeout_ms: 5000 }, listen: { quic: false } },
    });
    expect(text).toContain('[listen]\nhost = "10.201.3.1"\nport = 0\nquic_port = 0\nquic = false');
    expect(text).toContain('[pool]\nmode = "transaction"\nsize = 20');
    expect(text).toContain('[quic]\nidle_timeout_ms = 5000');
    expect(text).toContain('[users."postgres"]\npassword = "p\\"w"');
    expect(text).toContain('[users."trust_user"]\nauth = "trust"');
    expect(text).toContain('[metrics]\nenabled = false');
  });

  it('reads the ports from its banner, with or without QUIC', () => {
    expect(parseListening('Listening: tcp 10.201.3.1:43459, quic (udp) 10.201.3.1:45040')).toEqual({ host: '10.201.3.1', tcpPort: 43459, quicPort: 45040 });
    expect(parseListening('Listening: tcp 127.0.0.1:6432')).toEqual({ host: '127.0.0.1', tcpPort: 6432, quicPort: null });
    expect(parseListening('quicpool is ready in 322 ms.')).toBeNull();
  });
});
