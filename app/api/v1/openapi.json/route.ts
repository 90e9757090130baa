import { openApiEndpoint } from "@/lib/api/endpoints";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(openApiEndpoint);
