/**
 * The OpenAPI 3.1 document, generated from the endpoint definitions' own zod schemas, so what is
 * documented is what is validated. Served at `GET /api/v1/openapi.json`.
 */
import { z } from "zod";
import { ERROR_CODES, HTTP_STATUS } from "@/lib/control/errors";
import type { AnyEndpoint } from "./endpoint";

const ZErrorBody = z.object({
  error: z.object({
    code: z.enum(ERROR_CODES),
    message: z.string().describe("What went wrong, written for the person who must act on it."),
    fieldErrors: z.array(z.object({ path: z.string(), message: z.string() })),
    details: z.record(z.string(), z.unknown()).optional(),
    requestId: z.string(),
  }),
});

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
  }) as JsonSchema;
  return rest;
}

/** Path and query parameters from an object schema's top-level properties. */
function parameters(schema: z.ZodType | undefined, where: "path" | "query"): JsonSchema[] {
  if (schema === undefined) return [];
  const json = jsonSchema(schema, "input");
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: where,
    required: where === "path" || required.has(name),
    schema: property,
    ...(typeof property.description === "string" ? { description: property.description } : {}),
  }));
}

function statusesFor(endpoint: AnyEndpoint): number[] {
  const codes = new Set<number>([400, 500]);
  if (endpoint.access !== "public") codes.add(401);
  if (endpoint.access !== "public" && endpoint.access !== "authenticated") codes.add(403);
  // A session's state-changing request from another site; or a cross-site sign-in.
  if (endpoint.access !== "public" && endpoint.method !== "GET") codes.add(403);
  if (endpoint.refuseCrossSite === true) codes.add(403);
  if (endpoint.body !== undefined) {
    codes.add(413);
    codes.add(415);
  }
  // Every route that authenticates or takes a body reads Postgres: 503 while it is unreachable.
  if (endpoint.access !== "public" || endpoint.body !== undefined) codes.add(503);
  for (const code of endpoint.errors ?? []) codes.add(HTTP_STATUS[code]);
  return [...codes].sort((a, b) => a - b);
}

export function buildOpenApi(endpoints: readonly AnyEndpoint[], version: string): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const endpoint of endpoints) {
    const operation: JsonSchema = {
      operationId: `${endpoint.method.toLowerCase()}${endpoint.path
        .replace(/\/api\/v1/, "")
        .replace(/[{}]/g, "")
        .replace(/(?:^|[/-])(\w)/g, (_m, c: string) => c.toUpperCase())}`,
      summary: endpoint.summary,
      ...(endpoint.description ? { description: endpoint.description } : {}),
      tags: [endpoint.tag],
      parameters: [...parameters(endpoint.params, "path"), ...parameters(endpoint.query, "query")],
      ...(endpoint.access === "public" ? { security: [] } : {}),
      ...(endpoint.access === "public" || endpoint.access === "authenticated"
        ? {}
        : endpoint.access === "session"
          ? { "x-session-only": true }
          : { "x-permission": endpoint.access }),
      ...(endpoint.body
        ? {
            requestBody: {
              required: true,
              content: {
                "application/json": {
                  schema: jsonSchema(endpoint.docs?.body ?? endpoint.body, "input"),
                },
              },
            },
          }
        : {}),
      responses: {
        [String(endpoint.successStatus ?? 200)]:
          endpoint.successStatus === 204
            ? { description: "Done" }
            : {
                description: "Success",
                content: {
                  "application/json": {
                    schema: jsonSchema(endpoint.docs?.response ?? endpoint.response, "output"),
                  },
                },
              },
        ...Object.fromEntries(
          statusesFor(endpoint).map((status) => [
            String(status),
            {
              description: "Error",
              content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
            },
          ]),
        ),
      },
    };
    paths[endpoint.path] ??= {};
    const methods = paths[endpoint.path];
    if (methods) methods[endpoint.method.toLowerCase()] = operation;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Limitplane control plane API",
      version,
      description:
        "Manage rate-limit policy: tiers, endpoint classes, ceilings, customers, overrides, incident overrides and dry-run candidates. Every change requires a reason and is audited.",
    },
    servers: [{ url: "/" }],
    security: [{ bearerAuth: [] }, { sessionCookie: [] }],
    components: {
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          description: "An API token: lp_xxxxxxxx_...",
        },
        sessionCookie: { type: "apiKey", in: "cookie", name: "lp_session" },
      },
      schemas: { Error: jsonSchema(ZErrorBody, "output") },
    },
    paths,
  };
}
