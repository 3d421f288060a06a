export { BatchedUdpSocket, udpAddress } from './socket.js';
export type { BatchedUdpOptions, UdpAddress, UdpSocketInfo, UdpStats } from './socket.js';
export { loadUdpBinding, META_INTS, Meta } from './binding.js';
export type { BindingStatus } from './binding.js';
export { peerCredentials, peerCredentialsSupport } from './peer-credentials.js';
export type { PeerCredentials, PeerCredentialsSupport } from './peer-credentials.js';
export { closeSocket, dupSocket, reuseportGroup, socketGroupSupport } from './socket-groups.js';
export type { BpfInstruction, SocketGroup, SocketGroupOptions, SocketGroupSupport, Steering } from './socket-groups.js';
