/**
 * The shapes a resolution is made of, shared by `prepare.ts` (which caches them per tier and
 * endpoint class) and `resolve.ts` (which builds them): in a module of their own so that neither
 * imports the other.
 */
import type { LimitCheck } from "../limiter/types";
import type { TOnStoreFailure, TPolicyMode } from "./schemas";

/** What {@link PreparedSnapshot.cache} holds per tier and endpoint class. */
export interface CachedResolution {
  readonly checks: readonly ResolvedCheck[];
  readonly slots: readonly TraceSlot[];
}

/** The three layers of a decision (see the README's resolution table). */
export type Layer = "account" | "endpoint" | "ceiling";

/** Where a rule comes from. */
export type RuleSource =
  | "tier"
  | "customer-override"
  | "incident-override"
  | "ceiling"
  | "address"
  | "candidate";

/** One limit to check, with what the enforcer needs beyond the limiter's `LimitCheck`. */
export interface ResolvedCheck extends LimitCheck {
  /** Always set: the layer's bucket for an enforced check, its own bucket for a dry-run one. */
  readonly bucket: string;
  readonly layer: Layer;
  /** What to do when the store fails. Always `open` for dry-run checks, which never reject. */
  readonly onStoreFailure: TOnStoreFailure;
  /**
   * Set on the enforced check of a `global` tier limit or ceiling (docs/regions.md): its limit is
   * the whole budget, of which an enforcer applies its region's share.
   */
  readonly global?: true;
}

/**
 * Why a rule did or did not produce a check.
 * - `applies`: decides its layer; an enforced check on the layer's bucket.
 * - `dry-run`: checked in dry-run on its own bucket.
 * - `replaced`: a more specific rule applies (`by` names it).
 * - `superseded`: an incident that is active, but a later-starting one applies (`by`).
 * - `off`: mode off; skipped as if absent.
 * - `expired` / `not-started`: an incident outside its time range.
 * - `nothing-to-scale`: an incident factor with no enforced rule below it.
 */
export type TraceStatus =
  | "applies"
  | "dry-run"
  | "replaced"
  | "superseded"
  | "off"
  | "expired"
  | "not-started"
  | "nothing-to-scale";

/** One rule considered in a layer. */
export interface TraceRule {
  readonly scope: string;
  readonly source: RuleSource;
  readonly status: TraceStatus;
  /** The limit it sets (for a factor incident, the scaled limit), or null when there is none. */
  readonly limit: TraceLimit | null;
  /** Incidents are always `enforce`; candidates always `dry-run`. */
  readonly mode: TPolicyMode;
  /** The scope that decided the layer instead, for `replaced` and `superseded`. */
  readonly by: string | null;
  /** Incident details, for incident overrides. */
  readonly incident: {
    readonly factor: number | null;
    readonly startsAt: string;
    readonly expiresAt: string;
  } | null;
  /** The scope a candidate stands in for, for candidates. */
  readonly target: string | null;
}

export type TraceLimit = LimitCheck["limit"];

/** One layer's bucket and every rule considered for it, least specific first. */
export interface TraceSlot {
  readonly layer: Layer;
  readonly bucket: string;
  readonly rules: readonly TraceRule[];
}
