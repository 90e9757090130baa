import {
  deleteCustomerEndpoint,
  getCustomerEndpoint,
  updateCustomerEndpoint,
} from "@/lib/api/endpoints/customers";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(getCustomerEndpoint);
export const PATCH = toRouteHandler(updateCustomerEndpoint);
export const DELETE = toRouteHandler(deleteCustomerEndpoint);
