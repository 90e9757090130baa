/**
 * One sentence for a change's reach across regions, as an operator reads it: "applied in eu-west
 * and us-east, us-west pending since 14:02". Pure: the caller formats the time.
 */

export interface RegionState {
  readonly region: string;
  readonly isApplied: boolean;
}

/** "a", "a and b", "a, b and c". */
export function joinNames(names: readonly string[]): string {
  if (names.length <= 1) return names.join("");
  return `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}

export function describePropagation(regions: readonly RegionState[], pendingSince: string): string {
  const applied = regions.filter((entry) => entry.isApplied).map((entry) => entry.region);
  const pending = regions.filter((entry) => !entry.isApplied).map((entry) => entry.region);
  if (regions.length === 0) return "no regions are configured";
  if (pending.length === 0) return `applied in every region (${joinNames(applied)})`;
  const waiting = `${joinNames(pending)} pending since ${pendingSince}`;
  return applied.length === 0 ? waiting : `applied in ${joinNames(applied)}, ${waiting}`;
}
