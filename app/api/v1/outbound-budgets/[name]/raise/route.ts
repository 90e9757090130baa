import {
  raiseOutboundBudgetEndpoint,
  revertOutboundRaiseEndpoint,
} from "@/lib/api/endpoints/outbound-budgets";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  raiseOutboundBudgetEndpoint,
  revertOutboundRaiseEndpoint,
);
