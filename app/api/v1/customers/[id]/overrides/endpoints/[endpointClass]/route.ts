import {
  deleteEndpointOverrideEndpoint,
  updateEndpointOverrideEndpoint,
} from "@/lib/api/endpoints/customer-overrides";
import { toRouteHandler } from "@/lib/api/route-handler";

export const PATCH = toRouteHandler(updateEndpointOverrideEndpoint);
export const DELETE = toRouteHandler(deleteEndpointOverrideEndpoint);
