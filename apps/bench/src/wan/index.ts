export { startWanEmulator, summarize } from './emulator.js';
export type { PerDirection, RttMeasurement, WanEmulator, WanEmulatorOptions, WanProtocol, WanStats } from './emulator.js';
export { DelayLine } from './delay-line.js';
export { seededRandom } from '@quicpool/pg-fixture';
export type { DelayLineStats, Sink } from './delay-line.js';
