import {
  createCustomerOverrideEndpoint,
  listCustomerOverridesEndpoint,
} from "@/lib/api/endpoints/customer-overrides";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  listCustomerOverridesEndpoint,
  createCustomerOverrideEndpoint,
);
