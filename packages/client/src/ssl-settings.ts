// QUIC always runs TLS 1.3, and the pooler's certificate is checked by the session manager's
// certificate options: there is no TLS inside a session stream, and an SSLRequest on one is
// answered 'N'. So the libpq TLS settings of a connection string (cloud DATABASE_URLs carry
// `sslmode=require`) and PGSSLMODE mean nothing to a QUIC client: they are dropped, and pg is told
// `ssl: false`, instead of pg failing at the first query ("The server does not support SSL
// connections"). pg-connection-string would also read sslcert/sslkey/sslrootcert files: dropped
// before it parses.

const TLS_PARAMETERS: ReadonlySet<string> = new Set(['ssl', 'sslmode', 'sslcert', 'sslkey', 'sslrootcert', 'sslcrl', 'sslpassword', 'sslnegotiation', 'uselibpqcompat']);

/** `connectionString` without its TLS query parameters (anything else is kept as written). */
export function withoutTlsParameters(connectionString: string): string {
  const q = connectionString.indexOf('?');
  if (q < 0) return connectionString;
  const kept = connectionString
    .slice(q + 1)
    .split('&')
    .filter((pair) => {
      const name = pair.split('=', 1)[0] ?? '';
      let decoded = name;
      try {
        decoded = decodeURIComponent(name);
      } catch {
        // not percent-encoded as it should be: compared as written
      }
      return !TLS_PARAMETERS.has(decoded.toLowerCase());
    });
  return kept.length > 0 ? `${connectionString.slice(0, q)}?${kept.join('&')}` : connectionString.slice(0, q);
}
