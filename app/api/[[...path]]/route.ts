/** Any path under /api that no route file has: a JSON 404 in the API's error shape. */
import { routeNotFound } from "@/lib/api/route-handler";

export const GET = routeNotFound;
export const POST = routeNotFound;
export const PUT = routeNotFound;
export const PATCH = routeNotFound;
export const DELETE = routeNotFound;
export const OPTIONS = routeNotFound;
