import {
  deleteCustomerEndpoint,
  getCustomerEndpoint,
  updateCustomerEndpoint,
} from "@/lib/api/endpoints/customers";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  getCustomerEndpoint,
  updateCustomerEndpoint,
  deleteCustomerEndpoint,
);
