import {
  deleteEndpointClassEndpoint,
  getEndpointClassEndpoint,
  updateEndpointClassEndpoint,
} from "@/lib/api/endpoints/endpoint-classes";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(getEndpointClassEndpoint);
export const PATCH = toRouteHandler(updateEndpointClassEndpoint);
export const DELETE = toRouteHandler(deleteEndpointClassEndpoint);
