import { describe, expect, it } from "vitest";
import { isPublicAddress, webhookTargetProblem, webhookUrlProblem } from "./webhook-target";

describe("isPublicAddress", () => {
  it.each([
    ["93.184.216.34", true],
    ["8.8.8.8", true],
    ["2606:4700::6810:85e5", true],
    ["127.0.0.1", false],
    ["127.255.0.9", false],
    ["10.0.0.1", false],
    ["172.16.5.4", false],
    ["172.32.0.1", true],
    ["192.168.1.1", false],
    ["169.254.169.254", false],
    ["100.64.0.1", false],
    ["0.0.0.0", false],
    ["224.0.0.1", false],
    ["::1", false],
    ["::", false],
    ["fe80::1", false],
    ["fd00::1", false],
    ["::ffff:127.0.0.1", false],
    ["::ffff:8.8.8.8", false],
    ["64:ff9b::a9fe:a9fe", false],
    ["not-an-address", false],
  ])("%s is public: %s", (address, isPublic) => {
    expect(isPublicAddress(address)).toBe(isPublic);
  });
});

describe("webhookTargetProblem", () => {
  const resolveTo = (addresses: string[]) => async () => addresses;

  it("refuses a name that resolves to any address that is not public", async () => {
    expect(
      await webhookTargetProblem(
        "https://hooks.example.com/",
        false,
        resolveTo(["93.184.216.34", "10.0.0.7"]),
      ),
    ).toBe("its host resolves to 10.0.0.7, which is not a public address");
  });

  it("accepts a name whose every address is public, and refuses one that does not resolve", async () => {
    expect(
      await webhookTargetProblem("https://hooks.example.com/", false, resolveTo(["93.184.216.34"])),
    ).toBeNull();
    expect(
      await webhookTargetProblem("https://hooks.example.com/", false, async () => {
        throw new Error("ENOTFOUND hooks.example.com");
      }),
    ).toBe("its host did not resolve (ENOTFOUND hooks.example.com)");
  });

  it("allows private addresses only when told to, without resolving", async () => {
    expect(webhookUrlProblem("http://127.0.0.1:9000/", true)).toBeNull();
    expect(
      await webhookTargetProblem("http://db.internal/", true, async () => {
        throw new Error("must not resolve");
      }),
    ).toBeNull();
  });
});
