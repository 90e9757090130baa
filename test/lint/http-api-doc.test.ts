/**
 * docs/http-api.md's reference is generated from the OpenAPI document the API serves: this fails
 * as soon as an endpoint definition changes and `npm run docs:api` has not been run, so the page
 * never describes an API that is not the one served.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { API_VERSION, ENDPOINTS } from "@/lib/api/endpoints";
import { buildOpenApi } from "@/lib/api/openapi";
import { PERMISSIONS } from "@/lib/control/auth/roles";
import { renderHttpApi, withGeneratedPart } from "../../scripts/docs/render-http-api";

const PAGE = path.resolve(import.meta.dirname, "../../docs/http-api.md");

/** The first line where two texts differ, or null when they are equal. */
function firstDifference(actual: string, expected: string): string | null {
  if (actual === expected) return null;
  const actualLines = actual.split("\n");
  const expectedLines = expected.split("\n");
  const at = expectedLines.findIndex((line, index) => line !== actualLines[index]);
  const index = at === -1 ? expectedLines.length : at;
  return `line ${index + 1}: the page has ${JSON.stringify(actualLines[index] ?? null)}, the API gives ${JSON.stringify(expectedLines[index] ?? null)}`;
}

describe("docs/http-api.md", () => {
  it("holds the reference npm run docs:api generates from today's OpenAPI document", () => {
    const page = readFileSync(PAGE, "utf8");
    const generated = renderHttpApi({
      document: buildOpenApi(ENDPOINTS, API_VERSION),
      leastRoleOf: PERMISSIONS,
    });
    const difference = firstDifference(page, withGeneratedPart(page, generated));
    expect(difference, "docs/http-api.md is out of date: run npm run docs:api").toBeNull();
  });

  it("documents every route of the API", () => {
    const page = readFileSync(PAGE, "utf8");
    for (const endpoint of ENDPOINTS) {
      expect(page, `${endpoint.method} ${endpoint.path}`).toContain(
        `### \`${endpoint.method} ${endpoint.path}\``,
      );
    }
  });
});
