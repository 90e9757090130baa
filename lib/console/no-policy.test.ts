import { describe, expect, it } from "vitest";
import { describeNoPolicy } from "./no-policy";

const running = (id: string, version: number | null) => ({ id, version });

describe("describeNoPolicy", () => {
  it.each([
    ["every gateway runs a policy: nothing to say", { version: 3 }, [running("a", 3)], null],
    ["no gateway reports: the fleet says so itself", null, [], null],
    [
      "one of two runs none while a version is published",
      { version: 3 },
      [running("a", 3), running("b", null)],
      "1 of 2 gateways run no policy: they admit every request",
    ],
    [
      "nothing published and the only gateway runs none",
      null,
      [running("a", null)],
      "The only gateway runs no policy: every request is admitted",
    ],
    [
      "nothing published and every gateway runs none",
      null,
      [running("a", null), running("b", null)],
      "All 2 gateways run no policy: every request is admitted",
    ],
  ] as const)("%s", (_label, published, enforcers, title) => {
    expect(describeNoPolicy({ published, enforcers })?.title ?? null).toBe(title);
  });

  it("names the gateways and says where to look when nothing is published", () => {
    const notice = describeNoPolicy({ published: null, enforcers: [running("gw-1", null)] });
    expect(notice?.enforcerIds).toEqual(["gw-1"]);
    expect(notice?.detail).toContain("REDIS_URL and key prefix");
  });

  it("says when the gateways refuse instead, and how many requests went by", () => {
    const notice = describeNoPolicy({
      published: null,
      enforcers: [{ id: "gw-1", version: null, noPolicy: { action: "reject", decisions: 7 } }],
    });
    expect(notice?.title).toBe("The only gateway runs no policy: every request is refused");
    expect(notice?.detail).toContain("7 requests were refused so far.");
  });
});
