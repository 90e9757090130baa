import { raiseDescriptorValueEndpoint } from "@/lib/api/endpoints/descriptor-rules";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  raiseDescriptorValueEndpoint,
);
