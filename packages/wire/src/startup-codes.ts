/** Protocol version and request codes carried in startup-phase packets. */
export const PROTOCOL_3_0 = 196608; // 3 << 16
export const PROTOCOL_3_2 = 196610; // 3 << 16 | 2
export const CANCEL_REQUEST_CODE = 80877102; // 1234 << 16 | 5678
export const SSL_REQUEST_CODE = 80877103; // 1234 << 16 | 5679
export const GSSENC_REQUEST_CODE = 80877104; // 1234 << 16 | 5680
/** Cancel keys: exactly 4 bytes in 3.0; 4..256 bytes from 3.2 on. */
export const MIN_CANCEL_KEY_LENGTH = 4;
export const MAX_CANCEL_KEY_LENGTH = 256;
