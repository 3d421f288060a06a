import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeBackend, errorResponse, noticeResponse } from '@quicpool/wire';
import { CancelKeys } from './cancel-keys.js';
import { LoginAnswer, localLoginAnswer, MAX_LOGIN_ANSWER_BYTES } from './login-answer.js';
import type { LoginStep } from './login-answer.js';

const key = { processId: 4242, secretKey: Buffer.from([1, 2, 3, 4]) };
const params: [string, string][] = [['server_version', '17.10'], ['DateStyle', 'ISO, MDY'], ['TimeZone', 'Etc/UTC']];
const login = (p = params, extra: Buffer[] = []): Buffer => Buffer.concat([
  encodeBackend({ type: 'AuthenticationOk' }),
  ...extra,
  ...p.map(([name, value]) => encodeBackend({ type: 'ParameterStatus', name, value })),
  encodeBackend({ type: 'BackendKeyData', processId: key.processId, secretKey: key.secretKey }),
  encodeBackend({ type: 'ReadyForQuery', status: 'I' }),
]);
/** What a pipelined first query's answer starts with: it follows the login in the same bytes. */
const answer = encodeBackend({ type: 'CommandComplete', tag: 'SELECT 1' });

/**
 * Feeds `bytes` in the chunks `cuts` makes, as the session does (after the login's end the rest
 * goes to the client raw): everything the client gets, and the reader's last step.
 */
function run(a: LoginAnswer, bytes: Buffer, cuts: number[] = []): { forwarded: Buffer; last: LoginStep } {
  const at = [0, ...[...new Set(cuts)].filter((c) => c > 0 && c < bytes.length).sort((x, y) => x - y), bytes.length];
  const out: Buffer[] = [];
  let last: LoginStep = { kind: 'more', forward: Buffer.alloc(0) };
  for (let i = 0; i + 1 < at.length; i++) {
    last = a.feed(bytes.subarray(at[i], at[i + 1]));
    if (last.kind === 'more') {
      out.push(last.forward);
      continue;
    }
    if (last.kind === 'ready') out.push(last.forward, last.rest, bytes.subarray(at[i + 1]));
    break;
  }
  return { forwarded: Buffer.concat(out), last };
}

describe('LoginAnswer', () => {
  it('passes the login on as it is, however it is cut, and learns its values and key', () => {
    const bytes = Buffer.concat([login(), answer]);
    fc.assert(fc.property(fc.array(fc.nat(bytes.length), { maxLength: 12 }), (cuts) => {
      const { forwarded, last } = run(new LoginAnswer(null, false), bytes, cuts);
      expect(last.kind).toBe('ready');
      if (last.kind !== 'ready') return;
      expect(forwarded.equals(bytes)).toBe(true);
      expect(last.record).toEqual({ parameters: params, keyLength: 4 });
      expect(last.key).toEqual(key);
    }));
  });

  it("absorbs the pooler's answer in a fast start: only a value that differs from the announced one reaches the client", () => {
    const announced = new Map(params.map(([n, v]) => [n, n === 'TimeZone' ? 'Mars/Base' : v] as [string, string]));
    fc.assert(fc.property(fc.array(fc.nat(200), { maxLength: 8 }), (cuts) => {
      const { forwarded, last } = run(new LoginAnswer(announced, true), Buffer.concat([login(), answer]), cuts);
      expect(last.kind).toBe('ready');
      expect(forwarded.equals(Buffer.concat([encodeBackend({ type: 'ParameterStatus', name: 'TimeZone', value: 'Etc/UTC' }), answer]))).toBe(true);
    }));
  });

  it("a refused fast start: the pooler's ErrorResponse, with its SQLSTATE", () => {
    const refusal = errorResponse('FATAL', '28000', 'certificate "agent-9" is not mapped to this user');
    const step = new LoginAnswer(new Map(params), true).feed(refusal);
    expect(step).toEqual({ kind: 'refused', forward: refusal, sqlstate: '28000' });
    // Without a fast start the client reads the error itself: passed on, nothing learned.
    const plain = new LoginAnswer(null, true).feed(refusal);
    expect(plain).toMatchObject({ kind: 'ready', record: null, key: null });
    expect(plain.kind === 'ready' && plain.forward.equals(refusal)).toBe(true);
  });

  it('a password request: refused when the agent answered the client, passed on (and not learned) otherwise', () => {
    const sasl = encodeBackend({ type: 'AuthenticationSASL', mechanisms: ['SCRAM-SHA-256'] });
    expect(new LoginAnswer(new Map(), true).feed(sasl).kind).toBe('passwordRequested');
    expect(new LoginAnswer(null, true).feed(sasl).kind).toBe('passwordRequested');
    const relayed = new LoginAnswer(null, false);
    expect(relayed.feed(sasl)).toEqual({ kind: 'more', forward: sasl });
    const done = relayed.feed(login());
    expect(done).toMatchObject({ kind: 'ready', record: null }); // a password login is not one to fast-start
  });

  it('a notice or anything unusual in the login: passed on, not learned', () => {
    const notice = noticeResponse('WARNING', '01000', 'the pooler says hello');
    const step = run(new LoginAnswer(null, false), login(params, [notice])).last;
    expect(step).toMatchObject({ kind: 'ready', record: null });
    const fast = run(new LoginAnswer(new Map(params), true), login(params, [notice]));
    expect(fast.forwarded.equals(notice)).toBe(true);
  });

  it('a login answer that does not end, or has a bad length, is broken', () => {
    const huge = encodeBackend({ type: 'ParameterStatus', name: 'x', value: 'y'.repeat(MAX_LOGIN_ANSWER_BYTES) });
    expect(new LoginAnswer(null, false).feed(huge.subarray(0, huge.length - 1)).kind).toBe('broken');
    expect(new LoginAnswer(null, false).feed(Buffer.from([0x53, 0, 0, 0, 2])).kind).toBe('broken');
  });

  it("the agent's own answer is a login the same reader learns again", () => {
    const own = localLoginAnswer({ parameters: params, keyLength: 4 }, key);
    expect(own.equals(login())).toBe(true);
  });
});

describe('CancelKeys', () => {
  it('maps its own keys to the real ones; a cancel before the real key waits for it, or is dropped when the session ends', async () => {
    const keys = new CancelKeys();
    const own = keys.issue(4);
    expect(own.secretKey.length).toBe(4);
    const packet = Buffer.from('as sent');
    const early = keys.translate(own, packet);
    expect(early).toBeInstanceOf(Promise);
    expect(keys.held).toBe(1);
    keys.resolve(own, key);
    const real = await early;
    expect(real?.readInt32BE(8)).toBe(key.processId);
    expect(real?.subarray(12).equals(key.secretKey)).toBe(true);
    expect(keys.held).toBe(0);
    // Known now: at once.
    expect(Buffer.isBuffer(keys.translate(own, packet))).toBe(true);

    const other = keys.issue(32);
    const dropped = keys.translate(other, packet);
    keys.release(other);
    expect(await dropped).toBeNull();
    // Not the agent's: unchanged.
    expect(keys.translate({ processId: 1, secretKey: Buffer.from([9, 9, 9, 9]) }, packet)).toBe(packet);
    keys.release(own);
    expect(keys.translate(own, packet)).toBe(packet);
  });
});
