/**
 * The package as another team gets it: `npm pack` (which builds it), the tarball installed into
 * scratch projects outside the workspace (the OS temp directory), dependencies from the npm
 * registry or its cache (`--prefer-offline`), run by this machine's Node with no TypeScript loader
 * and no workspace on the module path, against the real Redis under this run's key prefix.
 *
 * - A plain JavaScript project runs the package README's first example as written (only its key
 *   prefix is this run's), and gets a 429 with `RateLimit-Policy`, `RateLimit` and a
 *   problem+json body; CommonJS `require()` loads the package too.
 * - The Express, Fastify and Hono examples, copied out of the workspace with the tarball in place
 *   of the workspace package, compile against its declarations under `moduleResolution:
 *   "nodenext"` (what a TypeScript project on Node uses), then run as JavaScript and get the same.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { checkFetchResponseContract } from "../src/testing";

const PACKAGE_DIR = path.resolve(import.meta.dirname, "..");
const EXAMPLES_DIR = path.resolve(PACKAGE_DIR, "../../examples");
const redisUrl = inject("redisUrl");
const runPrefix = inject("redisKeyPrefix");
// Packing builds the package, and installing may fetch from the registry: minutes on a busy
// machine, not the seconds a unit test gets.
const SLOW_MS = 600_000;

/**
 * The environment a scratch project runs in: none of the npm variables of the `npm test` that
 * runs this file (a workspace selection would leak into `npm install`), and no workspace
 * `node_modules/.bin` on the path (tsx among them).
 */
function scratchEnv(extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (name.startsWith("npm_") || name === "NODE_OPTIONS" || name === "INIT_CWD") delete env[name];
  }
  env.PATH = (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter((entry) => !entry.includes("node_modules"))
    .join(path.delimiter);
  return { ...env, ...extra };
}

function run(command: string, args: readonly string[], cwd: string): string {
  return execFileSync(command, args, { cwd, env: scratchEnv(), encoding: "utf8" });
}

function npmInstall(cwd: string): void {
  run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], cwd);
}

/** The README's first ```js block: the example a newcomer runs first. */
function readmeFirstExample(): string {
  const readme = readFileSync(path.join(PACKAGE_DIR, "README.md"), "utf8");
  const example = /```js\n([\s\S]*?)```/.exec(readme)?.[1];
  if (example === undefined) throw new Error("the package README has no ```js example");
  return example;
}

interface Started {
  readonly process: ChildProcess;
  readonly url: string;
}

const started: ChildProcess[] = [];

/** Runs `node <script>` and resolves with the URL it prints (`... http://127.0.0.1:<port>`). */
async function startServer(
  cwd: string,
  script: string,
  env: Readonly<Record<string, string>>,
): Promise<Started> {
  const child = spawn(process.execPath, [script], {
    cwd,
    env: scratchEnv({ PORT: "0", REDIS_URL: redisUrl, ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(child);
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const found = /http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
      if (found !== null && found[1] !== "0") resolve(found[0]);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("exit", (code) => reject(new Error(`${script} exited (${code}):\n${output}`)));
  });
  return { process: child, url };
}

/** Requests `send()` until one is rejected (at most `attempts`); returns every status and it. */
async function untilRejected(
  send: () => Promise<Response>,
  attempts: number,
): Promise<{ statuses: number[]; rejected: Response }> {
  const statuses: number[] = [];
  for (let attempt = 0; attempt < attempts; attempt++) {
    const response = await send();
    statuses.push(response.status);
    if (response.status === 429) return { statuses, rejected: response };
    await response.arrayBuffer();
  }
  throw new Error(`no 429 in ${attempts} requests: ${statuses.join(" ")}`);
}

let scratch: string;
let tarball: string;

beforeAll(() => {
  scratch = mkdtempSync(path.join(tmpdir(), "lp-tarball-"));
  // `prepack` builds first (with the workspace's tsx, hence its PATH), and what the build prints
  // comes before npm's JSON on the same output.
  const output = execFileSync("npm", ["pack", "--json", "--pack-destination", scratch], {
    cwd: PACKAGE_DIR,
    env: scratchEnv({ PATH: process.env.PATH ?? "" }),
    encoding: "utf8",
  });
  const packed = JSON.parse(output.slice(output.search(/^\[$/m))) as {
    filename: string;
    files: { path: string }[];
  }[];
  const [manifest] = packed;
  if (manifest === undefined) throw new Error("npm pack wrote no tarball");
  tarball = path.join(scratch, manifest.filename);
  // Only the build and the README: no source, no tests, no scripts.
  expect(
    manifest.files
      .map((file) => file.path)
      .filter(
        (file) => !file.startsWith("dist/") && file !== "README.md" && file !== "package.json",
      ),
  ).toEqual([]);
}, SLOW_MS);

afterAll(async () => {
  for (const child of started) {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
  }
  rmSync(scratch, { recursive: true, force: true });
});

describe("the packed package, in a plain JavaScript project", () => {
  let project: string;

  beforeAll(() => {
    project = path.join(scratch, "plain");
    mkdirSync(project);
    writeFileSync(
      path.join(project, "package.json"),
      JSON.stringify({
        name: "lp-tarball-plain",
        private: true,
        type: "module",
        dependencies: { "@limitplane/enforcer": `file:${tarball}` },
      }),
    );
    npmInstall(project);
    const example = readmeFirstExample();
    expect(example).toContain('keyPrefix: "my-api:"');
    writeFileSync(
      path.join(project, "server.mjs"),
      example.replace('keyPrefix: "my-api:"', `keyPrefix: ${JSON.stringify(`${runPrefix}plain:`)}`),
    );
  }, SLOW_MS);

  it("runs on this machine's Node, 20.19 or later, with no loader", () => {
    const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
    expect(major > 20 || (major === 20 && minor >= 19)).toBe(true);
    const version = run(process.execPath, ["-e", "console.log(process.version)"], project);
    expect(version.trim()).toBe(process.version);
  });

  it("serves the README's first example: a 429 with the draft-11 headers and a problem body", async () => {
    const { url } = await startServer(project, "server.mjs", {});
    const first = await fetch(url);
    expect(first.status).toBe(200);
    expect(await first.text()).toBe("hello\n");
    expect(first.headers.get("ratelimit-policy")).toBe('"address";q=5;w=5');
    const { statuses, rejected } = await untilRejected(() => fetch(url), 30);
    // Five a client address, refilling one a second: however slow the run, five pass first.
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
    expect(rejected.headers.get("content-type")).toBe("application/problem+json");
    expect(rejected.headers.get("ratelimit")).toMatch(/^"address";r=0;t=\d+$/);
    const contract = await checkFetchResponseContract(rejected);
    expect(contract.policies.get("address")).toEqual({ quota: 5, windowSec: 5 });
    expect(contract.problem).toMatchObject({
      type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
      status: 429,
      code: "RATE_LIMITED",
      scope: "address",
    });
  });

  it("loads with require() from CommonJS as well", () => {
    const script = [
      'const enforcer = require("@limitplane/enforcer");',
      'const limiter = require("@limitplane/enforcer/limiter");',
      'const callers = require("@limitplane/enforcer/callers");',
      "console.log(typeof enforcer.createEnforcer, typeof limiter.MemoryStore, typeof callers.createOutboundLimiter);",
      'console.log(require.resolve("@limitplane/enforcer"));',
    ].join("\n");
    writeFileSync(path.join(project, "check.cjs"), script);
    const [types, resolved] = run(process.execPath, ["check.cjs"], project).trim().split("\n");
    expect(types).toBe("function function function");
    // The tarball's build, installed in the scratch project: never the workspace's source.
    expect(resolved).toBe(path.join(project, "node_modules/@limitplane/enforcer/dist/index.js"));
  });
});

describe("the examples, installed from the tarball instead of the workspace", () => {
  let project: string;

  beforeAll(() => {
    project = path.join(scratch, "examples");
    mkdirSync(project);
    const dependencies: Record<string, string> = {};
    const devDependencies: Record<string, string> = { typescript: "", "@types/node": "" };
    for (const example of ["express", "fastify", "hono"]) {
      const source = path.join(EXAMPLES_DIR, `${example}-gateway`);
      const manifest = JSON.parse(readFileSync(path.join(source, "package.json"), "utf8")) as {
        dependencies: Record<string, string>;
        devDependencies: Record<string, string>;
      };
      Object.assign(dependencies, manifest.dependencies);
      for (const name of Object.keys(manifest.devDependencies)) {
        if (name === "typescript" || name.startsWith("@types/")) {
          devDependencies[name] = manifest.devDependencies[name] ?? "";
        }
      }
      cpSync(path.join(source, "src"), path.join(project, "src", example), {
        recursive: true,
        filter: (file) => !file.endsWith(".test.ts"),
      });
    }
    dependencies["@limitplane/enforcer"] = `file:${tarball}`;
    writeFileSync(
      path.join(project, "package.json"),
      JSON.stringify({
        name: "lp-tarball-examples",
        private: true,
        type: "module",
        dependencies,
        devDependencies,
      }),
    );
    writeFileSync(
      path.join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          lib: ["ES2023"],
          types: ["node"],
          strict: true,
          esModuleInterop: true,
          module: "nodenext",
          moduleResolution: "nodenext",
          rootDir: "src",
          outDir: "build",
          skipLibCheck: true,
        },
        include: ["src/**/*.ts"],
      }),
    );
    npmInstall(project);
    run(
      process.execPath,
      [path.join(project, "node_modules/typescript/bin/tsc"), "-p", "."],
      project,
    );
  }, SLOW_MS);

  const limited = async (
    example: string,
    send: (url: string) => Promise<Response>,
    scope: string,
  ) => {
    const { url } = await startServer(project, `build/${example}/main.js`, {
      REDIS_KEY_PREFIX: `${runPrefix}${example}:`,
    });
    const { rejected } = await untilRejected(() => send(url), 200);
    expect(rejected.headers.get("content-type")).toMatch(/^application\/problem\+json(;|$)/);
    const contract = await checkFetchResponseContract(rejected);
    expect(contract.policies.has(scope)).toBe(true);
    expect(contract.rateLimit).toMatchObject({ name: scope, remaining: 0 });
    expect(contract.problem).toMatchObject({ code: "RATE_LIMITED", scope });
  };

  it("Express: a free customer's burst ends in a 429", async () => {
    await limited(
      "express",
      (url) => fetch(`${url}/v1/things`, { headers: { authorization: "Bearer key-initech" } }),
      "tier:free",
    );
  });

  it("Fastify: an address's sign-in attempts end in a 429", async () => {
    await limited(
      "fastify",
      (url) => fetch(`${url}/v1/sign-in`, { method: "POST" }),
      "address/endpoint:sign-in",
    );
  });

  it("Hono: a basic customer's reports end in a 429", async () => {
    await limited(
      "hono",
      (url) =>
        fetch(`${url}/v1/reports/q3`, { headers: { authorization: "Bearer token-initech" } }),
      "tier:basic/endpoint:reports",
    );
  });
});
