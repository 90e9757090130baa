/**
 * The Lua behind `RedisStore`, read from `redis-decide.lua` beside this module (the build copies
 * it into `dist/`, so the package and the source read the same file). The file defines
 * `decide(KEYS, ARGV)`; its comments say what it does and what it must agree with.
 *
 * Two forms of the same code:
 * - `REDIS_DECIDE_LIBRARY`, a Redis function library (Redis 7.0+: `FUNCTION LOAD`, called with
 *   `FCALL REDIS_DECIDE_FUNCTION`). Its top level runs once, when the library is loaded, so every
 *   helper is made once and argument texts stay parsed between calls; a call runs `decide` only.
 *   This is what the store uses.
 * - `REDIS_DECIDE_LUA`, the same body plus `return decide(KEYS, ARGV)`, for EVALSHA: for a Redis
 *   that refuses functions (before 7.0, or an ACL without `FUNCTION`). Every call then runs the
 *   top level again, making every helper anew: about 5 us more per call on this machine.
 *
 * The names and the SHA-1 are computed from the file's text when this module loads, so an edit to
 * the script is a new version without anyone updating a constant.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The script's text: `redis-decide.lua`, which defines `decide(KEYS, ARGV)`. Found by this
 * module's own path, not by `new URL("./redis-decide.lua", import.meta.url)`: Next.js's bundler
 * (Turbopack, which bundles the console's store) rewrites that pattern into a URL of a copied
 * asset that `readFileSync` does not take, while it keeps `import.meta.url` the module's file.
 */
export const REDIS_DECIDE_BODY = readFileSync(
  path.join(path.dirname(fileURLToPath(import.meta.url)), "redis-decide.lua"),
  "utf8",
);

/**
 * The outbound functions (`redis-outbound.lua`): turns and concurrency slots, loaded in the same
 * library after the body, so they decide with its `decide`. Only the library form has them.
 */
export const REDIS_OUTBOUND_BODY = readFileSync(
  path.join(path.dirname(fileURLToPath(import.meta.url)), "redis-outbound.lua"),
  "utf8",
);

function sha1Hex(text: string): string {
  return createHash("sha1").update(text).digest("hex");
}

/**
 * The first 12 hex digits of the SHA-1 of `REDIS_DECIDE_BODY` and `REDIS_OUTBOUND_BODY`: the
 * version in the library's and the functions' names, so two releases' libraries live side by
 * side during a rolling deploy.
 */
export const REDIS_DECIDE_VERSION = sha1Hex(REDIS_DECIDE_BODY + REDIS_OUTBOUND_BODY).slice(0, 12);

/** The function the store calls with FCALL. */
export const REDIS_DECIDE_FUNCTION = `limitplane_decide_${REDIS_DECIDE_VERSION}`;

/** The outbound functions: a turn, giving a turn back, and concurrency slots. */
export const REDIS_OUTBOUND_FUNCTIONS = {
  turn: `limitplane_turn_${REDIS_DECIDE_VERSION}`,
  giveBack: `limitplane_give_back_${REDIS_DECIDE_VERSION}`,
  slots: `limitplane_slots_${REDIS_DECIDE_VERSION}`,
} as const;

/** The library's name (what `FUNCTION LIST LIBRARYNAME` finds). */
export const REDIS_DECIDE_LIBRARY_NAME = `limitplane_${REDIS_DECIDE_VERSION}`;

/** The library `FUNCTION LOAD` takes: the body, registering `decide` under the function's name. */
export const REDIS_DECIDE_LIBRARY = `#!lua name=${REDIS_DECIDE_LIBRARY_NAME}
${REDIS_DECIDE_BODY}${REDIS_OUTBOUND_BODY}redis.register_function("${REDIS_DECIDE_FUNCTION}", decide)
redis.register_function("${REDIS_OUTBOUND_FUNCTIONS.turn}", turn)
redis.register_function("${REDIS_OUTBOUND_FUNCTIONS.giveBack}", give_back)
redis.register_function("${REDIS_OUTBOUND_FUNCTIONS.slots}", slots)
`;

/** The EVAL form: the body, then the call. */
export const REDIS_DECIDE_LUA = `${REDIS_DECIDE_BODY}return decide(KEYS, ARGV)
`;

/** SHA-1 of `REDIS_DECIDE_LUA`, the name Redis caches the EVAL form under (EVALSHA). */
export const REDIS_DECIDE_SHA1 = sha1Hex(REDIS_DECIDE_LUA);
