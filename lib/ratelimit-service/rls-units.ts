/**
 * Envoy's rate limit units: the names and wire numbers of RLS v3
 * `RateLimitResponse.RateLimit.Unit`, and the window each stands for in envoyproxy/ratelimit
 * (its `UnitToDivider`: a week is 7 days, a month 30 days, a year 365 days, each counted from the
 * Unix epoch). The one table the service's answer (`rls-response.ts`, `rls-encode.ts`), the
 * limits Envoy sends with a descriptor (`descriptor-mapping.ts`) and the import of
 * envoyproxy/ratelimit files (`lib/control/descriptor-rule/envoy-config.ts`) read.
 *
 * `WEEK` came last (Envoy's API, December 2024), so it is number 7, after `YEAR`. The protos
 * inside `@grpc/grpc-js-xds` predate it: grpc-js decodes a WEEK that an Envoy sends as the bare
 * number 7, which `rlsUnitOf` reads as a week. An Envoy older than WEEK that receives 7 in an
 * answer reads an unknown unit (it uses the unit only for its `X-RateLimit-*` headers).
 */
export const RLS_UNITS = [
  { name: "SECOND", number: 1, windowMs: 1_000 },
  { name: "MINUTE", number: 2, windowMs: 60_000 },
  { name: "HOUR", number: 3, windowMs: 3_600_000 },
  { name: "DAY", number: 4, windowMs: 86_400_000 },
  { name: "WEEK", number: 7, windowMs: 7 * 86_400_000 },
  { name: "MONTH", number: 5, windowMs: 30 * 86_400_000 },
  { name: "YEAR", number: 6, windowMs: 365 * 86_400_000 },
] as const;

export type RlsUnitEntry = (typeof RLS_UNITS)[number];
export type RlsUnit = RlsUnitEntry["name"];

/** A unit as grpc-js decodes it (its name, or its number where the protos do not know it). */
export function rlsUnitOf(unit: string | number): RlsUnitEntry | undefined {
  return RLS_UNITS.find((entry) =>
    typeof unit === "string" ? entry.name === unit : entry.number === unit,
  );
}

/** The unit whose window is exactly `windowMs`. */
export function rlsUnitOfWindow(windowMs: number): RlsUnitEntry | undefined {
  return RLS_UNITS.find((entry) => entry.windowMs === windowMs);
}
