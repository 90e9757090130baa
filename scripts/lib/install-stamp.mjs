// @ts-check
/**
 * Whether `npm run up` must run `npm install`: after each successful install, a stamp in
 * node_modules records a hash of what the install was made from (the lockfile, every package.json
 * of the root and its workspaces, and Node's module ABI, which native add-ons are built for). The
 * next start installs only when that hash differs or node_modules has no stamp (a fresh clone, an
 * install that failed, a node_modules made by hand or by `npm ci` before this stamp existed).
 *
 * Plain JavaScript: it runs before `npm install` has put anything in place.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/** Where the stamp lives: inside node_modules, so deleting node_modules deletes it too. */
export const INSTALL_STAMP_PATH = path.join("node_modules", ".limitplane-install-stamp");

/**
 * The package.json files an install reads: the root's and each workspace's (the root's
 * "workspaces" entries, a trailing `/*` read as every folder under it). Sorted, relative to `root`.
 * @param {string} root
 * @returns {string[]}
 */
export function installManifests(root) {
  const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
  /** @type {unknown} */
  const workspaces = manifest.workspaces;
  const patterns = Array.isArray(workspaces)
    ? workspaces.filter((entry) => typeof entry === "string")
    : [];
  const folders = patterns.flatMap((pattern) => {
    if (!pattern.endsWith("/*")) return [pattern];
    const parent = pattern.slice(0, -2);
    if (!existsSync(path.join(root, parent))) return [];
    return readdirSync(path.join(root, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => path.posix.join(parent, entry.name));
  });
  const files = folders
    .map((folder) => path.posix.join(folder, "package.json"))
    .filter((file) => existsSync(path.join(root, file)));
  return ["package.json", ...files.sort()];
}

/**
 * The hash an install is made from. A missing lockfile hashes as empty, so a later one differs.
 * @param {string} root
 * @param {string} [moduleAbi] @default process.versions.modules
 * @returns {string}
 */
export function installFingerprint(root, moduleAbi = process.versions.modules) {
  const hash = createHash("sha256");
  hash.update(`node-abi ${moduleAbi}\n`);
  for (const file of ["package-lock.json", ...installManifests(root)]) {
    const full = path.join(root, file);
    hash.update(`${file}\n`);
    hash.update(existsSync(full) ? readFileSync(full) : "");
    hash.update("\n");
  }
  return hash.digest("hex");
}

/**
 * Why an install is needed, or null when node_modules matches.
 * @param {{ fingerprint: string; stamp: string | null }} state
 * @returns {string | null}
 */
export function installReason({ fingerprint, stamp }) {
  if (stamp === null) return "no record of an earlier install in node_modules";
  if (stamp.trim() !== fingerprint) return "package-lock.json or a package.json changed";
  return null;
}

/**
 * The stamp as written after the last successful install, or null.
 * @param {string} root
 * @returns {string | null}
 */
export function readInstallStamp(root) {
  const file = path.join(root, INSTALL_STAMP_PATH);
  return existsSync(file) ? readFileSync(file, "utf8") : null;
}

/**
 * Records that node_modules matches the tree as it is now. Call after a successful install: the
 * install may itself rewrite package-lock.json, so the hash is taken afterwards.
 * @param {string} root
 */
export function writeInstallStamp(root) {
  writeFileSync(path.join(root, INSTALL_STAMP_PATH), `${installFingerprint(root)}\n`);
}
