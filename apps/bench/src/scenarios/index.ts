export { SCENARIOS, findScenario } from './registry.js';
export { capacityScenario } from './capacity.js';
export { directScenario, directPgPlan } from './direct.js';
export { defineLoadScenario, scenarioRamp } from './load-scenario.js';
export type { LoadScenarioSpec } from './load-scenario.js';
export * from './presets.js';
export { runLoadVariant, latencySummary } from './run-variant.js';
export type { LoadRunOptions } from './run-variant.js';
export type * from './types.js';
