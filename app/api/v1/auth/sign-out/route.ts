import { signOutEndpoint } from "@/lib/api/endpoints/auth";
import { toRouteHandler } from "@/lib/api/route-handler";

export const POST = toRouteHandler(signOutEndpoint);
