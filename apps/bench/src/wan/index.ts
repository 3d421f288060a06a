export { startWanEmulator, summarize } from './emulator.js';
export type { PerDirection, RttMeasurement, WanEmulator, WanEmulatorOptions, WanProtocol, WanStats } from './emulator.js';
export { DelayLine, seededRandom } from './delay-line.js';
export type { DelayLineStats, Sink } from './delay-line.js';
