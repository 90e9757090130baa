import { getSettingsEndpoint, updateSettingsEndpoint } from "@/lib/api/endpoints/settings";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  getSettingsEndpoint,
  updateSettingsEndpoint,
);
