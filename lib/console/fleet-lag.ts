/**
 * What the fleet table says about an enforcer's policy version. Lag is only lag for an enforcer
 * that was running when the version was published and then had to apply it; one that started
 * later simply loaded what was current at its start, and saying "applied 1 min 24 s after
 * publication" for it reads like a slow enforcer. Pure: time is a parameter.
 */

/** What the table needs of an enforcer's heartbeat (`EnforcerHeartbeat`). */
export interface EnforcerVersionFacts {
  /** The version it runs; `null` before it applied any. */
  readonly version: number | null;
  readonly appliedAtMs: number | null;
  /** How it got the version: `startup`, `announcement`, `poll`, ... */
  readonly appliedVia: string | null;
  readonly startedAtMs: number | null;
}

/** What the policy head (`{policy}:head`) says. */
export interface PublishedVersionFacts {
  readonly version: number;
  readonly publishedAtMs: number | null;
}

export type EnforcerLag =
  /** It runs no version, or none is published: nothing to compare. */
  | { readonly kind: "unknown" }
  /** Behind the published version; `forMs` since it could first have had it, when known. */
  | { readonly kind: "behind"; readonly versionsBehind: number; readonly forMs: number | null }
  /** Current, and it was running at publication: it took `lagMs` to apply it. */
  | { readonly kind: "applied"; readonly lagMs: number }
  /** Current, loaded when it started, after the version was published: no lag to speak of. */
  | {
      readonly kind: "loaded-at-start";
      readonly version: number;
      /** When it started; `null` when it does not say. */
      readonly startedAtMs: number | null;
    }
  /** Current, but whether it was running at publication is not known: no figure is given. */
  | { readonly kind: "current" };

/** Whether the enforcer started after the version was published (or says it loaded at start). */
function isStartedAfter(enforcer: EnforcerVersionFacts, publishedAtMs: number | null): boolean {
  if (enforcer.startedAtMs !== null && publishedAtMs !== null) {
    return enforcer.startedAtMs > publishedAtMs;
  }
  return enforcer.appliedVia === "startup";
}

export function describeEnforcerLag(
  enforcer: EnforcerVersionFacts,
  published: PublishedVersionFacts | null,
  nowMs: number,
): EnforcerLag {
  if (enforcer.version === null || published === null) return { kind: "unknown" };
  const publishedAtMs =
    published.publishedAtMs !== null && Number.isFinite(published.publishedAtMs)
      ? published.publishedAtMs
      : null;
  const versionsBehind = Math.max(0, published.version - enforcer.version);
  if (versionsBehind > 0) {
    // Behind since the later of publication and its own start.
    const sinceMs =
      publishedAtMs === null
        ? null
        : Math.max(publishedAtMs, enforcer.startedAtMs ?? Number.NEGATIVE_INFINITY);
    return {
      kind: "behind",
      versionsBehind,
      forMs: sinceMs === null ? null : Math.max(0, nowMs - sinceMs),
    };
  }
  if (isStartedAfter(enforcer, publishedAtMs)) {
    return {
      kind: "loaded-at-start",
      version: enforcer.version,
      startedAtMs: enforcer.startedAtMs,
    };
  }
  const wasRunning =
    enforcer.startedAtMs !== null &&
    publishedAtMs !== null &&
    enforcer.startedAtMs <= publishedAtMs;
  if (wasRunning && enforcer.appliedAtMs !== null && publishedAtMs !== null) {
    return { kind: "applied", lagMs: Math.max(0, enforcer.appliedAtMs - publishedAtMs) };
  }
  return { kind: "current" };
}
