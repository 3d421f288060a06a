// Every scenario in the order `pnpm bench` runs them.
import { capacityScenario } from './capacity.js';
import { directScenario } from './direct.js';
import { lanScenario } from './lan.js';
import { fairScenario, lossScenario, originalScenario, socketsScenario } from './wan-scenarios.js';
import type { Scenario } from './types.js';

export const SCENARIOS: readonly Scenario[] = [capacityScenario, directScenario, originalScenario, socketsScenario, fairScenario, lossScenario, lanScenario];

export function findScenario(name: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.name === name);
}
