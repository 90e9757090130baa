import { z } from "zod";
import { ROLES } from "@/lib/control/auth/roles";
import { ZApiTokenId } from "@/lib/control/token/api-token-record";
import { createApiToken, ZCreateApiTokenOptions } from "@/lib/control/token/create-api-token";
import { getApiToken } from "@/lib/control/token/get-api-token";
import { listApiTokens } from "@/lib/control/token/list-api-tokens";
import { revokeApiToken } from "@/lib/control/token/revoke-api-token";
import { authDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import {
  changeContextOf,
  queryBoolean,
  strictBody,
  strictParams,
  ZAuditReceipt,
  ZExpectedVersion,
  ZReason,
} from "./shared";

/** What the API shows of a token: its name and prefix, never the secret or its hash. */
export const ZApiTokenRecord = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string().describe("The start of the token (lp_ and 8 characters), to recognise it."),
  role: z.enum(ROLES).describe("The role it was given."),
  effectiveRole: z
    .enum(ROLES)
    .nullable()
    .describe(
      "What it may do now: its role, capped by its creator's current role. Null unless active.",
    ),
  createdBy: z.object({
    kind: z
      .enum(["operator", "token", "cli"])
      .describe("`cli`: made by `token:create` or `npm run up`; it keeps the role it was given."),
    id: z.string().nullable(),
    name: z.string(),
  }),
  createdAt: z.string(),
  expiresAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  lastUsedAt: z.string().nullable().describe("Exact to a minute."),
  version: z.number().int(),
  state: z
    .enum(["active", "expired", "revoked", "suspended"])
    .describe(
      "`suspended`: its creator is disabled or gone (or, for a token made by a token, that token no longer works); it works again if its creator does.",
    ),
});
const ZApiTokenParams = strictParams({ id: ZApiTokenId });
const tag = "API tokens";

export const listApiTokensEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/tokens",
  summary: "List API tokens by name and prefix",
  tag,
  access: "token.manage",
  query: strictParams({ includeInactive: queryBoolean("includeInactive").optional() }),
  response: z.object({ tokens: z.array(ZApiTokenRecord) }),
  handle: async ({ query }) => ({ tokens: await listApiTokens(query, authDeps()) }),
});

export const createApiTokenEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/tokens",
  summary: "Create an API token; the token is in this response only",
  description:
    "Only a hash is stored: copy `token` now. Send it as `Authorization: Bearer <token>`. Without `expiresAt` it works until revoked.",
  tag,
  access: "token.manage",
  body: strictBody({ ...ZCreateApiTokenOptions.shape, reason: ZReason }),
  response: z.object({
    token: z.string().describe("lp_<prefix>_<secret>: shown once."),
    apiToken: ZApiTokenRecord,
    ...ZAuditReceipt,
  }),
  successStatus: 201,
  handle: ({ body: { reason, ...token }, ...input }) =>
    createApiToken(token, changeContextOf(input, reason), authDeps()),
});

export const getApiTokenEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/tokens/{id}",
  summary: "Get an API token (never its secret)",
  tag,
  access: "token.manage",
  params: ZApiTokenParams,
  response: z.object({ apiToken: ZApiTokenRecord }),
  errors: ["NOT_FOUND"],
  handle: async ({ params }) => ({ apiToken: await getApiToken(params.id, authDeps()) }),
});

export const revokeApiTokenEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/tokens/{id}/revoke",
  summary: "Revoke an API token; its next request is refused",
  tag,
  access: "token.manage",
  params: ZApiTokenParams,
  body: strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason }),
  response: z.object({ apiToken: ZApiTokenRecord, ...ZAuditReceipt }),
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    revokeApiToken({ id: params.id, expectedVersion }, changeContextOf(input, reason), authDeps()),
});
