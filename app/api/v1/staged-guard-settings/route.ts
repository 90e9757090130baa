import {
  getStagedGuardSettingsEndpoint,
  updateStagedGuardSettingsEndpoint,
} from "@/lib/api/endpoints/staged-changes";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  getStagedGuardSettingsEndpoint,
  updateStagedGuardSettingsEndpoint,
);
