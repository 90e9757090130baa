/**
 * Where to go after signing in: a path on this site, never another origin. Anything else
 * (absent, `//evil.example`, `/\evil`, `https://...`, a path with control characters) becomes `/`.
 */
export function safeNextPath(next: string | undefined): string {
  if (next === undefined || next === "") return "/";
  if (!next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return "/";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(next)) return "/";
  if (next.startsWith("/sign-in")) return "/";
  return next;
}
