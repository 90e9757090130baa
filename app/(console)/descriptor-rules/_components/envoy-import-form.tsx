"use client";

import { useRouter } from "next/navigation";
import { useState } from "react";
import { callApi } from "@/lib/api/api-client";
import formStyles from "../../policies/_components/policy-form.module.css";

interface PreviewRule {
  readonly domain: string;
  readonly descriptor: readonly { readonly key: string; readonly value: string | null }[];
}

interface ImportAnswer {
  readonly preview: {
    readonly domains: readonly string[];
    readonly added: readonly PreviewRule[];
    readonly changed: readonly { readonly after: PreviewRule }[];
    readonly removed: readonly PreviewRule[];
    readonly unchanged: number;
  };
  readonly policyVersion: number | null;
  readonly dryRun: boolean;
  readonly isNoChange: boolean;
}

function pattern(rule: PreviewRule): string {
  return `${rule.domain}: ${rule.descriptor
    .map((level) => (level.value === null ? level.key : `${level.key}=${level.value}`))
    .join(", ")}`;
}

/** Pastes or picks one envoyproxy/ratelimit YAML file, previews it, and imports it. */
export function EnvoyImportForm() {
  const router = useRouter();
  const [name, setName] = useState("ratelimit.yaml");
  const [text, setText] = useState("");
  const [reason, setReason] = useState("");
  const [answer, setAnswer] = useState<ImportAnswer | null>(null);
  const [problems, setProblems] = useState<readonly { path: string; message: string }[]>([]);
  const [formError, setFormError] = useState<string | null>(null);
  const [isPending, setIsPending] = useState(false);

  const send = async (dryRun: boolean) => {
    setIsPending(true);
    setFormError(null);
    setProblems([]);
    try {
      const result = await callApi<ImportAnswer>("/api/v1/descriptor-rules/import-envoy", {
        method: "POST",
        body: { files: [{ name, text }], dryRun, reason: reason.trim() },
      });
      if (result.ok) {
        setAnswer(result.body);
        if (!dryRun) router.refresh();
        return;
      }
      setAnswer(null);
      setProblems(result.error.fieldErrors);
      setFormError(result.error.message);
    } catch {
      setFormError("The file could not be sent. Check the rules before trying again.");
    } finally {
      setIsPending(false);
    }
  };

  return (
    <form
      className={formStyles.form}
      noValidate
      aria-label="Import envoyproxy/ratelimit configuration"
      onSubmit={(event) => {
        event.preventDefault();
        void send(false);
      }}
    >
      {formError !== null ? (
        <div className={formStyles.formError} role="alert" data-testid="import-error">
          <p>{formError}</p>
          {problems.length > 1 ? (
            <ul>
              {problems.map((problem) => (
                <li key={`${problem.path} ${problem.message}`}>
                  <code>{problem.path}</code>: {problem.message}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
      <label>
        File
        <input
          type="file"
          accept=".yaml,.yml,text/yaml"
          onChange={(event) => {
            const file = event.target.files?.[0];
            if (file === undefined) return;
            setName(file.name);
            void file.text().then(setText);
          }}
        />
      </label>
      <label>
        File name (what problems are reported against)
        <input value={name} onChange={(event) => setName(event.target.value)} name="name" />
      </label>
      <label>
        YAML
        <textarea
          name="yaml"
          rows={12}
          value={text}
          onChange={(event) => setText(event.target.value)}
          spellCheck={false}
        />
      </label>
      <label>
        Reason
        <input
          name="reason"
          value={reason}
          onChange={(event) => setReason(event.target.value)}
          maxLength={1000}
        />
      </label>
      <div className={formStyles.actions}>
        <button
          type="button"
          className="button secondary"
          disabled={isPending}
          onClick={() => void send(true)}
        >
          Preview
        </button>
        <button type="submit" className="button" disabled={isPending} aria-busy={isPending}>
          Import
        </button>
      </div>
      {answer !== null ? (
        <div data-testid="import-preview" aria-live="polite">
          <p>
            {answer.dryRun
              ? "Preview, nothing written: "
              : answer.isNoChange
                ? "Nothing differs: "
                : `Imported as policy version ${answer.policyVersion ?? "(none)"}: `}
            {answer.preview.added.length} added, {answer.preview.changed.length} changed,{" "}
            {answer.preview.removed.length} removed, {answer.preview.unchanged} unchanged in{" "}
            {answer.preview.domains.join(", ")}.
          </p>
          <ul>
            {answer.preview.added.map((rule) => (
              <li key={`+${pattern(rule)}`}>+ {pattern(rule)}</li>
            ))}
            {answer.preview.changed.map(({ after }) => (
              <li key={`~${pattern(after)}`}>~ {pattern(after)}</li>
            ))}
            {answer.preview.removed.map((rule) => (
              <li key={`-${pattern(rule)}`}>- {pattern(rule)}</li>
            ))}
          </ul>
        </div>
      ) : null}
    </form>
  );
}
