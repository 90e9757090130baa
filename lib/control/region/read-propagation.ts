/**
 * How far a policy version has reached (REGIONS, docs/regions.md): for each configured region,
 * whether its Redis holds the version (the worker's `RegionPublication` row is at it or later),
 * or since when it has been pending and why the last attempt failed. A region never published
 * to has no row and is pending.
 */
import type { ReadDeps } from "../deps";
import { notFound } from "../errors";

export interface RegionPropagation {
  readonly region: string;
  /** The region's Redis holds this version or a later one. */
  readonly isApplied: boolean;
  /** The latest version the region's Redis holds (0: none). */
  readonly publishedVersion: number;
  /** The last failed attempt's message while pending; null otherwise. */
  readonly lastError: string | null;
}

export interface Propagation {
  readonly version: number;
  /** When the version was made, ISO 8601: a pending region has been pending since. */
  readonly createdAt: string;
  /** In the order REGIONS lists them. */
  readonly regions: readonly RegionPropagation[];
}

/** What reading propagation needs: the database and the configured region names. */
export interface PropagationDeps extends ReadDeps {
  /** REGIONS' names, in order; empty for a one-Redis installation. */
  readonly regions: readonly string[];
}

/** Each region's state for `version`; null when the version does not exist. */
export async function readPropagation(
  version: number,
  deps: PropagationDeps,
): Promise<Propagation | null> {
  const stored = await deps.db.policyVersion.findUnique({
    where: { version },
    select: { version: true, createdAt: true },
  });
  if (stored === null) return null;
  const rows = await deps.db.regionPublication.findMany({
    where: { region: { in: [...deps.regions] } },
    select: { region: true, publishedVersion: true, lastError: true },
  });
  const byRegion = new Map(rows.map((row) => [row.region, row]));
  return {
    version: stored.version,
    createdAt: stored.createdAt.toISOString(),
    regions: deps.regions.map((region) => {
      const row = byRegion.get(region);
      const publishedVersion = row?.publishedVersion ?? 0;
      const isApplied = publishedVersion >= version;
      return {
        region,
        isApplied,
        publishedVersion,
        lastError: isApplied ? null : (row?.lastError ?? null),
      };
    }),
  };
}

/** `readPropagation` of the latest version; null when there is none yet. */
export async function readLatestPropagation(deps: PropagationDeps): Promise<Propagation | null> {
  const latest = await deps.db.policyVersion.findFirst({
    orderBy: { version: "desc" },
    select: { version: true },
  });
  return latest === null ? null : readPropagation(latest.version, deps);
}

/** `readPropagation` of `version`, or of the latest when omitted; NOT_FOUND when there is none. */
export async function getPropagation(
  options: { readonly version?: number },
  deps: PropagationDeps,
): Promise<Propagation> {
  const found =
    options.version === undefined
      ? await readLatestPropagation(deps)
      : await readPropagation(options.version, deps);
  if (found === null) throw notFound("Policy version", String(options.version ?? "latest"));
  return found;
}
