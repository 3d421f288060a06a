// Postgres's md5 password method: the stored secret is "md5" + md5(password || user), the wire
// answer is "md5" + md5(hex(secret) || salt). Weak (a captured exchange allows offline guessing
// and replays of the secret), which is why the pooler refuses it on unencrypted TCP by default.
import { createHash, timingSafeEqual } from 'node:crypto';

const md5hex = (data: string | Buffer): string => createHash('md5').update(data).digest('hex');

/** The secret Postgres stores for `password` of role `user`: "md5" + 32 hex digits. */
export function md5Secret(user: string, password: string): string {
  return `md5${md5hex(password + user)}`;
}

/** What a client sends in its PasswordMessage for this secret and salt. */
export function md5Response(secret: string, salt: Buffer): string {
  return `md5${md5hex(Buffer.concat([Buffer.from(secret.slice(3)), salt]))}`;
}

/** Constant-time check of a client's md5 answer. */
export function verifyMd5(secret: string, salt: Buffer, answer: string): boolean {
  const expected = Buffer.from(md5Response(secret, salt));
  const got = Buffer.from(answer);
  return got.length === expected.length && timingSafeEqual(got, expected);
}
