export * from './session-stream.js';
export * from './tcp/index.js';
export * from './tls/index.js';
export * from './memory/index.js';
export * from './certs.js';
export * from './peer-certificate.js';
export * from './node-postgres.js';
export * from './quic/index.js';
