import {
  createEndpointClassEndpoint,
  listEndpointClassesEndpoint,
} from "@/lib/api/endpoints/endpoint-classes";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(listEndpointClassesEndpoint);
export const POST = toRouteHandler(createEndpointClassEndpoint);
