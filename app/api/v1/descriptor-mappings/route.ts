import {
  getDescriptorMappingsEndpoint,
  updateDescriptorMappingsEndpoint,
} from "@/lib/api/endpoints/descriptor-mappings";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  getDescriptorMappingsEndpoint,
  updateDescriptorMappingsEndpoint,
);
