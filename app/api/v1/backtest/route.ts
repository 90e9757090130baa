import { runBacktestEndpoint } from "@/lib/api/endpoints/backtest";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(runBacktestEndpoint);
