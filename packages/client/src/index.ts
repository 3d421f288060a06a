export { DEFAULT_SESSION_MANAGER_OPTIONS, resolveSessionManagerOptions, sessionCapacity } from './options.js';
export type { SessionManagerOptions } from './options.js';
