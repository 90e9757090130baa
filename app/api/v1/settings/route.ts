import { getSettingsEndpoint, updateSettingsEndpoint } from "@/lib/api/endpoints/settings";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(getSettingsEndpoint);
export const PATCH = toRouteHandler(updateSettingsEndpoint);
