import { describe, expect, it } from 'vitest';
import { CycleClock } from './clock.js';
import { WriteBatcher } from './write-batcher.js';
import { ManualClock } from '../../test/support/manual-clock.js';

describe('CycleClock', () => {
  it('reads its clock once per outermost read cycle, and every time outside one', () => {
    const manual = new ManualClock();
    const clock = new CycleClock(manual);
    manual.advance(5);
    expect(clock.now()).toBe(5);
    clock.beginCycle();
    manual.advance(1);
    expect(clock.now()).toBe(6); // the cycle's reading, taken at its first now()
    manual.advance(1);
    clock.beginCycle(); // nested: shares the outer reading
    expect(clock.now()).toBe(6);
    clock.endCycle();
    expect(clock.now()).toBe(6);
    clock.endCycle();
    expect(clock.now()).toBe(7); // outside: the clock itself
    clock.beginCycle();
    manual.advance(3);
    expect(clock.now()).toBe(10); // a new cycle, a new reading
    clock.endCycle();
  });

  it('fires timers on its clock', () => {
    const manual = new ManualClock();
    const clock = new CycleClock(manual);
    const fired: string[] = [];
    clock.setTimer(() => fired.push('a'), 10);
    const b = clock.setTimer(() => fired.push('b'), 10);
    clock.clearTimer(b);
    manual.advance(10);
    expect(fired).toEqual(['a']);
  });

  it('is held by the write batcher between its outermost beginCycle and endCycle', () => {
    const manual = new ManualClock();
    const clock = new CycleClock(manual);
    const batcher = new WriteBatcher(clock);
    batcher.beginCycle();
    expect(clock.now()).toBe(0);
    manual.advance(2);
    batcher.beginCycle();
    batcher.endCycle();
    expect(clock.now()).toBe(0);
    batcher.endCycle();
    expect(clock.now()).toBe(2);
  });
});
