// A user's program, run in a folder where only `npm install @quicpool/client` happened: one query
// over QUIC with the options the installed daemon printed, and which UDP I/O path was used.
// Prints one JSON line.
import { QuicPool } from '@quicpool/client';
import { udpIoStatus } from '@quicpool/transport';
import { loadUdpBinding } from '@quicpool/udp';

const warnings = [];
process.on('warning', (w) => warnings.push(`${w.code ?? w.name}: ${w.message}`));

const mode = process.argv[2];
const binding = loadUdpBinding();
const udp = { io: udpIoStatus(), path: binding.available ? binding.path : null, reason: binding.available ? null : binding.reason };
if (mode === 'io') {
  console.log(JSON.stringify({ udp }));
} else {
  const pool = new QuicPool(JSON.parse(mode));
  try {
    const { rows } = await pool.query("SELECT 40 + 2 AS answer, current_setting('data_directory') AS data_directory, version() AS version");
    const connections = pool.sessions?.stats().connections ?? 0;
    console.log(JSON.stringify({ rows, connections, udp, warnings }));
  } finally {
    await pool.end();
  }
}
