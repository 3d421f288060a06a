// The flags that make quicpool-bench a benchmark's child process: a leaf module, so naming one loads no worker code.

/** A variant's client process of `bench`: `--bench-worker variant <json>`. */
export const BENCH_WORKER_FLAG = '--bench-worker';
/** `lan`'s Node forwarder: `--node-forwarder-worker <json target>`. */
export const NODE_FORWARDER_FLAG = '--node-forwarder-worker';
/** `client`'s idle-session worker: `--client-bench-idle <json config>`. */
export const IDLE_FLAG = '--client-bench-idle';
/** One side of a `transport` ping-pong, driven over IPC: `--pingpong-worker <name>`. */
export const PINGPONG_FLAG = '--pingpong-worker';
/** The server of `transport`'s QUIC ping-pong, driven over IPC. */
export const QUIC_SERVER_FLAG = '--quic-pingpong-server';
