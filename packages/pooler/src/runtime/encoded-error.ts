// An ErrorResponse the pooler sends (to a client, or as a login's failure), built once.

/** An ErrorResponse ready to send, with what it says (so nobody decodes it again). */
export interface EncodedError {
  readonly bytes: Buffer;
  readonly sqlstate: string;
  readonly message: string;
}
