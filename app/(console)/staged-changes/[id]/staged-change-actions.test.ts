import { describe, expect, it } from "vitest";
import { allowedVerbs } from "./staged-change-actions";

describe("allowedVerbs: the buttons agree with the services' state checks", () => {
  it.each([
    { state: "running", stepIndex: 0, verbs: ["pause", "advance", "abort"] },
    { state: "running", stepIndex: 2, verbs: ["pause", "complete", "abort"] },
    { state: "paused", stepIndex: 1, verbs: ["resume", "advance", "abort"] },
    { state: "paused", stepIndex: 2, verbs: ["resume", "complete", "abort"] },
    { state: "completed", stepIndex: 2, verbs: [] },
    { state: "aborted", stepIndex: 0, verbs: [] },
    { state: "reverted", stepIndex: 1, verbs: [] },
  ] as const)("$state at step $stepIndex of 3: $verbs", ({ state, stepIndex, verbs }) => {
    expect([...allowedVerbs(state, stepIndex, 3)].sort()).toEqual([...verbs].sort());
  });
});
