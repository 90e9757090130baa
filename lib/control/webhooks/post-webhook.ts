/**
 * One webhook POST, shared by every webhook the worker sends (alerts, change-request notices,
 * audit entries): JSON body, a deadline, no redirects followed (a redirect could point anywhere,
 * past the address check of the audit webhook), and the answer read as delivered or not.
 */

export interface PostWebhookOptions {
  readonly url: string;
  /** The exact bytes sent (a signature covers them). */
  readonly body: string;
  /** `Limitplane-Delivery`: the same on every attempt, for receivers that deduplicate. */
  readonly deliveryId: string;
  readonly userAgent: string;
  /** More headers (a signature). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** @default globalThis.fetch */
  readonly fetch?: typeof fetch;
}

/** Longest error text kept; bodies of failing receivers can be large. */
export const MAX_WEBHOOK_ERROR_LENGTH = 500;

/** POSTs once; null on a 2xx answer, else what went wrong, in words. */
export async function postWebhook(options: PostWebhookOptions): Promise<string | null> {
  try {
    const response = await (options.fetch ?? fetch)(options.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": options.userAgent,
        "limitplane-delivery": options.deliveryId,
        ...options.headers,
      },
      body: options.body,
      signal: AbortSignal.timeout(options.timeoutMs),
      redirect: "manual",
    });
    // Drain the body so the connection can be reused; its content is not needed.
    await response.arrayBuffer().catch(() => undefined);
    if (response.status >= 200 && response.status < 300) return null;
    return `the receiver answered ${response.status}`;
  } catch (error: unknown) {
    if (error instanceof Error && error.name === "TimeoutError") {
      return `no answer within ${options.timeoutMs} ms`;
    }
    return `the request failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}
