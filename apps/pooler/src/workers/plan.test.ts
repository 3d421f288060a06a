import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { planWorkers } from './plan.js';

describe('planWorkers', () => {
  it('runs one per core for 0, the configured count otherwise', () => {
    expect(planWorkers(0, { available: true })).toEqual({ count: availableParallelism(), note: null });
    expect(planWorkers(3, { available: true })).toEqual({ count: 3, note: null });
    expect(planWorkers(1, { available: false, reason: 'x' })).toEqual({ count: 1, note: null });
  });

  it('runs one worker without the native module, and says why', () => {
    const plan = planWorkers(4, { available: false, reason: 'no build for this platform' });
    expect(plan.count).toBe(1);
    expect(plan.note).toMatch(/one worker instead of 4: .*native UDP module.*no build for this platform/);
  });
});
