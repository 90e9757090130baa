/** The API's error body (`lib/api/endpoint.ts`), read defensively: a proxy may answer instead. */
export interface ApiError {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly fieldErrors: readonly { readonly path: string; readonly message: string }[];
}

export async function readApiError(response: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON: say what we know.
  }
  const error =
    typeof body === "object" && body !== null && "error" in body && typeof body.error === "object"
      ? (body.error as Record<string, unknown>)
      : null;
  const fieldErrors = Array.isArray(error?.fieldErrors)
    ? error.fieldErrors.flatMap((item: unknown) =>
        typeof item === "object" &&
        item !== null &&
        "path" in item &&
        "message" in item &&
        typeof item.path === "string" &&
        typeof item.message === "string"
          ? [{ path: item.path, message: item.message }]
          : [],
      )
    : [];
  return {
    status: response.status,
    code: typeof error?.code === "string" ? error.code : `HTTP_${response.status}`,
    message:
      typeof error?.message === "string"
        ? error.message
        : `The server answered ${response.status} without an explanation. Try again.`,
    fieldErrors,
  };
}
