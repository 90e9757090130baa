import {
  deleteAccountOverrideEndpoint,
  updateAccountOverrideEndpoint,
} from "@/lib/api/endpoints/customer-overrides";
import { toRouteHandler } from "@/lib/api/route-handler";

export const PATCH = toRouteHandler(updateAccountOverrideEndpoint);
export const DELETE = toRouteHandler(deleteAccountOverrideEndpoint);
