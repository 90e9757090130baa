/**
 * SHA-256 for the policy module, from `@noble/hashes` (audited, no dependencies): synchronous and
 * the same in Node, an edge runtime and a browser (a console preview), where `node:crypto` is
 * missing and Web Crypto's digest is async (which would make every snapshot parse async).
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";

/** The SHA-256 digest of `bytes`, 32 bytes. */
export function sha256Bytes(bytes: Uint8Array): Uint8Array {
  return sha256(bytes);
}

/** Lowercase hex SHA-256 of the UTF-8 encoding of `text`. */
export function sha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}
