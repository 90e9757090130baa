import {
  createCustomerOverrideEndpoint,
  listCustomerOverridesEndpoint,
} from "@/lib/api/endpoints/customer-overrides";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(listCustomerOverridesEndpoint);
export const POST = toRouteHandler(createCustomerOverrideEndpoint);
