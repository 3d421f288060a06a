export * from './session-stream.js';
