"use client";

import { useRouter } from "next/navigation";
import { useState } from "react";

/**
 * Ends the session through the API, then shows the sign-in page; a session signed in through the
 * identity provider goes on to sign out there (`providerSignOutUrl`), which sends the browser back
 * to the sign-in page.
 */
export function SignOutButton() {
  const router = useRouter();
  const [failed, setFailed] = useState(false);
  const [busy, setBusy] = useState(false);

  async function signOut() {
    setBusy(true);
    setFailed(false);
    try {
      const response = await fetch("/api/v1/auth/sign-out", { method: "POST" });
      // 401: the session had already ended; either way the operator is signed out.
      if (!response.ok && response.status !== 401) throw new Error(String(response.status));
      const answer: unknown = response.ok ? await response.json() : null;
      const providerUrl = providerSignOutUrlOf(answer);
      if (providerUrl !== null) {
        window.location.assign(providerUrl);
        return;
      }
      router.replace("/sign-in?signedOut=1");
      router.refresh();
    } catch {
      setFailed(true);
      setBusy(false);
    }
  }

  return (
    <>
      <button type="button" className="link-button" onClick={signOut} disabled={busy}>
        {busy ? "Signing out…" : "Sign out"}
      </button>
      {failed ? (
        <span className="field-error" role="alert">
          Sign-out failed; try again.
        </span>
      ) : null}
    </>
  );
}

function providerSignOutUrlOf(answer: unknown): string | null {
  if (typeof answer !== "object" || answer === null || !("providerSignOutUrl" in answer)) {
    return null;
  }
  const url = answer.providerSignOutUrl;
  return typeof url === "string" && /^https:\/\//.test(url) ? url : null;
}
