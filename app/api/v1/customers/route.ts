import { createCustomerEndpoint, listCustomersEndpoint } from "@/lib/api/endpoints/customers";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(listCustomersEndpoint);
export const POST = toRouteHandler(createCustomerEndpoint);
