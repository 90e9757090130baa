"use client";

import { type ReactNode, useId, useRef, useState } from "react";

export interface ConfirmDialogProps {
  /** The button that opens the dialog. */
  triggerLabel: string;
  /** The question, e.g. "Raise acme's limit for 15 min?". */
  title: string;
  /** What will happen, in plain words: before and after, who is affected. */
  children?: ReactNode;
  /** Says the action, never just "OK": "Raise limit", "Revert override". */
  confirmLabel: string;
  /** @default "Cancel" */
  cancelLabel?: string;
  /** `danger` colours the confirm button for changes that cut traffic or remove things. @default "default" */
  tone?: "default" | "danger";
  /** Disables the trigger, e.g. while a form is invalid. @default false */
  disabled?: boolean;
  /**
   * Runs on confirm; a server action works. Return `{ error }` to keep the dialog open and show a
   * message the operator can act on (a guardrail, a conflict); otherwise it closes when done.
   */
  onConfirm: () => ConfirmResult | Promise<ConfirmResult>;
}

/** What `onConfirm` may return: nothing on success, or a message to show. */
// biome-ignore lint/suspicious/noConfusingVoidType: a server action that returns nothing is `Promise<void>`
export type ConfirmResult = void | { readonly error: string };

/**
 * A confirmation step for a consequential change, on the native `<dialog>`: opened with
 * `showModal()`, the rest of the page is inert and focus stays inside; Escape closes it (unless
 * the action is running); focus returns to the trigger. Cancel has focus first, so Enter never
 * confirms by accident.
 */
export function ConfirmDialog({
  triggerLabel,
  title,
  children,
  confirmLabel,
  cancelLabel = "Cancel",
  tone = "default",
  disabled = false,
  onConfirm,
}: ConfirmDialogProps) {
  const dialogRef = useRef<HTMLDialogElement>(null);
  const triggerRef = useRef<HTMLButtonElement>(null);
  const [isPending, setIsPending] = useState(false);
  const [errorMessage, setErrorMessage] = useState<string | null>(null);
  const titleId = useId();
  const bodyId = useId();

  const open = () => {
    setErrorMessage(null);
    dialogRef.current?.showModal();
  };
  const close = () => {
    dialogRef.current?.close();
  };
  const confirm = async () => {
    setIsPending(true);
    setErrorMessage(null);
    try {
      const result = await onConfirm();
      if (result?.error) setErrorMessage(result.error);
      else close();
    } catch {
      // A thrown server action error reaches the client without its details in production, and
      // whether the change was made is unknown: say so instead of echoing whatever arrived.
      setErrorMessage(
        "Something went wrong, and the change may or may not have been made. Check the current state before trying again.",
      );
    } finally {
      setIsPending(false);
    }
  };

  return (
    <>
      <button
        ref={triggerRef}
        type="button"
        className={tone === "danger" ? "button button-danger" : "button"}
        onClick={open}
        disabled={disabled}
      >
        {triggerLabel}
      </button>
      <dialog
        ref={dialogRef}
        className="confirm-dialog"
        aria-labelledby={titleId}
        aria-describedby={children ? bodyId : undefined}
        onCancel={(event) => {
          // Escape while the change is being made would hide its outcome.
          if (isPending) event.preventDefault();
        }}
        onClose={() => triggerRef.current?.focus()}
      >
        <h2 id={titleId}>{title}</h2>
        {children ? (
          <div id={bodyId} className="confirm-dialog-body">
            {children}
          </div>
        ) : null}
        {errorMessage ? (
          <p className="confirm-dialog-error" role="alert">
            {errorMessage}
          </p>
        ) : null}
        <div className="confirm-dialog-actions">
          <button
            type="button"
            className="button button-secondary"
            onClick={close}
            disabled={isPending}
            // biome-ignore lint/a11y/noAutofocus: the safe choice takes focus when the dialog opens
            autoFocus
          >
            {cancelLabel}
          </button>
          <button
            type="button"
            className={tone === "danger" ? "button button-danger" : "button"}
            onClick={confirm}
            disabled={isPending}
            aria-busy={isPending}
          >
            {isPending ? "Working…" : confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}
