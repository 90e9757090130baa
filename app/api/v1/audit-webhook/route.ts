import { getAuditWebhookEndpoint, updateAuditWebhookEndpoint } from "@/lib/api/endpoints/audit";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  getAuditWebhookEndpoint,
  updateAuditWebhookEndpoint,
);
