import { handleSsoStart } from "@/lib/server/sso/sso-routes";

export const dynamic = "force-dynamic";

/** Sends the browser to the identity provider (docs/sso.md). */
export const GET = handleSsoStart;
