// How many QUIC connections and streams the client keeps. The peer grants streams per connection
// (initial_max_streams_bidi); we never ask for more than it granted, so `streamsPerConnection`
// is only an upper bound of our own.
export interface SessionManagerOptions {
  /** Most QUIC connections kept per pooler endpoint. */
  readonly maxConnections: number;
  /** Most concurrent session streams opened on one connection. */
  readonly streamsPerConnection: number;
}

export const DEFAULT_SESSION_MANAGER_OPTIONS: SessionManagerOptions = {
  maxConnections: 4,
  streamsPerConnection: 100,
};

/** The most sessions the manager can hold at once. */
export function sessionCapacity(options: SessionManagerOptions): number {
  return options.maxConnections * options.streamsPerConnection;
}

export function resolveSessionManagerOptions(partial: Partial<SessionManagerOptions> = {}): SessionManagerOptions {
  const o = { ...DEFAULT_SESSION_MANAGER_OPTIONS, ...partial };
  for (const key of ['maxConnections', 'streamsPerConnection'] as const) {
    const v = o[key];
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${key} must be a whole number >= 1, got ${v}`);
  }
  return o;
}
