import { handleSsoCallback } from "@/lib/server/sso/sso-routes";

export const dynamic = "force-dynamic";

/** Where the identity provider sends the browser back (docs/sso.md). */
export const GET = handleSsoCallback;
