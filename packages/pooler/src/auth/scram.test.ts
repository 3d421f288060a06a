import { describe, expect, it } from 'vitest';
import { makeScramSecret, parseScramSecret as wireParse, scramClientFinal, scramClientFirst, scramServerFirst, verifyScramClientFinal } from '@quicpool/wire';
import { deriveSaltedPassword, formatScramSecret, parseScramSecret, ScramClient, ScramServer, scramSecretFromPassword } from './scram.js';

describe('pooler SCRAM adapters', () => {
  it('ScramServer accepts wire\'s client with the right password only', () => {
    for (const [password, ok] of [['pw', true], ['nope', false]] as const) {
      const server = new ScramServer(scramSecretFromPassword('pw'));
      const first = scramClientFirst();
      const step = server.clientFirst('SCRAM-SHA-256', Buffer.from(first.message));
      if (step.kind !== 'continue') throw new Error('expected continue');
      const final = scramClientFinal(first, step.serverFirst, password);
      expect(server.clientFinal(Buffer.from(final.message)).kind).toBe(ok ? 'final' : 'fail');
    }
  });

  it('ScramClient (async PBKDF2) is accepted by wire\'s server and checks its signature', async () => {
    const secret = wireParse(makeScramSecret('s3cret'));
    const client = new ScramClient('s3cret');
    const { message, state } = scramServerFirst(client.clientFirst().toString(), secret);
    const final = client.clientFinal(await deriveSaltedPassword(client.serverFirst(Buffer.from(message))));
    const verdict = verifyScramClientFinal(state, final.toString());
    if (!verdict.ok) throw new Error(verdict.reason);
    expect(() => client.verifyServerFinal(Buffer.from(verdict.serverFinal))).not.toThrow();
    expect(() => client.verifyServerFinal(Buffer.from('v=' + Buffer.alloc(32).toString('base64')))).toThrow(/signature/);
  });

  it('parses and formats Postgres secrets, rejecting malformed ones', () => {
    const text = formatScramSecret(scramSecretFromPassword('x'));
    expect(formatScramSecret(parseScramSecret(text)!)).toBe(text);
    expect(parseScramSecret('md5abc')).toBeUndefined();
    expect(new ScramServer(scramSecretFromPassword('x')).clientFirst('SCRAM-SHA-256', Buffer.from('p=tls-server-end-point,,n=,r=abc')).kind).toBe('fail');
  });
});
