import { z } from "zod";
import { ROLES } from "@/lib/control/auth/roles";
import { createOperator, ZCreateOperatorOptions } from "@/lib/control/operator/create-operator";
import { disableOperator } from "@/lib/control/operator/disable-operator";
import { enableOperator } from "@/lib/control/operator/enable-operator";
import { getOperator } from "@/lib/control/operator/get-operator";
import { listOperators } from "@/lib/control/operator/list-operators";
import { ZOperatorId } from "@/lib/control/operator/operator-record";
import {
  resetOperatorPassword,
  ZResetOperatorPasswordOptions,
} from "@/lib/control/operator/reset-operator-password";
import { updateOperator, ZUpdateOperatorOptions } from "@/lib/control/operator/update-operator";
import { authDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import {
  changeContextOf,
  strictBody,
  strictParams,
  ZAuditReceipt,
  ZExpectedVersion,
  ZReason,
  ZTimestamps,
} from "./shared";

/** What the API shows of an operator: never the password hash. */
export const ZOperatorRecord = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string(),
  role: z.enum(ROLES),
  disabledAt: z.string().nullable(),
  ...ZTimestamps,
});
const ZOperatorChange = z.object({ operator: ZOperatorRecord, ...ZAuditReceipt });
const ZGeneratedPassword = z
  .string()
  .nullable()
  .describe("The password generated when none was given, shown this once; null otherwise.");
const ZOperatorParams = strictParams({ id: ZOperatorId });
const ZVersionedBody = strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason });
const tag = "Operators";

export const listOperatorsEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/operators",
  summary: "List operators",
  tag,
  access: "operator.manage",
  response: z.object({ operators: z.array(ZOperatorRecord) }),
  handle: async () => ({ operators: await listOperators(authDeps()) }),
});

export const createOperatorEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/operators",
  summary: "Add an operator",
  description: "Without `password`, a strong one is generated and returned once.",
  tag,
  access: "operator.manage",
  body: strictBody({ ...ZCreateOperatorOptions.shape, reason: ZReason }),
  response: z.object({ ...ZOperatorChange.shape, generatedPassword: ZGeneratedPassword }),
  successStatus: 201,
  errors: ["CONFLICT"],
  handle: ({ body: { reason, ...operator }, ...input }) =>
    createOperator(operator, changeContextOf(input, reason), authDeps()),
});

export const getOperatorEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/operators/{id}",
  summary: "Get an operator",
  tag,
  access: "operator.manage",
  params: ZOperatorParams,
  response: z.object({ operator: ZOperatorRecord }),
  errors: ["NOT_FOUND"],
  handle: async ({ params }) => ({ operator: await getOperator(params.id, authDeps()) }),
});

const { id: _id, ...operatorUpdateShape } = ZUpdateOperatorOptions.shape;

export const updateOperatorEndpoint = defineEndpoint({
  method: "PATCH",
  path: "/api/v1/operators/{id}",
  summary: "Change an operator's name, email or role",
  description:
    "A role change applies to their next request. The last enabled admin stays an admin.",
  tag,
  access: "operator.manage",
  params: ZOperatorParams,
  body: strictBody({ ...operatorUpdateShape, reason: ZReason }),
  response: ZOperatorChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
  handle: ({ params, body: { reason, ...change }, ...input }) =>
    updateOperator({ ...change, id: params.id }, changeContextOf(input, reason), authDeps()),
});

export const disableOperatorEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/operators/{id}/disable",
  summary: "Stop an operator signing in; their sessions end at once",
  tag,
  access: "operator.manage",
  params: ZOperatorParams,
  body: ZVersionedBody,
  response: z.object({ ...ZOperatorChange.shape, sessionsRevoked: z.number().int() }),
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    disableOperator({ id: params.id, expectedVersion }, changeContextOf(input, reason), authDeps()),
});

export const enableOperatorEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/operators/{id}/enable",
  summary: "Let a disabled operator sign in again",
  tag,
  access: "operator.manage",
  params: ZOperatorParams,
  body: ZVersionedBody,
  response: ZOperatorChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    enableOperator({ id: params.id, expectedVersion }, changeContextOf(input, reason), authDeps()),
});

const { id: _resetId, ...resetShape } = ZResetOperatorPasswordOptions.shape;

export const resetOperatorPasswordEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/operators/{id}/password",
  summary: "Set an operator's password; their sessions end at once",
  description: "Without `password`, a strong one is generated and returned once.",
  tag,
  access: "operator.manage",
  params: ZOperatorParams,
  body: strictBody({ ...resetShape, reason: ZReason }),
  response: z.object({
    ...ZOperatorChange.shape,
    generatedPassword: ZGeneratedPassword,
    sessionsRevoked: z.number().int(),
  }),
  errors: ["NOT_FOUND", "VERSION_CONFLICT"],
  handle: ({ params, body: { reason, ...change }, ...input }) =>
    resetOperatorPassword({ ...change, id: params.id }, changeContextOf(input, reason), authDeps()),
});
