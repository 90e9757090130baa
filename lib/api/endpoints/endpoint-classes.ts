import { ZEndpointClass } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { createEndpointClass } from "@/lib/control/endpoint-class/create-endpoint-class";
import { deleteEndpointClass } from "@/lib/control/endpoint-class/delete-endpoint-class";
import { getEndpointClass } from "@/lib/control/endpoint-class/get-endpoint-class";
import { listEndpointClasses } from "@/lib/control/endpoint-class/list-endpoint-classes";
import {
  updateEndpointClass,
  ZUpdateEndpointClassOptions,
} from "@/lib/control/endpoint-class/update-endpoint-class";
import { controlDeps } from "@/lib/server/composition";
import { defineEndpoint } from "../endpoint";
import {
  changeContextOf,
  strictBody,
  strictParams,
  ZChangeReceipt,
  ZExpectedVersion,
  ZReason,
  ZTimestamps,
} from "./shared";

export const ZEndpointClassRecord = z.object({ ...ZEndpointClass.shape, ...ZTimestamps });
const ZEndpointClassChange = z.object({ endpointClass: ZEndpointClassRecord, ...ZChangeReceipt });
const ZEndpointClassParams = strictParams({ name: ZEndpointClass.shape.name });
const tag = "Endpoint classes";

export const listEndpointClassesEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/endpoint-classes",
  summary: "List endpoint classes",
  tag,
  access: "policy.read",
  response: z.object({ endpointClasses: z.array(ZEndpointClassRecord) }),
  handle: async () => ({ endpointClasses: await listEndpointClasses(controlDeps()) }),
});

export const createEndpointClassEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/endpoint-classes",
  summary: "Create an endpoint class",
  tag,
  access: "endpoint-class.write",
  body: strictBody({ ...ZEndpointClass.shape, reason: ZReason }),
  response: ZEndpointClassChange,
  successStatus: 201,
  errors: ["CONFLICT"],
  handle: ({ body: { reason, ...endpointClass }, ...input }) =>
    createEndpointClass(endpointClass, changeContextOf(input, reason), controlDeps()),
});

export const getEndpointClassEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/endpoint-classes/{name}",
  summary: "Get an endpoint class",
  tag,
  access: "policy.read",
  params: ZEndpointClassParams,
  response: z.object({ endpointClass: ZEndpointClassRecord }),
  errors: ["NOT_FOUND"],
  handle: async ({ params }) => ({
    endpointClass: await getEndpointClass(params.name, controlDeps()),
  }),
});

const { name: _name, ...endpointClassUpdateShape } = ZUpdateEndpointClassOptions.shape;

export const updateEndpointClassEndpoint = defineEndpoint({
  method: "PATCH",
  path: "/api/v1/endpoint-classes/{name}",
  summary: "Change an endpoint class (fields not given stay; limits and match are replaced whole)",
  tag,
  access: "endpoint-class.write",
  params: ZEndpointClassParams,
  body: strictBody({ ...endpointClassUpdateShape, reason: ZReason }),
  response: ZEndpointClassChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "APPROVAL_REQUIRED"],
  handle: ({ params, body: { reason, ...change }, ...input }) =>
    updateEndpointClass(
      { ...change, name: params.name },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});

export const deleteEndpointClassEndpoint = defineEndpoint({
  method: "DELETE",
  path: "/api/v1/endpoint-classes/{name}",
  summary: "Delete an endpoint class nothing refers to",
  tag,
  access: "endpoint-class.write",
  params: ZEndpointClassParams,
  body: strictBody({ expectedVersion: ZExpectedVersion, reason: ZReason }),
  response: ZEndpointClassChange,
  errors: ["NOT_FOUND", "VERSION_CONFLICT", "CONFLICT", "APPROVAL_REQUIRED"],
  handle: ({ params, body: { reason, expectedVersion }, ...input }) =>
    deleteEndpointClass(
      { name: params.name, expectedVersion },
      changeContextOf(input, reason),
      controlDeps(),
    ),
});
