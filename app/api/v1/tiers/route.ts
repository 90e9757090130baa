import { createTierEndpoint, listTiersEndpoint } from "@/lib/api/endpoints/tiers";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(listTiersEndpoint);
export const POST = toRouteHandler(createTierEndpoint);
