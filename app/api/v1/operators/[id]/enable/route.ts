import { enableOperatorEndpoint } from "@/lib/api/endpoints/operators";
import { toRouteHandler } from "@/lib/api/route-handler";

export const POST = toRouteHandler(enableOperatorEndpoint);
