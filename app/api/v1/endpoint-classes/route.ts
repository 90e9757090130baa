import {
  createEndpointClassEndpoint,
  listEndpointClassesEndpoint,
} from "@/lib/api/endpoints/endpoint-classes";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  listEndpointClassesEndpoint,
  createEndpointClassEndpoint,
);
