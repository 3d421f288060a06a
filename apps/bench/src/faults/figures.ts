// What a client saw of a fault, from its queries' records (queryLoop): answered and failed (by SQLSTATE), the longest time
// no client got an answer, and how long after the server's return (or the promotion) the first answer came.
import type { QueryRecord } from '@quicpool/pg-fixture';

export type FaultFigures = ReturnType<typeof faultFigures>;

export function faultFigures(records: readonly QueryRecord[], returnedAt: number, endedAt: number) {
  const answers = records.filter((r) => r.error === null).map((r) => r.ended).sort((a, b) => a - b);
  // Failed queries by SQLSTATE (or the client library's message when there was none).
  const failedBy: Record<string, number> = {};
  for (const r of records) if (r.error !== null) failedBy[r.error] = (failedBy[r.error] ?? 0) + 1;
  let longest = 0;
  for (let i = 1; i < answers.length; i++) longest = Math.max(longest, answers[i]! - answers[i - 1]!);
  // No answer since the fault is a gap that lasts to the end of the run.
  if (answers.length > 0) longest = Math.max(longest, endedAt - answers[answers.length - 1]!);
  const first = answers.find((t) => t >= returnedAt);
  return {
    answered: answers.length,
    failed: records.length - answers.length,
    failedBy,
    /** The longest time between two answers (to any client), or from the last answer to the end of the run (ms). */
    longestGapMs: Math.round(longest),
    /** From `returnedAt` (the server back, or the promotion) to the first answer after it (ms); null: none came. */
    recoveryMs: first === undefined ? null : Math.round(first - returnedAt),
  };
}
