export { DEFAULT_POOL_SETTINGS, resolvePoolSettings, SettingError } from './config/pool-settings.js';
export type { PoolMode, PoolSettings } from './config/pool-settings.js';
