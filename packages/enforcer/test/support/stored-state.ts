import type { Redis } from "ioredis";
import type { RedisStore } from "../../src/limiter/stores/redis";

/*
 * A bucket's packed state as the Redis store keeps it: the field `:<bucket>` of the subject's hash
 * (`RedisStore.subjectKey`), read and written directly, as a test that looks under the store
 * must. A sliding log's entries are a sorted set at `RedisStore.logKey` instead.
 */

/** The packed state of `bucket` under `subject`; null when there is none. */
export function packedStateOf(
  client: Redis,
  store: RedisStore,
  subject: string,
  bucket: string,
): Promise<Buffer | null> {
  return client.hgetBuffer(store.subjectKey(subject), `:${bucket}`);
}

/** Puts `value` where the store keeps `bucket`'s state under `subject`, the key living `ttlMs`. */
export async function writePackedState(
  client: Redis,
  store: RedisStore,
  subject: string,
  bucket: string,
  value: string | Buffer,
  ttlMs: number,
): Promise<void> {
  const key = store.subjectKey(subject);
  await client.hset(key, `:${bucket}`, value);
  await client.pexpire(key, ttlMs);
}
