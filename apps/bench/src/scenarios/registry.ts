// Every scenario in the order `pnpm bench` runs them.
import { capacityScenario } from './capacity.js';
import { directScenario } from './direct.js';
import { pendingScenarios } from './pending.js';
import type { Scenario } from './types.js';

export const SCENARIOS: readonly Scenario[] = [capacityScenario, directScenario, ...pendingScenarios];

export function findScenario(name: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.name === name);
}
