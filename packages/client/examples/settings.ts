// Where the examples connect: a quicpool pooler's QUIC endpoint(s), the CA that signed its
// certificate and the name in it, and a login. test/examples.test.ts runs every example against
// a real pooler and Postgres; to try one yourself, call it with your own settings.
export interface ExampleSettings {
  /** e.g. ['db.example.com:6432'] */
  readonly endpoints: string[];
  /** PEM of the CA that signed the pooler's certificate (or use `caFile`). */
  readonly ca: string;
  /** Name in the pooler's certificate; needed when the endpoints are IP addresses. */
  readonly serverName: string;
  readonly user: string;
  readonly password: string;
  readonly database: string;
}
