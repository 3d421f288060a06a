import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  ScramError,
  makeScramSecret,
  parseScramSecret,
  scramClientFinal,
  scramClientFirst,
  scramServerFirst,
  verifyScramClientFinal,
  verifyScramServerFinal,
} from './scram.js';

describe('SCRAM-SHA-256', () => {
  it('matches the RFC 7677 test vector (client side)', () => {
    const first = scramClientFirst('rOprNGfwEbeRWgbNEkqO', 'user');
    expect(first.message).toBe('n,,n=user,r=rOprNGfwEbeRWgbNEkqO');
    const serverFirst = 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096';
    const final = scramClientFinal(first, serverFirst, 'pencil');
    expect(final.message).toBe('c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=');
    expect(() => verifyScramServerFinal('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=', final)).not.toThrow();
    expect(() => verifyScramServerFinal('v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=', final)).toThrow(ScramError);
    expect(() => verifyScramServerFinal('e=invalid-proof', final)).toThrow(/invalid-proof/);
  });

  it('matches the RFC 7677 test vector (server side)', () => {
    const secret = parseScramSecret(makeScramSecret('pencil', Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'), 4096));
    const { message, state } = scramServerFirst('n,,n=user,r=rOprNGfwEbeRWgbNEkqO', secret, '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0');
    expect(message).toBe('r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096');
    const verdict = verifyScramClientFinal(state, 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=');
    expect(verdict).toMatchObject({ ok: true, serverFinal: 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=' });
    // The ClientKey the proof revealed: its SHA-256 is the StoredKey.
    if (!verdict.ok) throw new Error(verdict.reason);
    expect(createHash('sha256').update(verdict.clientKey).digest()).toEqual(secret.storedKey);
  });

  it('client and server agree exactly when the password matches', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 }), (password, attempt) => {
        const secret = parseScramSecret(makeScramSecret(password, undefined, 64));
        const first = scramClientFirst();
        const { message, state } = scramServerFirst(first.message, secret);
        const final = scramClientFinal(first, message, attempt);
        const result = verifyScramClientFinal(state, final.message);
        const same = password.normalize('NFKC') === attempt.normalize('NFKC');
        expect(result.ok).toBe(same);
        if (result.ok) expect(() => verifyScramServerFinal(result.serverFinal, final)).not.toThrow();
      }),
      { numRuns: 100 },
    );
  });

  it('rejects malformed and tampered messages', () => {
    const secret = parseScramSecret(makeScramSecret('pw', undefined, 64));
    expect(() => scramServerFirst('p=tls-server-end-point,,n=,r=abc', secret)).toThrow(/channel binding/);
    expect(() => scramServerFirst('garbage', secret)).toThrow(ScramError);
    const first = scramClientFirst();
    const { message, state } = scramServerFirst(first.message, secret);
    const final = scramClientFinal(first, message, 'pw');
    expect(verifyScramClientFinal(state, final.message.replace(/r=[^,]+/, 'r=other'))).toMatchObject({ ok: false, reason: 'nonce mismatch' });
    expect(verifyScramClientFinal(state, final.message.replace('c=biws', 'c=eSws'))).toMatchObject({ ok: false });
    expect(verifyScramClientFinal(state, 'c=biws')).toMatchObject({ ok: false });
    expect(() => parseScramSecret('md5abc')).toThrow(ScramError);
    expect(() => scramClientFinal(first, 'r=someone-else,s=AAAA,i=4096', 'pw')).toThrow(/nonce/);
  });
});
