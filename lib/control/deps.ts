/**
 * What services run against, as types. The process-wide values are built in one place, the
 * composition root (`lib/server/composition.ts`); tests pass their own (their database, their
 * Redis, a driven clock). Time comes from one `Clock` (the limiter's interface; in the control
 * plane its readings are wall-clock epoch milliseconds): no service reads `Date.now` itself.
 */
import type { Clock, LimiterStore } from "@limitplane/enforcer/limiter";
import type {
  RejectionTallyReadingRedis,
  SeenReadingRedis,
} from "@limitplane/enforcer/publication";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import type { SessionSettings } from "./auth/auth-settings";
import type { ScryptParams } from "./auth/password";
import type { SignInLimiter } from "./auth/sign-in-limiter";
import type { SsoRechecker } from "./auth/sso-identity";
import type { PasswordSignInPolicy } from "./auth/sso-settings";
import type { SnapshotPublisher } from "./outbox/publish-pending-snapshots";

export type { Clock };

export interface ControlDeps {
  readonly db: PrismaClient;
  /**
   * Publishes a new policy version right after its change commits (best effort, so enforcers hear
   * within milliseconds). Null leaves publication to the worker alone.
   */
  readonly publisher: SnapshotPublisher | null;
  /** The wall clock: incident times are checked and snapshots compiled against it. */
  readonly clock: Clock;
  /** Signs each audit entry's chain hash (AUDIT_KEY; audit/audit-chain.ts). @default DEV_AUDIT_KEY */
  readonly auditKey?: string;
}

/** Read services need only the database. */
export type ReadDeps = Pick<ControlDeps, "db">;

/** Reads whose answer depends on now (an incident's state, what is current) take the clock too. */
export type ClockedReadDeps = Pick<ControlDeps, "db" | "clock">;

/** What the authentication, operator and token services run against. */
export interface AuthDeps {
  readonly db: PrismaClient;
  /** The wall clock: session and token expiry are judged against it. */
  readonly clock: Clock;
  /** For new password hashes. Tests use cheap ones; production keeps the default. */
  readonly passwordParams: ScryptParams;
  readonly sessions: SessionSettings;
  readonly signInLimiter: SignInLimiter;
  /** Signs each audit entry's chain hash (AUDIT_KEY; audit/audit-chain.ts). @default DEV_AUDIT_KEY */
  readonly auditKey?: string;
  /** Whether passwords are accepted (auth/sso-settings.ts). @default on, for everyone */
  readonly passwordSignIn?: PasswordSignInPolicy;
  /**
   * Re-checks the role of sessions signed in through the identity provider
   * (auth/recheck-sso-session.ts). @default none: no single sign-on, nothing to re-check
   */
  readonly ssoRecheck?: SsoRechecker;
}

/** The commands the fleet reads use; an ioredis client satisfies it. */
export interface FleetRedis {
  zrevrange(key: string, start: number, stop: number): Promise<string[]>;
  hgetall(key: string): Promise<Record<string, string>>;
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
  /** The failovers the enforcers recorded (`readRedisFailovers`). */
  zrangebyscore(key: string, min: number, max: string): Promise<string[]>;
}

/** What the fleet reads need: the console's read connection and the key prefix. */
export interface FleetDeps {
  readonly redis: FleetRedis;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  readonly clock: Clock;
}

/** What explaining a customer's limits needs: the database, the enforcers' store, the clock. */
export interface ExplainDeps extends ClockedReadDeps {
  /** The store the enforcers share, keyed as they key it (REDIS_KEY_PREFIX). */
  readonly store: LimiterStore;
}

/** What the seen-customer reads need: the console's read connection, the key prefix, the clock. */
export interface SeenRedisDeps {
  readonly redis: SeenReadingRedis;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  readonly clock: Clock;
}

/** Listing seen customers also reads the registry (to leave registered customers out). */
export interface SeenCustomerDeps extends SeenRedisDeps, ReadDeps {}

/** Ranking rejected customers: the enforcers' tally in Redis, the registry for their names. */
export interface RejectedCustomerDeps extends ReadDeps {
  readonly redis: RejectionTallyReadingRedis;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  readonly clock: Clock;
}
