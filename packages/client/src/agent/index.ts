export { QuicAgent } from './agent.js';
export type { AgentAddresses } from './agent.js';
export { DEFAULT_AGENT_OPTIONS, resolveAgentOptions } from './options.js';
export type { AgentOptions, ResolvedAgentOptions } from './options.js';
export type { AgentStats, AgentCounters, AgentEvent, AgentEvents, RefusalCode } from './stats.js';
export { readFirstPacket } from './first-packet.js';
export type { FirstPacket } from './first-packet.js';
export { MessageBoundary } from './message-boundary.js';
