import { ConfirmWithReason } from "../../_components/confirm-with-reason";

/**
 * Deleting a budget, in two steps: the first button only asks for confirmation and a reason;
 * callers that read budgets from the policy then refuse its scope.
 */
export function DeleteOutboundBudget({ name, version }: { name: string; version: number }) {
  return (
    <ConfirmWithReason
      triggerLabel="Delete budget…"
      formLabel="Delete outbound budget"
      reasonId="delete-reason"
      reasonLabel="Reason for deleting (required)"
      confirmLabel={`Delete ${name}`}
      url={`/api/v1/outbound-budgets/${encodeURIComponent(name)}`}
      method="DELETE"
      body={{ expectedVersion: version }}
      afterDoneHref="/outbound-budgets"
      unsentMessage="The deletion could not be sent. Try again."
    >
      <p role="alert">
        Delete <code>outbound:{name}</code>? Callers that read it from the policy refuse its scope
        from the next policy version on.
      </p>
    </ConfirmWithReason>
  );
}
