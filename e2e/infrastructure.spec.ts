import { expect, test } from "./fixtures";
import { E2E_ACCOUNTS, GATEWAY_URLS } from "./run-env";

test("each role signs in through the API and the session is the browser's", async ({
  page,
  signIn,
}) => {
  for (const role of ["viewer", "operator", "admin"] as const) {
    await page.context().clearCookies();
    await signIn(role);
    const me = await page.request.get("/api/v1/auth/me");
    expect(me.status()).toBe(200);
    expect(await me.json()).toMatchObject({ operator: { email: E2E_ACCOUNTS[role].email, role } });
  }
});

test("the demo gateways enforce the seeded policy", async ({ request }) => {
  for (const url of GATEWAY_URLS) {
    const response = await request.get(`${url}/v1/things`, {
      headers: { authorization: "Bearer initech", "x-tier": "free" },
    });
    expect(response.status()).toBe(200);
    expect(response.headers()["ratelimit-policy"]).toContain('"tier:free"');
  }
});
