import { describe, expect, it } from "vitest";
import { signWebhookBody, verifyWebhookSignature } from "./webhook-signature";

describe("webhook signatures", () => {
  const secret = "whsec_test";
  const body = '{"deliveryId":"1"}';

  it("a signature verifies with its secret and body, and returns the signed time", () => {
    expect(verifyWebhookSignature(secret, signWebhookBody(secret, 1_765_000_000, body), body)).toBe(
      1_765_000_000,
    );
  });

  it.each([
    ["another secret", "whsec_other", body, signWebhookBody(secret, 1, body)],
    ["a changed body", secret, `${body} `, signWebhookBody(secret, 1, body)],
    ["a changed time", secret, body, signWebhookBody(secret, 1, body).replace("t=1,", "t=2,")],
    ["no header", secret, body, undefined],
    ["a malformed header", secret, body, "v1=abc"],
  ])("fails with %s", (_, key, text, header) => {
    expect(verifyWebhookSignature(key, header, text)).toBeNull();
  });
});
