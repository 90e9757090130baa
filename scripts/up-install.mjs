// @ts-check
/**
 * The first step of `npm run up`: `npm install`, quietly (scripts/lib/quiet-step.mjs), when
 * node_modules does not match the lockfile and manifests (scripts/lib/install-stamp.mjs); a start
 * with nothing changed skips it. Plain JavaScript: on a fresh clone nothing else is installed yet.
 * Its warnings are shown as npm wrote them; a failure prints npm's whole output and stops `up`.
 */
import path from "node:path";
import {
  installFingerprint,
  installReason,
  readInstallStamp,
  writeInstallStamp,
} from "./lib/install-stamp.mjs";
import { npmInstallLines, runQuietly } from "./lib/quiet-step.mjs";

const ROOT = path.resolve(import.meta.dirname, "..");

try {
  const reason = installReason({
    fingerprint: installFingerprint(ROOT),
    stamp: readInstallStamp(ROOT),
  });
  if (reason === null) {
    console.log("▸ Dependencies match package-lock.json: npm install skipped");
  } else {
    await runQuietly("npm", ["install", "--no-audit", "--no-fund"], {
      label: `Installing the dependencies (npm install: ${reason})`,
      doing: "installing",
      keep: npmInstallLines,
      cwd: ROOT,
    });
    writeInstallStamp(ROOT);
  }
} catch (error) {
  console.error(`up: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
