/**
 * The OpenAPI document is built from the endpoint registry, and the registry must match the route
 * files that exist: every definition has a route file exporting its method, and every method a
 * route file exports has a definition. So the document can describe neither a route that does
 * not exist nor miss one that does.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { isMethodAnswer } from "./endpoint";
import { ENDPOINTS } from "./endpoints";
import { buildOpenApi } from "./openapi";

const ROOT = path.resolve(import.meta.dirname, "../..");
const API_DIR = path.join(ROOT, "app/api/v1");
const METHODS = ["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"] as const;

function routeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name === "route.ts")
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** `app/api/v1/tiers/[name]/route.ts` -> `/api/v1/tiers/{name}` */
function specPathOf(file: string): string {
  const folder = path.relative(path.join(ROOT, "app"), path.dirname(file)).split(path.sep);
  return `/${folder.map((segment) => segment.replace(/^\[(\w+)\]$/, "{$1}")).join("/")}`;
}

async function exportedRoutes(): Promise<string[]> {
  const found: string[] = [];
  for (const file of routeFiles(API_DIR)) {
    const module: Record<string, unknown> = await import(/* @vite-ignore */ file);
    for (const method of METHODS) {
      const handler = module[method];
      if (typeof handler === "function" && !isMethodAnswer(handler)) {
        found.push(`${method} ${specPathOf(file)}`);
      }
    }
  }
  return found.sort();
}

describe("the API's routes and its OpenAPI document", () => {
  it("every endpoint definition has a route file exporting its method, and every exported method a definition", async () => {
    const defined = ENDPOINTS.map((endpoint) => `${endpoint.method} ${endpoint.path}`).sort();
    expect(await exportedRoutes()).toEqual(defined);
  });

  it("no two definitions share a method and path", () => {
    const keys = ENDPOINTS.map((endpoint) => `${endpoint.method} ${endpoint.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("documents every definition once, with a unique operation id and its permission", () => {
    const document = buildOpenApi(ENDPOINTS, "test") as {
      paths: Record<string, Record<string, { operationId: string; "x-permission"?: string }>>;
    };
    const operations = Object.entries(document.paths).flatMap(([documentedPath, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ documentedPath, method, operation })),
    );
    expect(operations.map((o) => `${o.method.toUpperCase()} ${o.documentedPath}`).sort()).toEqual(
      ENDPOINTS.map((endpoint) => `${endpoint.method} ${endpoint.path}`).sort(),
    );
    const ids = operations.map((o) => o.operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const endpoint of ENDPOINTS) {
      const operation = document.paths[endpoint.path]?.[endpoint.method.toLowerCase()];
      const permission =
        endpoint.access === "public" ||
        endpoint.access === "authenticated" ||
        endpoint.access === "session"
          ? undefined
          : endpoint.access;
      expect(operation?.["x-permission"]).toBe(permission);
    }
  });

  it("every path parameter in a path is declared by the definition's params schema", () => {
    const document = buildOpenApi(ENDPOINTS, "test") as {
      paths: Record<string, Record<string, { parameters: { name: string; in: string }[] }>>;
    };
    for (const endpoint of ENDPOINTS) {
      const inPath = [...endpoint.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort();
      const declared = (
        document.paths[endpoint.path]?.[endpoint.method.toLowerCase()]?.parameters ?? []
      )
        .filter((parameter) => parameter.in === "path")
        .map((parameter) => parameter.name)
        .sort();
      expect(declared, `${endpoint.method} ${endpoint.path}`).toEqual(inPath);
    }
  });

  it("every mutation but sign-in, sign-out and one's own password and sessions requires a reason", () => {
    const exempt = new Set([
      // A read whose question (a draft policy) is too large for a query string: it writes nothing.
      "POST /api/v1/backtest",
      // Also a read: nested descriptors do not fit a query string.
      "POST /api/v1/explain/descriptors",
      "POST /api/v1/auth/sign-in",
      "POST /api/v1/auth/sign-out",
      "POST /api/v1/auth/password",
      "DELETE /api/v1/auth/sessions/{id}",
    ]);
    const document = buildOpenApi(ENDPOINTS, "test") as {
      paths: Record<
        string,
        Record<
          string,
          {
            parameters: { name: string; required: boolean }[];
            requestBody?: { content: { "application/json": { schema: { required?: string[] } } } };
          }
        >
      >;
    };
    for (const endpoint of ENDPOINTS) {
      const key = `${endpoint.method} ${endpoint.path}`;
      if (endpoint.method === "GET" || exempt.has(key)) continue;
      const operation = document.paths[endpoint.path]?.[endpoint.method.toLowerCase()];
      const inBody =
        operation?.requestBody?.content["application/json"].schema.required?.includes("reason") ??
        false;
      const inQuery = operation?.parameters.some((p) => p.name === "reason" && p.required) ?? false;
      expect(inBody || inQuery, key).toBe(true);
    }
  });
});
