// The text of a simple-query `DEALLOCATE name` (StatementRouter.rewriteDeallocate): how to tell
// such a Query, and the Query that deallocates the pooler's name for the statement instead.
import { MessageType } from '@quicpool/wire';

/** `DEALLOCATE [PREPARE] name` as the whole of a simple query. */
export const DEALLOCATE_ONE = /^\s*deallocate\s+(?:prepare\s+)?(?:"((?:[^"]|"")+)"|([a-z_][\w$]*))\s*;?\s*$/i;

/**
 * Could the Query's text begin with DEALLOCATE (after \s)? False only when the first byte after
 * ASCII whitespace is ASCII and not 'd' (a non-ASCII byte may be a Unicode space: the regex decides).
 */
export function startsWithD(bytes: Buffer): boolean {
  const end = bytes.length - 1;
  let i = 5;
  for (; i < end; i++) {
    const c = bytes[i]!;
    if (c !== 0x20 && (c < 0x09 || c > 0x0d)) break;
  }
  if (i >= end) return false;
  const c = bytes[i]!;
  return c >= 0x80 || (c | 0x20) === 0x64;
}

/** The Query `DEALLOCATE "<pooler name>"`. */
export function deallocateQuery(pooler: string): Buffer {
  const body = Buffer.from(`DEALLOCATE "${pooler}"\0`, 'utf8');
  const out = Buffer.allocUnsafe(body.length + 5);
  out[0] = MessageType.Query;
  out.writeInt32BE(body.length + 4, 1);
  body.copy(out, 5);
  return out;
}
