/**
 * `npm run docs:api`: rewrites the generated part of docs/http-api.md from the OpenAPI document
 * the API serves. test/lint/http-api-doc.test.ts fails until this has been run after a change to
 * an endpoint definition.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { API_VERSION, ENDPOINTS } from "../../lib/api/endpoints";
import { buildOpenApi } from "../../lib/api/openapi";
import { PERMISSIONS } from "../../lib/control/auth/roles";
import { renderHttpApi, withGeneratedPart } from "./render-http-api";

const PAGE = path.resolve(import.meta.dirname, "../../docs/http-api.md");

const generated = renderHttpApi({
  document: buildOpenApi(ENDPOINTS, API_VERSION),
  leastRoleOf: PERMISSIONS,
});
const before = readFileSync(PAGE, "utf8");
const after = withGeneratedPart(before, generated);
if (after === before) {
  console.log(`${path.relative(process.cwd(), PAGE)} is up to date`);
} else {
  writeFileSync(PAGE, after);
  console.log(`wrote ${path.relative(process.cwd(), PAGE)}`);
}
