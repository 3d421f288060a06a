export { createPacketPath, packetPathUnavailableReason } from './netpath.js';
export type { CongestionControl, PacketPath, PacketPathOptions, PerDirection } from './netpath.js';
export type { DirectionStats, ForwarderReady, ForwarderStats, LatenessUs, TimeSummaryUs } from './forwarder-process.js';
export type { UdpProbeOptions, UdpProbeResult } from './udp-probe.js';
export { pathNamespaces, removeStaleNamespaces } from './namespaces.js';
export { ensureForwarderBinary, forwarderSourcePath } from './build.js';
