import { describe, expect, it } from 'vitest';
import { faultFigures } from './figures.js';

describe('faultFigures', () => {
  it('counts answers and failures, the longest gap between answers and the first answer after the return', () => {
    const q = (ended: number, error: string | null = null) => ({ client: 0, began: ended - 1, ended, error });
    const f = faultFigures([q(10), q(20), q(25, '57P01'), q(500), q(520), q(30, '57P01'), q(40, '08006')], 300, 530);
    expect(f).toEqual({ answered: 4, failed: 3, failedBy: { '57P01': 2, '08006': 1 }, longestGapMs: 480, recoveryMs: 200 });
    // No answer after the fault: no recovery, and the gap runs to the end of the run.
    expect(faultFigures([q(10)], 300, 2_000)).toMatchObject({ recoveryMs: null, longestGapMs: 1_990 });
  });
});
