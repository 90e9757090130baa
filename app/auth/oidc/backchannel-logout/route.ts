import { handleSsoBackchannelLogout } from "@/lib/server/sso/sso-routes";

export const dynamic = "force-dynamic";

/** The identity provider's back-channel logout (docs/sso.md). */
export const POST = handleSsoBackchannelLogout;
