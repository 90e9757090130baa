/**
 * Calls the API's real route handlers, as Next.js would, without a server: `new Request(...)` in,
 * `Response` out, through the route file's exported function (so authentication, the cross-site
 * check, parsing, the service, Postgres and the output schema all run). Each test file gets a
 * database of its own, with the process-wide service dependencies pointed at it, operators of
 * every role signed in, and an API token for each role.
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import { type LimiterStore, RedisStore } from "@limitplane/enforcer/limiter";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, inject } from "vitest";
import type { AnyEndpoint } from "@/lib/api/endpoint";
import { ENDPOINTS } from "@/lib/api/endpoints";
import type { ScryptParams } from "@/lib/control/auth/password";
import type { Role } from "@/lib/control/auth/roles";
import { signIn } from "@/lib/control/auth/sign-in";
import { SignInLimiter } from "@/lib/control/auth/sign-in-limiter";
import type { AuthDeps, ControlDeps } from "@/lib/control/deps";
import { createOperator } from "@/lib/control/operator/create-operator";
import { createApiToken } from "@/lib/control/token/create-api-token";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { installDeps } from "@/lib/server/composition";
import { closeSharedLimiterStores } from "@/lib/server/limiter-store";
import { createRedis } from "@/lib/server/redis";
import { countEverything, importExamplePolicy } from "./policy-fixtures";
import { provideTestDatabase, type TestDatabase } from "./test-database";

const ROOT = path.resolve(import.meta.dirname, "../../..");

/** The console's origin in these tests; requests carry it as their Host. */
export const ORIGIN = "http://console.test";

/** Cheap scrypt for tests: the production default costs ~0.1 s a hash. Never used outside tests. */
export const FAST_SCRYPT: ScryptParams = { N: 2 ** 10, r: 8, p: 1 };

export const TEST_PASSWORD = "correct horse battery staple";

export type Credential = { readonly session: string } | { readonly token: string } | null;

export interface CallOptions {
  readonly as?: Credential;
  /** Sent as JSON. */
  readonly body?: unknown;
  /** Sent as is (with `application/json` unless `headers` says otherwise). */
  readonly rawBody?: string;
  readonly headers?: Record<string, string>;
  /**
   * The Origin header: `same` (default for a session's mutation), `none`, or an origin.
   * @default "same" for session mutations, "none" otherwise
   */
  readonly origin?: "same" | "none" | string;
}

export interface ApiResponse {
  readonly status: number;
  readonly headers: Headers;
  /** Parsed JSON, or the text when the body is not JSON; null for an empty body. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read response bodies by path.
  readonly body: any;
  readonly text: string;
}

export interface SignedIn {
  readonly operatorId: string;
  readonly email: string;
  readonly session: string;
  readonly sessionId: string;
  readonly token: string;
  readonly tokenId: string;
}

export interface ApiHarness {
  db(): PrismaClient;
  /** The file's database: its URLs as the application role and as the owner. */
  database(): TestDatabase;
  authDeps(): AuthDeps;
  /** Moves the clock the services and authentication read. */
  advanceClock(ms: number): void;
  nowMs(): number;
  /** A signed-in operator (session) and an API token for each role. */
  as(role: Role): SignedIn;
  call(method: string, requestPath: string, options?: CallOptions): Promise<ApiResponse>;
  /** Every table's rows and versions (not timestamps): equal fingerprints mean nothing was written. */
  fingerprint(): Promise<Record<string, number>>;
}

export interface HarnessOptions {
  /** Import the example policy first. @default true */
  readonly withPolicy?: boolean;
  /**
   * The sign-in limiter's store. @default the Redis store, under a key prefix of this file's own
   * (`signInKeyPrefix`)
   */
  readonly signInStore?: LimiterStore;
}

interface RouteMatch {
  readonly endpoint: AnyEndpoint;
  readonly params: Record<string, string>;
}

/** The endpoint whose path template matches `requestPath`, preferring literal segments. */
export function matchEndpoint(method: string, requestPath: string): RouteMatch | null {
  const pathname = requestPath.split("?")[0] ?? requestPath;
  let best: (RouteMatch & { readonly literals: number }) | null = null;
  for (const endpoint of ENDPOINTS) {
    if (endpoint.method !== method) continue;
    const names: string[] = [];
    const pattern = endpoint.path.replace(/\{(\w+)\}/g, (_whole, name: string) => {
      names.push(name);
      return "([^/]+)";
    });
    const match = new RegExp(`^${pattern}$`).exec(pathname);
    if (match === null) continue;
    const params = Object.fromEntries(
      names.map((name, index) => [name, decodeURIComponent(match[index + 1] ?? "")]),
    );
    const literals = endpoint.path.split("/").length - names.length;
    if (best === null || literals > best.literals) best = { endpoint, params, literals };
  }
  return best;
}

type RouteHandler = (
  request: Request,
  context: { params: Promise<Record<string, string>> },
) => Promise<Response>;

const handlers = new Map<string, RouteHandler>();

/** The handler a route file exports for `endpoint`, loaded as Next.js would load it. */
export async function routeHandlerOf(endpoint: AnyEndpoint): Promise<RouteHandler> {
  const key = `${endpoint.method} ${endpoint.path}`;
  const cached = handlers.get(key);
  if (cached !== undefined) return cached;
  const folder = endpoint.path.replace(/\{(\w+)\}/g, "[$1]");
  const file = path.join(ROOT, "app", folder, "route.ts");
  const module: Record<string, unknown> = await import(/* @vite-ignore */ file);
  const handler = module[endpoint.method];
  if (typeof handler !== "function") throw new Error(`${file} exports no ${endpoint.method}`);
  handlers.set(key, handler as RouteHandler);
  return handler as RouteHandler;
}

export function buildRequest(method: string, requestPath: string, options: CallOptions): Request {
  const headers = new Headers({ host: "console.test", "user-agent": "limitplane-tests" });
  const credential = options.as ?? null;
  if (credential !== null && "token" in credential) {
    headers.set("authorization", `Bearer ${credential.token}`);
  }
  if (credential !== null && "session" in credential) {
    headers.set("cookie", `lp_session=${credential.session}`);
  }
  const isMutation = method !== "GET" && method !== "HEAD";
  const origin =
    options.origin ??
    (credential !== null && "session" in credential && isMutation ? "same" : "none");
  if (origin === "same") headers.set("origin", ORIGIN);
  else if (origin !== "none") headers.set("origin", origin);
  let body: string | undefined;
  if (options.rawBody !== undefined) {
    body = options.rawBody;
    headers.set("content-type", "application/json");
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers.set("content-type", "application/json");
  }
  for (const [name, value] of Object.entries(options.headers ?? {})) headers.set(name, value);
  return new Request(`${ORIGIN}${requestPath}`, { method, headers, body });
}

export async function callRoute(
  method: string,
  requestPath: string,
  options: CallOptions = {},
): Promise<ApiResponse> {
  const match = matchEndpoint(method, requestPath);
  if (match === null) throw new Error(`no endpoint for ${method} ${requestPath}`);
  const handler = await routeHandlerOf(match.endpoint);
  const response = await handler(buildRequest(method, requestPath, options), {
    params: Promise.resolve(match.params),
  });
  const text = await response.text();
  let body: unknown = null;
  if (text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: response.status, headers: response.headers, body, text };
}

const ROLES_IN_ORDER: readonly Role[] = ["viewer", "operator", "admin"];

export function provideApiHarness(options: HarnessOptions = {}): ApiHarness {
  const database = provideTestDatabase();
  let offsetMs = 0;
  const nowMs = () => Date.now() + offsetMs;
  let authDeps: AuthDeps | undefined;
  const signedIn = new Map<Role, SignedIn>();
  let redis: Redis | undefined;

  afterAll(() => {
    redis?.disconnect();
    closeSharedLimiterStores();
  });

  beforeAll(async () => {
    redis = createRedis("control", { url: inject("redisUrl"), connectionName: "lp-test-api" });
    const signInKeyPrefix = `${inject("redisKeyPrefix")}${randomBytes(3).toString("hex")}:signin:`;
    const { db } = database.current();
    const controlDeps: ControlDeps = { db, publisher: null, clock: { nowMs } };
    authDeps = {
      db,
      clock: { nowMs },
      passwordParams: FAST_SCRYPT,
      sessions: { lifetimeMs: 12 * 3_600_000, idleMs: 2 * 3_600_000, touchIntervalMs: 60_000 },
      signInLimiter: new SignInLimiter({
        store: options.signInStore ?? new RedisStore({ client: redis, keyPrefix: signInKeyPrefix }),
        secret: "test-secret-for-account-keys-0123456789",
      }),
    };
    installDeps({ control: controlDeps });
    installDeps({ auth: authDeps });
    if (options.withPolicy ?? true) await importExamplePolicy(controlDeps);
    const system = {
      actor: { type: "system" as const, id: null, name: "test setup" },
      reason: "test principals",
    };
    for (const role of ROLES_IN_ORDER) {
      const email = `${role}@limitplane.test`;
      const { operator } = await createOperator(
        {
          email,
          name: `${role[0]?.toUpperCase()}${role.slice(1)} Person`,
          role,
          password: TEST_PASSWORD,
        },
        system,
        authDeps,
      );
      const session = await signIn(
        { email, password: TEST_PASSWORD, address: "10.9.9.9", userAgent: "limitplane-tests" },
        authDeps,
      );
      const token = await createApiToken({ name: `${role} token`, role }, system, authDeps);
      signedIn.set(role, {
        operatorId: operator.id,
        email,
        session: session.sessionToken,
        sessionId: session.session.id,
        token: token.token,
        tokenId: token.apiToken.id,
      });
    }
  });

  const harness: ApiHarness = {
    db: () => database.current().db,
    database: () => database.current(),
    authDeps: () => {
      if (authDeps === undefined) throw new Error("the harness is not ready");
      return authDeps;
    },
    advanceClock: (ms) => {
      offsetMs += ms;
    },
    nowMs,
    as: (role) => {
      const principal = signedIn.get(role);
      if (principal === undefined) throw new Error("the harness is not ready");
      return principal;
    },
    call: (method, requestPath, callOptions) => callRoute(method, requestPath, callOptions),
    fingerprint: () => fingerprint(database.current().db),
  };
  return harness;
}

/** `countEverything` plus operators, sessions and tokens (rows, versions, revocations). */
export async function fingerprint(db: PrismaClient): Promise<Record<string, number>> {
  const [policy, rows] = await Promise.all([
    countEverything(db),
    db.$queryRaw<{ name: string; count: bigint; versions: bigint }[]>`
      SELECT 'operators' AS name, count(*) AS count, coalesce(sum(version), 0) AS versions FROM "Operator"
      UNION ALL SELECT 'sessions', count(*), count("revokedAt") FROM "Session"
      UNION ALL SELECT 'tokens', count(*), coalesce(sum(version), 0) FROM "ApiToken"`,
  ]);
  return {
    ...policy,
    ...Object.fromEntries(
      rows.flatMap((row) => [
        [row.name, Number(row.count)],
        [`${row.name}.versions`, Number(row.versions)],
      ]),
    ),
  };
}
