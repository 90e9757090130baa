import { describe, expect, it } from "vitest";
import { normalizeClientAddress } from "./address";

describe("normalizeClientAddress", () => {
  it.each([
    ["198.51.100.7", "198.51.100.7"],
    [" 198.51.100.7 ", "198.51.100.7"],
    ["198.51.100.7:52811", "198.51.100.7"],
    ["::ffff:198.51.100.7", "198.51.100.7"],
    ["::FFFF:c633:6407", "198.51.100.7"],
    ["[::ffff:198.51.100.7]:443", "198.51.100.7"],
    ["2001:db8:0:1:aaaa:bbbb:cccc:dddd", "2001:db8:0:1::/64"],
    ["2001:DB8:0:1::7", "2001:db8:0:1::/64"],
    ["2001:0db8:0000:0001:0000:0000:0000:0007", "2001:db8:0:1::/64"],
    ["[2001:db8:0:1::7]:8443", "2001:db8:0:1::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
    ["::", "0:0:0:0::/64"],
    ["64:ff9b::198.51.100.7", "64:ff9b:0:0::/64"],
  ])("%j is keyed as %j", (input, expected) => {
    expect(normalizeClientAddress(input)).toBe(expected);
  });

  it.each([
    "",
    "unknown",
    "256.1.1.1",
    "1.2.3",
    "01.2.3.4",
    "1.2.3.4.5",
    "2001:db8::1::2",
    "2001:db8:0:1:2:3:4:5:6",
    "12345::1",
    "[::1",
    "[::1]x",
    "gggg::1",
    "1.2.3.4/24",
    "example.com",
  ])("refuses %j", (input) => {
    expect(normalizeClientAddress(input)).toBeNull();
  });

  it("keys every address of one IPv6 /64 network alike", () => {
    const a = normalizeClientAddress("2001:db8:aa:bb::1");
    const b = normalizeClientAddress("2001:db8:aa:bb:ffff:ffff:ffff:ffff");
    expect(a).toBe(b);
    expect(normalizeClientAddress("2001:db8:aa:bc::1")).not.toBe(a);
  });
});
