import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  installFingerprint,
  installManifests,
  installReason,
  readInstallStamp,
  writeInstallStamp,
} from "./install-stamp.mjs";

let root: string;

function write(file: string, text: string): void {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  writeFileSync(path.join(root, file), text);
}

/** What `npm run up` decides for the tree as it is now. */
function decide(): string | null {
  return installReason({ fingerprint: installFingerprint(root), stamp: readInstallStamp(root) });
}

/** A successful install, as up-install.mjs records it. */
function installed(): void {
  mkdirSync(path.join(root, "node_modules"), { recursive: true });
  writeInstallStamp(root);
}

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), "lp-install-stamp-"));
  write("package.json", JSON.stringify({ name: "app", workspaces: ["packages/*", "examples/*"] }));
  write("package-lock.json", '{"lockfileVersion":3,"packages":{"":{}}}');
  write("packages/enforcer/package.json", '{"name":"@x/enforcer","dependencies":{}}');
  write("packages/notes/README.md", "a folder without a package.json");
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe("whether npm run up installs", () => {
  it("installs on a fresh clone: no node_modules, so no stamp", () => {
    expect(decide()).toBe("no record of an earlier install in node_modules");
  });

  it("skips the install when nothing changed since the last successful one", () => {
    installed();
    expect(decide()).toBeNull();
  });

  const changes: [string, () => void][] = [
    ["the lockfile", () => write("package-lock.json", '{"lockfileVersion":3,"packages":{"a":{}}}')],
    ["the root package.json", () => write("package.json", '{"name":"app","version":"2"}')],
    [
      "a workspace's package.json",
      () => write("packages/enforcer/package.json", '{"name":"@x/enforcer","version":"2"}'),
    ],
    ["a new workspace", () => write("examples/hono/package.json", '{"name":"hono-example"}')],
  ];
  it.each(changes)("installs again when %s changed", (_what, change) => {
    installed();
    change();
    expect(decide()).toBe("package-lock.json or a package.json changed");
  });

  it("installs again when node_modules was deleted", () => {
    installed();
    rmSync(path.join(root, "node_modules"), { recursive: true });
    expect(decide()).toBe("no record of an earlier install in node_modules");
  });

  it("installs again under another Node ABI (native add-ons are built for one)", () => {
    installed();
    expect(
      installReason({ fingerprint: installFingerprint(root, "0"), stamp: readInstallStamp(root) }),
    ).toBe("package-lock.json or a package.json changed");
  });

  it("reads the workspaces the root names, only folders with a package.json", () => {
    expect(installManifests(root)).toEqual(["package.json", "packages/enforcer/package.json"]);
  });
});
