import { createOperatorEndpoint, listOperatorsEndpoint } from "@/lib/api/endpoints/operators";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(listOperatorsEndpoint);
export const POST = toRouteHandler(createOperatorEndpoint);
