/**
 * Snapshots for the enforcer's tests (published with `publishTestSnapshot` from
 * `@limitplane/enforcer/testing`: the control plane's own newer-only `publishSnapshot`).
 */
import type { TPolicyDocumentInput, TSnapshot } from "@limitplane/enforcer/policy";
import { exampleSnapshot } from "@limitplane/enforcer/testing";

/** The example policy compiled as `version`, after `edit`. */
export function snapshotVersion(
  version: number,
  edit: (input: TPolicyDocumentInput) => void = () => {},
): TSnapshot {
  return exampleSnapshot(edit, { version, compiledAt: new Date().toISOString() });
}
