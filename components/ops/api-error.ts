/** The API's `{ error: { message, fieldErrors } }`, or a message for anything else. */
export function readApiError(
  payload: unknown,
  status: number,
): { message: string; fieldErrors: { path: string; message: string }[] } {
  const fallback = {
    message:
      status === 403
        ? "Your role may not do this."
        : `The server refused the change (HTTP ${status}).`,
    fieldErrors: [],
  };
  if (typeof payload !== "object" || payload === null || !("error" in payload)) return fallback;
  const error = payload.error;
  if (typeof error !== "object" || error === null) return fallback;
  const message =
    "message" in error && typeof error.message === "string" ? error.message : fallback.message;
  const fieldErrors: { path: string; message: string }[] = [];
  if ("fieldErrors" in error && Array.isArray(error.fieldErrors)) {
    for (const item of error.fieldErrors as unknown[]) {
      if (
        typeof item === "object" &&
        item !== null &&
        "path" in item &&
        "message" in item &&
        typeof item.path === "string" &&
        typeof item.message === "string"
      ) {
        fieldErrors.push({ path: item.path, message: item.message });
      }
    }
  }
  return { message, fieldErrors };
}
