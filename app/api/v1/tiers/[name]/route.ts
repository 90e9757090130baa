import { deleteTierEndpoint, getTierEndpoint, updateTierEndpoint } from "@/lib/api/endpoints/tiers";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(getTierEndpoint);
export const PATCH = toRouteHandler(updateTierEndpoint);
export const DELETE = toRouteHandler(deleteTierEndpoint);
