/**
 * Applies a requested change through its own service, so it is validated, version-checked,
 * audited and published exactly as the direct edit would be. This is the one place an approved
 * request turns into a change; a request proposed as a staged change starts it here (its first
 * step's slice), instead of applying the limit to everyone at once.
 */

import { promoteCandidate } from "../candidate/promote-candidate";
import type { ChangeContext } from "../change-context";
import type { ControlDeps } from "../deps";
import { deleteEndpointClass } from "../endpoint-class/delete-endpoint-class";
import { updateEndpointClass } from "../endpoint-class/update-endpoint-class";
import { AppError } from "../errors";
import { importPolicy } from "../policy/import-policy";
import type { ChangeReceipt } from "../policy/run-policy-change";
import { updatePolicySettings } from "../settings/update-policy-settings";
import { startStagedChange } from "../staged-change/start-staged-change";
import { deleteTier } from "../tier/delete-tier";
import { updateTier } from "../tier/update-tier";
import type { TRequestedChange } from "./change-request-record";

export async function applyRequestedChange(
  change: TRequestedChange,
  ctx: ChangeContext,
  deps: ControlDeps,
): Promise<ChangeReceipt> {
  switch (change.kind) {
    case "tier.update": {
      const { kind: _kind, ...options } = change;
      return updateTier(options, ctx, deps);
    }
    case "tier.delete": {
      const { kind: _kind, ...options } = change;
      return deleteTier(options, ctx, deps);
    }
    case "endpoint-class.update": {
      const { kind: _kind, ...options } = change;
      return updateEndpointClass(options, ctx, deps);
    }
    case "endpoint-class.delete": {
      const { kind: _kind, ...options } = change;
      return deleteEndpointClass(options, ctx, deps);
    }
    case "settings.update": {
      const { kind: _kind, ...options } = change;
      return updatePolicySettings(options, ctx, deps);
    }
    case "candidate.promote": {
      const { kind: _kind, ...options } = change;
      return promoteCandidate(options, ctx, deps);
    }
    case "staged-change.start": {
      const { kind: _kind, ...options } = change;
      return startStagedChange(options, ctx, deps);
    }
    case "policy.import": {
      const result = await importPolicy(change.document, ctx, deps);
      if (result.auditEntryId === null) {
        throw new AppError(
          "CONFLICT",
          "The requested import now matches the stored policy exactly: there is nothing to approve. Withdraw or reject the request.",
        );
      }
      return result;
    }
  }
}
