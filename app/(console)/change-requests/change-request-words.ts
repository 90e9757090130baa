import type { BadgeTone } from "@/components/ui/badge";
import type { ChangeRequestStatus } from "@/lib/control/change-request/change-request-record";

export const STATUS_TONE: Record<ChangeRequestStatus, BadgeTone> = {
  pending: "warn",
  approved: "ok",
  rejected: "bad",
  withdrawn: "muted",
  expired: "muted",
};
