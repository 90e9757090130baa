import { describe, expect, it } from "vitest";
import {
  GENERATED_MARKER,
  headingAnchor,
  renderHttpApi,
  withGeneratedPart,
} from "./render-http-api";

/** A document of one operation whose request body is `body`. */
function documentWith(body: Record<string, unknown>): unknown {
  return {
    openapi: "3.1.0",
    info: { title: "Demo", version: "1.0.0", description: "A demo." },
    components: { securitySchemes: {}, schemas: { Error: { type: "object", properties: {} } } },
    paths: {
      "/api/v1/things/{id}": {
        patch: {
          summary: "Change a thing",
          tags: ["Things"],
          "x-permission": "thing.write",
          parameters: [
            {
              name: "id",
              in: "path",
              required: true,
              schema: { type: "string", minLength: 1, maxLength: 64 },
            },
          ],
          requestBody: { content: { "application/json": { schema: body } } },
          responses: {
            "200": { description: "Success", content: { "application/json": { schema: body } } },
            "404": { description: "Error" },
          },
        },
      },
    },
  };
}

function bodyBlock(body: Record<string, unknown>): string {
  const text = renderHttpApi({
    document: documentWith(body),
    leastRoleOf: { "thing.write": "operator" },
  });
  const start = text.indexOf("Request body (`application/json`):\n\n```ts\n");
  const end = text.indexOf("```\n", start + 40);
  return text.slice(start + "Request body (`application/json`):\n\n```ts\n".length, end);
}

describe("renderHttpApi", () => {
  it.each([
    {
      shape: "required and optional fields with bounds, default and description",
      body: {
        type: "object",
        properties: {
          name: { type: "string", minLength: 1, maxLength: 80, description: "Shown to people." },
          count: { type: "integer", minimum: 1, maximum: 1_000_000, default: 10 },
        },
        required: ["name"],
      },
      expected:
        "{\n  name: string // 1 to 80 characters; Shown to people.\n  count?: integer // from 1 to 1,000,000; default 10\n}\n",
    },
    {
      shape: "a nullable field takes its member's bounds",
      body: {
        type: "object",
        properties: {
          note: { anyOf: [{ type: "string", maxLength: 20 }, { type: "null" }], default: null },
        },
        required: [],
      },
      expected: "{\n  note?: string | null // 0 to 20 characters; default null\n}\n",
    },
    {
      shape: "a union of objects, one member a line",
      body: {
        type: "object",
        properties: {
          limit: {
            oneOf: [
              {
                type: "object",
                properties: { algorithm: { const: "a" }, size: { type: "integer" } },
                required: ["algorithm", "size"],
              },
              {
                type: "object",
                properties: { algorithm: { const: "b" } },
                required: ["algorithm"],
              },
            ],
          },
        },
        required: ["limit"],
      },
      expected:
        '{\n  limit:\n    | {\n      algorithm: "a"\n      size: integer\n    }\n    | {\n      algorithm: "b"\n    }\n}\n',
    },
    {
      shape: "arrays, records and enums",
      body: {
        type: "object",
        properties: {
          tags: { type: "array", items: { type: "string" }, maxItems: 5 },
          counts: { type: "object", additionalProperties: { type: "number" } },
          mode: { type: "string", enum: ["on", "off"] },
        },
        required: ["tags", "counts", "mode"],
      },
      expected:
        '{\n  tags: string[] // 0 to 5 items\n  counts: { [key: string]: number }\n  mode: "on" | "off"\n}\n',
    },
  ])("renders $shape", ({ body, expected }) => {
    expect(bodyBlock(body)).toBe(expected);
  });

  it("lists each route with its access and links it to its section", () => {
    const text = renderHttpApi({
      document: documentWith({ type: "object", properties: {} }),
      leastRoleOf: { "thing.write": "operator" },
    });
    expect(text.startsWith(GENERATED_MARKER)).toBe(true);
    expect(text).toContain(
      "| PATCH | [`/api/v1/things/{id}`](#patch-apiv1thingsid) | `thing.write` (operator) | Change a thing |",
    );
    expect(text).toContain("### `PATCH /api/v1/things/{id}`");
    expect(text).toContain("| `id` | path | `string` | required; 1 to 64 characters |");
    expect(text).toContain("Errors: `404`, each with the error body.");
  });

  it("refuses a permission no role holds", () => {
    expect(() =>
      renderHttpApi({ document: documentWith({ type: "object" }), leastRoleOf: {} }),
    ).toThrow('no role holds the permission "thing.write"');
  });
});

describe("headingAnchor", () => {
  it.each([
    ["`PATCH /api/v1/things/{id}`", "patch-apiv1thingsid"],
    ["The error body", "the-error-body"],
    ["Customer overrides", "customer-overrides"],
  ])("%s -> %s", (heading, anchor) => {
    expect(headingAnchor(heading)).toBe(anchor);
  });
});

describe("withGeneratedPart", () => {
  it("keeps what precedes the marker and replaces what follows it", () => {
    const page = `# Title\n\nWritten by hand.\n\n${GENERATED_MARKER}\nold\n`;
    expect(withGeneratedPart(page, `${GENERATED_MARKER}\nnew\n`)).toBe(
      `# Title\n\nWritten by hand.\n\n${GENERATED_MARKER}\nnew\n`,
    );
  });

  it("refuses a page without the marker", () => {
    expect(() => withGeneratedPart("# Title\n", "new")).toThrow("has no line");
  });
});
