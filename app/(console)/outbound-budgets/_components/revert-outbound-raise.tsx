import { ConfirmWithReason } from "../../_components/confirm-with-reason";

/**
 * "Revert now" on a raised budget: asks for a reason, then ends the raise with the version the
 * page was opened at. Its own limit and cap apply again from the version this publishes.
 */
export function RevertOutboundRaise({ name, version }: { name: string; version: number }) {
  return (
    <ConfirmWithReason
      triggerLabel="Revert now"
      formLabel="Revert the raise"
      reasonId="revert-reason"
      reasonLabel="Reason for reverting (required)"
      confirmLabel="Revert the raise"
      pendingLabel="Reverting…"
      url={`/api/v1/outbound-budgets/${encodeURIComponent(name)}/raise`}
      method="DELETE"
      body={{ expectedVersion: version }}
      unsentMessage="The revert could not be sent. Try again."
    />
  );
}
