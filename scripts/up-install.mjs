// @ts-check
/**
 * The first step of `npm run up`: `npm install`, quietly (scripts/lib/quiet-step.mjs). Plain
 * JavaScript: on a fresh clone nothing else is installed yet. Its warnings are shown as npm
 * wrote them; a failure prints npm's whole output and stops `up`.
 */
import { npmInstallLines, runQuietly } from "./lib/quiet-step.mjs";

try {
  await runQuietly("npm", ["install", "--no-audit", "--no-fund"], {
    label: "Installing the dependencies (npm install)",
    doing: "installing",
    keep: npmInstallLines,
  });
} catch (error) {
  console.error(`up: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
