// The [connect] section: `quicpool connect`, the local agent that carries local Postgres clients
// to poolers over QUIC. Read only by that command; `quicpool start` accepts and ignores it, so one
// file can serve both. Rendered into docs/config.md with the rest of the schema.
import type { KeySpec } from './schema.js';

const k = (type: KeySpec['type'], def: KeySpec['default'], doc: string): KeySpec => ({ type, default: def, doc, live: false });

export const CONNECT_KEYS = {
  endpoints: k('string[]', [], 'QUIC endpoints of the poolers, "host:port" or "[v6]:port" (required). Connections are spread over them; one that fails is skipped for a while (failover).'),
  host: k('string', '127.0.0.1', 'Address of the local TCP listener ("" = no TCP listener). Keep it on loopback: the local hop is plain.'),
  port: k('port', 6433, 'Local TCP port, and the number in the unix socket\'s name (`psql -h 127.0.0.1 -p 6433`, `psql -h /tmp -p 6433`).'),
  socket_dir: k('string', '/tmp', 'Directory of the unix socket `.s.PGSQL.<port>` ("" = no socket).'),
  socket_mode: k('string', '0777', 'Permission bits of the socket file, octal (as Postgres\' unix_socket_permissions; "0700": only this user).'),
  server_name: k('string', null, 'Name the poolers\' certificate must carry. Unset: the endpoint\'s host when it is a name.'),
  ca_file: k('string', null, 'CA certificates (PEM) the poolers\' certificate must chain to. Unset: Node\'s bundled public roots.'),
  pinned_fingerprint: k('string', null, 'SHA-256 fingerprint of the poolers\' certificate ("AA:BB:..."): must match exactly (CA and name not checked; no 0-RTT).'),
  dangerously_accept_any_certificate: k('bool', false, 'Accept any certificate: a man in the middle reads everything. Throwaway development set-ups only.'),
  cert_file: k('string', null, 'Client certificate (PEM) presented to the poolers (certificate authentication).'),
  key_file: k('string', null, 'Private key (PEM) of cert_file.'),
  socket_auth: { type: 'enum', default: 'pooler', live: false, values: ['pooler', 'peer', 'password'], doc: 'Local check of unix-socket sessions: "pooler" (none: the pooler authenticates each session, SCRAM relayed end to end), "peer" (the peer process\'s OS user must be the database user, SO_PEERCRED), "password" (the local list in users_file, SCRAM on the local hop).' },
  tcp_auth: { type: 'enum', default: 'pooler', live: false, values: ['pooler', 'password'], doc: 'Local check of TCP sessions: "pooler" or "password" (as socket_auth).' },
  fast_start: { type: 'enum', default: 'auto', live: false, values: ['auto', 'on', 'off'], doc: 'Answer a local client\'s startup at once from what the pooler answered the same StartupMessage last time, and send the StartupMessage with the first query in one flight (the first row in one round trip). "auto": on for sessions the agent checks itself (socket_auth/tcp_auth "peer" or "password") when it presents cert_file; off with "pooler", where a login the pooler refuses would be known only after the client was told it was in ("on" accepts that: the refusal comes in place of the first query\'s answer).' },
  login_cache_file: k('string', '.quicpool/connect-logins', 'Where the pooler\'s login answers (ParameterStatus values per StartupMessage) are kept for fast start, so a restarted agent fast-starts its first sessions too ("" = memory only).'),
  users_file: k('string', null, 'TOML file of [users.NAME] tables with password or scram_secret: the local password list of the "password" checks.'),
  max_connections: k('int', 4, 'Most QUIC connections to the poolers (N).'),
  streams_per_connection: k('int', 100, 'Most local sessions carried per QUIC connection (M; also bounded by the pooler\'s grant).'),
  min_connections: k('int', 1, 'QUIC connections opened at start and kept open when idle (the first local session needs no handshake).'),
  max_waiting: k('int', 100, 'Local sessions that may wait for a QUIC stream beyond N x M; the next one gets 53300 at once.'),
  queue_timeout_ms: k('int', 30_000, 'Longest wait of a local session for a QUIC stream, then 53300 (0 = forever).'),
  connect_timeout_ms: k('int', 10_000, 'A QUIC handshake not complete after this is given up; with no pooler left the local client gets 08001.'),
  idle_timeout_ms: k('int', 60_000, 'QUIC connections with no session for this long are closed, down to min_connections (0 = never).'),
  early_data: k('bool', true, 'Resume with 0-RTT: a new QUIC connection after a restart carries the first StartupMessage in its first flight.'),
  ticket_file: k('string', '.quicpool/connect-tickets', 'Where session tickets are kept (mode 600) so a restarted agent resumes with 0-RTT ("" = memory only).'),
  alpn: k('string[]', ['pgsql/3'], 'ALPN protocol offered to the poolers.'),
  metrics: k('bool', true, 'Serve the agent\'s Prometheus metrics over HTTP.'),
  metrics_host: k('string', '127.0.0.1', 'Address of the agent\'s metrics endpoint.'),
  metrics_port: k('port', 9433, 'Port of the agent\'s metrics endpoint (GET /metrics).'),
  drain_timeout_ms: k('int', 30_000, 'SIGTERM/SIGINT: stop accepting, wait this long for local sessions to end, then close the rest (57P01).'),
} as const satisfies Record<string, KeySpec>;
