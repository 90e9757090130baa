"use client";

import { useRouter } from "next/navigation";
import { type FormEvent, useState } from "react";
import { describeSignInFailure } from "./sign-in-failure";

type FormState =
  | { kind: "idle" }
  | { kind: "submitting" }
  | { kind: "error"; message: string; field?: "email" | "password"; requestId?: string | null };

/** Posts to the sign-in API (which sets the session cookie) and then goes on to `next`. */
export function SignInForm({ next }: { next: string }) {
  const router = useRouter();
  const [state, setState] = useState<FormState>({ kind: "idle" });

  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const email = String(form.get("email") ?? "").trim();
    const password = String(form.get("password") ?? "");
    if (email === "")
      return setState({ kind: "error", field: "email", message: "Enter your email." });
    if (password === "")
      return setState({ kind: "error", field: "password", message: "Enter your password." });
    setState({ kind: "submitting" });
    let response: Response;
    try {
      response = await fetch("/api/v1/auth/sign-in", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email, password }),
      });
    } catch {
      return setState({
        kind: "error",
        message: "The console did not answer. Check your connection and try again.",
      });
    }
    if (response.ok) {
      router.replace(next);
      router.refresh();
      return;
    }
    const body: unknown = await response.json().catch(() => null);
    const failure = describeSignInFailure({
      status: response.status,
      retryAfter: response.headers.get("retry-after"),
      requestIdHeader: response.headers.get("x-request-id"),
      body,
    });
    setState({ kind: "error", message: failure.message, requestId: failure.requestId });
  }

  const error = state.kind === "error" ? state : null;
  return (
    <form className="form" onSubmit={onSubmit} noValidate>
      <label className="field">
        <span>Email</span>
        <input
          name="email"
          type="email"
          autoComplete="username"
          required
          aria-invalid={error?.field === "email" || undefined}
        />
      </label>
      <label className="field">
        <span>Password</span>
        <input
          name="password"
          type="password"
          autoComplete="current-password"
          required
          aria-invalid={error?.field === "password" || undefined}
        />
      </label>
      {error ? (
        <p className="field-error" role="alert">
          {error.message}
          {error.requestId ? (
            <>
              {" "}
              Request id: <code data-testid="sign-in-request-id">{error.requestId}</code>
            </>
          ) : null}
        </p>
      ) : null}
      <button className="button" type="submit" disabled={state.kind === "submitting"}>
        {state.kind === "submitting" ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
}
