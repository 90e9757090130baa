/**
 * How `RedisStore` runs its script: FCALL of the decide library (loading it when Redis lacks it,
 * on every primary of a Cluster), or EVALSHA with EVAL after NOSCRIPT for a Redis that refuses
 * functions; and which failures mean "Redis could not answer" (`StoreUnavailableError`, the
 * failure policy applies) rather than a bug.
 */
import { isNoScript } from "./no-script";
import {
  REDIS_DECIDE_FUNCTION,
  REDIS_DECIDE_LIBRARY,
  REDIS_DECIDE_LUA,
  REDIS_DECIDE_SHA1,
} from "./redis-decide-script";
import { StoreUnavailableError } from "./store-unavailable-error";

/**
 * The commands the store sends. An ioredis `Redis` (or `Cluster`) satisfies it; so can a fake in
 * a unit test. The client must have a command timeout and no offline queue, or a dead Redis makes
 * decisions wait: `createRedisClient("decisions", { url })` (the `/publication` entry) is built
 * for this (250 ms, fails at once while disconnected, reconnects by itself). Give it no
 * `keyPrefix` of its own: the store prefixes its keys.
 */
export interface RedisScriptClient {
  /**
   * Any command, its bulk replies as Buffers: the store sends FCALL, EVALSHA and EVAL with it
   * (the script replies with packed bytes).
   */
  callBuffer(command: string, ...args: (string | number)[]): Promise<unknown>;
  /** Any command: the store sends `FUNCTION LOAD REPLACE <library>` with it. */
  call(command: string, ...args: string[]): Promise<unknown>;
  /**
   * True for an ioredis `Cluster`, which routes each call by its keys' hash slot: batches are
   * then made per slot (a script's keys must all live in one slot).
   */
  readonly isCluster?: boolean;
  /**
   * A Cluster's primaries (ioredis `Cluster.nodes("master")`): a function library is loaded on
   * each, since FCALL runs on whichever owns the keys' slot; and a `replicated` decision runs on
   * the one that owns its slot, followed there by WAIT (see `RedisStoreOptions.replicated`).
   */
  nodes?(role: "master"): readonly RedisNodeClient[];
  /**
   * A Cluster's slot table as the client knows it now (ioredis `Cluster.slots`): per slot, the
   * `host:port` of its master first. Read to name the server that decides a subject.
   */
  readonly slots?: readonly (readonly string[] | undefined)[];
  /**
   * Asks a Cluster for its slot table again (ioredis `Cluster.refreshSlotsCache`; a refresh
   * already under way is joined, not repeated). The store asks after a `replicated` call on a
   * node's own connection failed: such calls bypass the client's own routing, so a MOVED or a
   * dead master would otherwise never move the table on after a failover.
   */
  refreshSlotsCache?(): void;
}

/**
 * One node's own connection in a Cluster (an ioredis `Redis` from `Cluster.nodes("master")`):
 * commands sent on it go to that node, whatever their keys. `options` names it as the slot table
 * does (`host:port`).
 */
export interface RedisNodeClient extends Pick<RedisScriptClient, "call" | "callBuffer"> {
  readonly options: { readonly host?: string; readonly port?: number };
}

/**
 * How the store runs its Lua: `function`, the decide library loaded once per Redis (`FUNCTION
 * LOAD`) and called with FCALL; `eval`, the same code sent as a script (EVALSHA), which makes
 * every helper anew on each call. See `redis-decide-script.ts` (the forms) and `redis-decide.lua` (the code).
 */
export type RedisScriptForm = "function" | "eval";

/**
 * Redis replies that mean "not now" rather than "your script is wrong": the failure policy
 * applies to them, as to a lost connection.
 */
const UNAVAILABLE_REPLIES = [
  "LOADING",
  "BUSY",
  "READONLY",
  "MASTERDOWN",
  "CLUSTERDOWN",
  "TRYAGAIN",
  "OOM",
  "NOREPLICAS",
  // Cluster topology replies the client could not resolve by itself (a resharding in progress, a
  // slot moving, or keys spread over slots): the decision is not made, so the failure policy
  // answers, as for any other "not now".
  "MOVED",
  "ASK",
  "CROSSSLOT",
];

/** A reply that means "not now" (see UNAVAILABLE_REPLIES). */
function isTransientReply(error: Error): boolean {
  return UNAVAILABLE_REPLIES.some((prefix) => error.message.startsWith(prefix));
}

/**
 * The error to throw for a failed call: `StoreUnavailableError` when Redis could not answer (no
 * reply at all, or a reply that means "not now"), the original error otherwise (a script or
 * protocol bug must not be mistaken for an outage and silently run the failure policy).
 */
function asStoreError(error: unknown): unknown {
  if (error instanceof Error && error.name === "ReplyError") {
    return isTransientReply(error)
      ? new StoreUnavailableError(`Redis refused the decision: ${error.message}`, { cause: error })
      : error;
  }
  const message = error instanceof Error ? error.message : String(error);
  return new StoreUnavailableError(`Redis did not answer: ${message}`, { cause: error });
}

/** Redis will not load a function library: no FUNCTION command (before 7.0), or an ACL without it. */
function isFunctionRefused(error: unknown): boolean {
  return error instanceof Error && /^(ERR unknown (sub)?command|NOPERM)/i.test(error.message);
}

/** Redis has no function of that name (a new, restarted or flushed Redis), or no FCALL at all. */
function isFunctionMissing(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error.message.startsWith("ERR Function not found") ||
      /^ERR unknown command .?fcall/i.test(error.message))
  );
}

/** Runs the decide script on one client, in the form in use ({@link RedisScriptForm}). */
export class RedisScriptRunner {
  readonly #client: RedisScriptClient;
  readonly #isCluster: boolean;
  #scriptForm: RedisScriptForm;
  /** The EVAL re-caching the script after a NOSCRIPT, while one is in flight. */
  #reloading: Promise<unknown> | undefined;
  /** The FUNCTION LOAD after a missing function, while one is in flight. */
  #loading: Promise<void> | undefined;

  constructor(client: RedisScriptClient, scriptForm: RedisScriptForm = "function") {
    if (scriptForm !== "function" && scriptForm !== "eval") {
      throw new RangeError(
        `scriptForm must be "function" or "eval", got ${JSON.stringify(scriptForm)}`,
      );
    }
    this.#client = client;
    this.#isCluster = client.isCluster === true;
    this.#scriptForm = scriptForm;
  }

  /** `function`, or `eval` when asked for or fallen back to (Redis refused to load the library). */
  get scriptForm(): RedisScriptForm {
    return this.#scriptForm;
  }

  /** One command running the decide code: FCALL of the function, or EVALSHA or EVAL of the text. */
  #send(
    command: "fcall" | "evalsha" | "eval",
    code: string,
    keys: readonly string[],
    args: readonly string[],
  ): Promise<unknown> {
    return this.#client.callBuffer(command, code, keys.length, ...keys, ...args);
  }

  /** One call of the decide code, in the form in use (see {@link RedisScriptRunner.scriptForm}). */
  run(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.#scriptForm === "function"
      ? this.#runFunction(keys, args)
      : this.#runEval(keys, args);
  }

  /**
   * One FCALL of another function of the library (`REDIS_OUTBOUND_FUNCTIONS`), loading the
   * library when it is missing. Those functions have no EVAL form: on a Redis that refuses
   * functions this throws.
   */
  async runFunction(
    functionName: string,
    keys: readonly string[],
    args: readonly string[],
  ): Promise<unknown> {
    if (this.#scriptForm === "function") {
      try {
        return await this.#send("fcall", functionName, keys, args);
      } catch (error: unknown) {
        if (!isFunctionMissing(error)) throw asStoreError(error);
      }
      this.#loading ??= this.#loadLibrary().finally(() => {
        this.#loading = undefined;
      });
      await this.#loading;
    }
    if (this.#scriptForm === "eval") {
      throw new Error(
        `${functionName} needs Redis functions (Redis 7.0+ and an ACL allowing FUNCTION LOAD and FCALL)`,
      );
    }
    try {
      return await this.#send("fcall", functionName, keys, args);
    } catch (error: unknown) {
      throw asStoreError(error);
    }
  }

  /**
   * FCALL of the decide function. When Redis has no such function (a new, restarted or flushed
   * Redis, a failover to a replica that never had it, or a Cluster node the slot moved to), ONE
   * call loads the library (on every primary of a Cluster) and the calls that failed meanwhile
   * wait for it, then call again: a flush under load costs one upload, not one per decision in
   * flight. If Redis refuses to load it (no FUNCTION command, or an ACL without it), the store
   * goes on with EVALSHA from then on.
   */
  async #runFunction(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    try {
      return await this.#send("fcall", REDIS_DECIDE_FUNCTION, keys, args);
    } catch (error: unknown) {
      if (!isFunctionMissing(error)) throw asStoreError(error);
    }
    this.#loading ??= this.#loadLibrary().finally(() => {
      this.#loading = undefined;
    });
    await this.#loading;
    if (this.#scriptForm === "eval") return this.#runEval(keys, args);
    try {
      return await this.#send("fcall", REDIS_DECIDE_FUNCTION, keys, args);
    } catch (error: unknown) {
      throw asStoreError(error);
    }
  }

  /**
   * `FUNCTION LOAD REPLACE` of the library, on the client or on every primary of a Cluster
   * (REPLACE: loading the same code again changes nothing). Refused (no FUNCTION command, or an
   * ACL without it): the store falls back to EVALSHA. No answer at all is an outage, as for a
   * decision; any other error (a bug in the library) propagates as it is.
   */
  async #loadLibrary(): Promise<void> {
    const client = this.#client;
    const targets =
      this.#isCluster && client.nodes !== undefined ? client.nodes("master") : [client];
    try {
      await Promise.all(
        targets.map((target) => target.call("FUNCTION", "LOAD", "REPLACE", REDIS_DECIDE_LIBRARY)),
      );
    } catch (error: unknown) {
      if (!isFunctionRefused(error)) throw asStoreError(error);
      this.#scriptForm = "eval";
    }
  }

  /**
   * One EVALSHA, the script's 40-byte name. When Redis answers NOSCRIPT (after `SCRIPT FLUSH`, a
   * restart or a failover to a fresh replica), ONE call re-sends the whole text with EVAL, which
   * also caches it again, and the calls that failed meanwhile wait for it and retry EVALSHA.
   */
  async #runEval(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    try {
      return await this.#send("evalsha", REDIS_DECIDE_SHA1, keys, args);
    } catch (error: unknown) {
      if (!isNoScript(error)) throw asStoreError(error);
    }
    const reloading = this.#reloading;
    if (reloading === undefined) return this.#evalAndCache(keys, args);
    // Whether the reload succeeded is its own caller's to report; this call tries again.
    await reloading.catch(() => undefined);
    try {
      return await this.#send("evalsha", REDIS_DECIDE_SHA1, keys, args);
    } catch (error: unknown) {
      if (!isNoScript(error)) throw asStoreError(error);
    }
    return this.#evalAndCache(keys, args);
  }

  async #evalAndCache(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    const call = this.#send("eval", REDIS_DECIDE_LUA, keys, args);
    this.#reloading = call;
    try {
      return await call;
    } catch (error: unknown) {
      throw asStoreError(error);
    } finally {
      if (this.#reloading === call) this.#reloading = undefined;
    }
  }
}
