/**
 * The layers, enforced by `npm run lint` (dependency-cruiser). Each rule's comment says why; a
 * deliberate violation is checked by test/lint/layers.test.ts.
 *
 * - The enforcer package (packages/enforcer) never imports the app.
 * - The limiter core (packages/enforcer/src/limiter, stores aside) imports no I/O.
 * - The limiter (core and stores) imports nothing else of the package: it is the bottom layer.
 * - components/ never reach into lib/control's modules, only its entry point.
 * - lib/control (the services) imports no layer above it: not the composition root (lib/server),
 *   not the console (lib/console), not the app (app/).
 * - No import cycle anywhere, type-only imports included.
 * - The pure modules that client components import (domain schemas, formatting) reach no server
 *   code, however indirectly.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment:
        "An import cycle (type-only imports count): move what both sides need into a module of its own.",
      from: {},
      to: { circular: true },
    },
    {
      name: "package-imports-app",
      severity: "error",
      comment:
        "The enforcer package is embedded without the console: it may import nothing of the app (app/, components/, lib/, scripts/, test/, e2e/, bench/).",
      from: { path: "^packages/enforcer/" },
      to: { path: "^(app|components|lib|scripts|test|e2e|bench|examples)/" },
    },
    {
      name: "limiter-imports-io",
      severity: "error",
      comment:
        "The limiter core is pure, (state, limit, nowMs, cost) -> decision: no node:* module, no Redis, no Next.js, no Prisma. I/O belongs in its stores.",
      from: {
        path: "^packages/enforcer/src/limiter/",
        pathNot: ["^packages/enforcer/src/limiter/stores/", "\\.test\\.ts$"],
      },
      to: {
        dependencyTypes: ["core", "npm", "npm-dev", "npm-no-pkg", "npm-unknown"],
      },
    },
    {
      name: "limiter-imports-enforcer",
      severity: "error",
      comment:
        "The limiter (its core and its stores) is the package's bottom layer: the enforcer runtime, the policy model and the rest build on it, never the other way round. Move what a store needs from above into limiter/ (as limiter/timers.ts was).",
      from: { path: "^packages/enforcer/src/limiter/", pathNot: "\\.test\\.ts$" },
      to: { path: "^packages/enforcer/src/", pathNot: "^packages/enforcer/src/limiter/" },
    },
    {
      name: "policy-imports-io",
      severity: "error",
      comment:
        "The policy model is shared by the control plane, the enforcers and the browser: no node:* module and no client library. Its dependencies: zod (schemas) and @noble/hashes (SHA-256 of snapshot entries: audited, synchronous, and the same in Node, an edge runtime and a browser, where node:crypto is missing and Web Crypto is async).",
      from: { path: "^packages/enforcer/src/policy/", pathNot: "\\.test\\.ts$" },
      to: {
        dependencyTypes: ["core", "npm", "npm-dev", "npm-no-pkg", "npm-unknown"],
        pathNot: "^node_modules/(zod|@noble/hashes)/",
      },
    },
    {
      name: "components-import-control-internals",
      severity: "error",
      comment:
        "Components use lib/control through its entry point (@/lib/control), never its modules: the services' internals stay free to change.",
      from: { path: "^components/" },
      to: { path: "^lib/control/.+", pathNot: "^lib/control/index\\.ts$" },
    },
    {
      name: "control-imports-upper-layer",
      severity: "error",
      comment:
        "lib/control's services take their dependencies as an argument and own the domain's rules: they import neither the composition root and the process's wiring (lib/server), nor the console's presentation (lib/console), nor the app (app/). What both sides need belongs in lib/control; the caller passes controlDeps().",
      from: { path: "^lib/control/" },
      to: { path: "^(lib/server|lib/console|app)/" },
    },
    {
      name: "outside-imports-package-internals",
      severity: "error",
      comment:
        "Outside the package, import @limitplane/enforcer, /callers, /limiter, /policy, /publication, /recording or /testing: its other modules are internal.",
      from: { pathNot: "^packages/enforcer/" },
      to: {
        path: "^packages/enforcer/",
        pathNot: [
          "^packages/enforcer/src/index\\.ts$",
          "^packages/enforcer/src/(callers|limiter|policy|publication|recording|testing)/index\\.ts$",
          "^packages/enforcer/src/policy/fixtures/example-policy\\.json$",
        ],
      },
    },
    {
      name: "client-modules-reach-server",
      severity: "error",
      comment:
        "Client components validate with these modules (the domain's schemas and rules, the formatting, the reason check, the API client): they must stay pure. Nothing they reach, however indirectly, may be server code (lib/server, the Prisma client, Redis, Postgres, server-only) or a node:* module.",
      from: {
        path: "^(lib/control/(change-context|errors|incident/raise-incident-options)|lib/console/(format|reason)|lib/api/api-client|app/.+-check)\\.ts$",
      },
      to: {
        reachable: true,
        path: "^(lib/server/|lib/generated/|node_modules/(ioredis|pg|@prisma|server-only)/|(node:)?(crypto|fs|net|tls|os|path|child_process|worker_threads|events|stream)$)",
      },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: {
      path: "^(lib/generated|\\.next|node_modules|test-results|playwright-report|packages/enforcer/dist[^/]*)/",
    },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    combinedDependencies: true,
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default"],
      mainFields: ["module", "main", "types", "typings"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
