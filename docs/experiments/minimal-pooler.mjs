// An experiment, not a product (docs/performance.md, "What the LAN gap is made of"): the least a
// transaction pooler can do on the transport's fast paths, measured against quicpool and the
// `transportForwarder` pipe in bench:lan, which runs it as a daemon CLI through `--baseline`:
//   node apps/bench/dist/bin/quicpool-bench.js lan --rounds 3 \
//     --targets quicpoolTcp,pgbouncer,transportForwarder --baseline docs/experiments/minimal-pooler.mjs
// It reads the daemon config bench:lan writes (upstream, pool size, the one user's password). Clients:
// startup answered locally (SSLRequest refused); every read goes to the client's server connection,
// taken from a LIFO idle list (or a FIFO queue) at the client's first bytes and given back at
// ReadyForQuery 'I'. Server connections log in with SCRAM (pg's own SASL helpers). No session state,
// no parsing beyond the server's message headers, no timers, no metrics, no error handling: it is
// enough for pgbench -S and nothing else. Needs `npm run build` first.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
const require = createRequire(new URL('../../packages/client/package.json', import.meta.url));
const sasl = require('pg/lib/crypto/sasl.js');
const { dialTcp, listenTcp } = await import(new URL('../../packages/transport/dist/index.js', import.meta.url).href);

const configFile = process.argv[process.argv.indexOf('--config') + 1];
const text = readFileSync(configFile, 'utf8');
// bench:lan reads the daemon's development certificates from its state folder (unused over plain TCP).
const certs = join(dirname(configFile), 'certs');
mkdirSync(certs, { recursive: true });
for (const f of ['ca.pem', 'server.pem', 'server.key']) writeFileSync(join(certs, f), '');
const section = (name) => text.split(`[${name}]`)[1]?.split('\n[')[0] ?? '';
const key = (sec, k) => /=\s*"?([^"\n]*)"?/.exec(sec.split('\n').find((l) => l.startsWith(`${k} `)) ?? '')?.[1];
const upstream = { host: key(section('upstream'), 'host'), port: Number(key(section('upstream'), 'port')) };
const poolSize = Number(key(section('pool'), 'size'));
const userSection = /\[users\."([^"]+)"\]\npassword = "([^"]*)"/.exec(text);
const password = userSection[2];

const READ = 64 * 1024;
const message = (type, body) => {
  const b = Buffer.alloc(5 + body.length);
  b[0] = type.charCodeAt(0);
  b.writeInt32BE(4 + body.length, 1);
  body.copy(b, 5);
  return b;
};
const cstr = (s) => Buffer.from(`${s}\0`);

// --- server connections ---------------------------------------------------------------------------
const idle = [];
const waiting = [];
let serverParameters = [];

function login(user, database) {
  return new Promise((resolve, reject) => {
    const b = { stream: null, client: null, buffer: Buffer.allocUnsafe(READ), type: 0, left: 0, onBytes: null };
    let acc = Buffer.alloc(0);
    let session = null;
    const params = [];
    b.onBytes = (chunk) => {
      acc = Buffer.concat([acc, chunk]);
      while (acc.length >= 5 && acc.length >= 1 + acc.readInt32BE(1)) {
        const len = acc.readInt32BE(1);
        const type = String.fromCharCode(acc[0]);
        const body = acc.subarray(5, 1 + len);
        const whole = acc.subarray(0, 1 + len);
        acc = acc.subarray(1 + len);
        if (type === 'R') {
          const code = body.readInt32BE(0);
          if (code === 10) {
            const mechs = body.subarray(4).toString().split('\0').filter(Boolean);
            session = sasl.startSession(mechs);
            const resp = Buffer.from(session.response);
            const lenBuf = Buffer.alloc(4);
            lenBuf.writeInt32BE(resp.length);
            b.stream.write(message('p', Buffer.concat([cstr(session.mechanism), lenBuf, resp])));
          } else if (code === 11) {
            sasl.continueSession(session, password, body.subarray(4).toString()).then(() => b.stream.write(message('p', Buffer.from(session.response))), reject);
          } else if (code === 12) {
            sasl.finalizeSession(session, body.subarray(4).toString());
          } else if (code !== 0) reject(new Error(`auth code ${code}`));
        } else if (type === 'S') params.push(Buffer.from(whole));
        else if (type === 'E') reject(new Error(body.toString()));
        else if (type === 'Z') {
          serverParameters = params;
          b.onBytes = null;
          resolve(b);
          return;
        }
      }
    };
    const readInto = {
      buffer: () => b.buffer,
      callback: (n) => {
        if (b.onBytes !== null) b.onBytes(Buffer.from(b.buffer.subarray(0, n)));
        else fromServer(b, n);
        return true;
      },
    };
    dialTcp({ host: upstream.host, port: upstream.port, readInto }).then((s) => {
      b.stream = s;
      const body = Buffer.concat([Buffer.from([0, 3, 0, 0]), cstr('user'), cstr(user), cstr('database'), cstr(database), Buffer.from([0])]);
      const start = Buffer.alloc(4);
      start.writeInt32BE(4 + body.length);
      s.write(Buffer.concat([start, body]));
    }, reject);
  });
}

/** n bytes from the server in b.buffer: on to its client; at ReadyForQuery 'I' the connection goes back. */
function fromServer(b, n) {
  const buf = b.buffer;
  const c = b.client;
  // Walk the message headers; a body may straddle reads (`left` bytes of message `type` still to come).
  let i = 0;
  let lastStatus = 0;
  while (i < n) {
    if (b.left > 0) {
      const take = Math.min(b.left, n - i);
      if (b.type === 90) lastStatus = buf[i + take - 1];
      b.left -= take;
      i += take;
      continue;
    }
    if (n - i < 5) {
      // Rare: a header split across reads; pgbench -S never does this at these sizes.
      throw new Error('split header');
    }
    b.type = buf[i];
    b.left = buf.readInt32BE(i + 1) - 4;
    i += 5;
    lastStatus = 0;
  }
  c.stream.writeChunk(buf.subarray(0, n));
  if (c.stream.holdsWrittenBytes()) b.buffer = Buffer.allocUnsafe(READ);
  if (b.type === 90 && b.left === 0 && lastStatus === 73) release(b);
}

function release(b) {
  b.client.backend = null;
  b.client = null;
  const next = waiting.shift();
  if (next === undefined) {
    idle.push(b);
    return;
  }
  attach(next, b);
  for (const p of next.pending) b.stream.writeChunk(p);
  next.pending = [];
}

function attach(c, b) {
  c.backend = b;
  b.client = c;
}

// --- clients ----------------------------------------------------------------------------------------
let pool = null;
const listener = await listenTcp({ host: '127.0.0.1' });
listener.onSession((stream) => {
  const c = { stream, backend: null, started: false, pending: [], buffer: Buffer.allocUnsafe(READ) };
  stream.on('error', () => stream.destroy());
  stream.readInto({
    buffer: () => c.buffer,
    callback: (n) => {
      if (!c.started) {
        startup(c, Buffer.from(c.buffer.subarray(0, n)));
        return true;
      }
      const chunk = c.buffer.subarray(0, n);
      if (chunk[0] === 88) {
        // Terminate: the client goes; a connection it still held would be lost here (pgbench holds none).
        stream.destroy();
        return true;
      }
      let b = c.backend;
      if (b === null) {
        b = idle.pop() ?? null;
        if (b === null) {
          c.pending.push(Buffer.from(chunk));
          waiting.push(c);
          return true;
        }
        attach(c, b);
      }
      b.stream.writeChunk(chunk);
      if (b.stream.holdsWrittenBytes()) c.buffer = Buffer.allocUnsafe(READ);
      return true;
    },
  });
});

async function startup(c, bytes) {
  const code = bytes.readInt32BE(4);
  if (code === 80877103) {
    c.stream.write(Buffer.from('N'));
    return;
  }
  const parts = bytes.subarray(8).toString().split('\0');
  const params = {};
  for (let i = 0; i + 1 < parts.length; i += 2) if (parts[i]) params[parts[i]] = parts[i + 1];
  pool ??= Promise.all(Array.from({ length: poolSize }, () => login(params.user, params.database))).then((bs) => idle.push(...bs));
  await pool;
  c.started = true;
  const key = Buffer.alloc(8);
  c.stream.write(Buffer.concat([message('R', Buffer.from([0, 0, 0, 0])), ...serverParameters, message('K', key), message('Z', Buffer.from('I'))]));
}

process.stdout.write(`Listening: tcp 127.0.0.1:${listener.address().port}\n`);
process.once('SIGTERM', () => process.exit(0));
