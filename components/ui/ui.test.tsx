import { renderToStaticMarkup } from "react-dom/server";
import { afterEach, describe, expect, it, vi } from "vitest";
import { buildPageLinks } from "@/lib/console/page-links";
import { Badge } from "./badge";
import { ConfirmDialog } from "./confirm-dialog";
import { Countdown } from "./countdown";
import { EmptyState } from "./empty-state";
import { ErrorState } from "./error-state";
import { LocalTime } from "./local-time";
import { Pager } from "./pager";
import { Skeleton, SkeletonChart, SkeletonTable } from "./skeleton";

const AT = "2025-03-04T10:05:07.000Z";

afterEach(() => {
  vi.useRealTimers();
});

describe("LocalTime", () => {
  it("renders UTC with the ISO time in dateTime and title on the server, whatever the clock", () => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date("2025-03-04T10:06:00Z"));
    const first = renderToStaticMarkup(<LocalTime at={AT} relative />);
    vi.setSystemTime(new Date("2031-01-01T00:00:00Z"));
    const second = renderToStaticMarkup(<LocalTime at={Date.parse(AT)} relative />);
    // Identical output at different times: the first client render matches, so hydration does.
    expect(first).toBe(second);
    expect(first).toBe(
      '<time dateTime="2025-03-04T10:05:07.000Z" title="2025-03-04T10:05:07.000Z">2025-03-04 10:05:07 UTC</time>',
    );
  });

  it("says an unreadable time is unknown instead of crashing", () => {
    expect(renderToStaticMarkup(<LocalTime at="not a time" />)).toBe(
      '<span class="muted">unknown time</span>',
    );
  });
});

describe("Countdown", () => {
  it("renders the time left from the server's clock, so hydration matches", () => {
    const html = renderToStaticMarkup(
      <Countdown expiresAt={AT} serverNowMs={Date.parse(AT) - (14 * 60 + 32) * 1000} />,
    );
    expect(html).toContain(">14 min 32 s left</time>");
    expect(html).toContain('role="timer"');
    expect(html).toContain('aria-live="off"');
    expect(html).toContain('dateTime="2025-03-04T10:05:07.000Z"');
  });

  it("says expired at zero, and the UTC expiry when the clock is not known", () => {
    expect(
      renderToStaticMarkup(<Countdown expiresAt={AT} serverNowMs={Date.parse(AT)} />),
    ).toContain(">expired</time>");
    expect(renderToStaticMarkup(<Countdown expiresAt={AT} />)).toContain(
      ">until 2025-03-04 10:05:07 UTC</time>",
    );
    expect(renderToStaticMarkup(<Countdown expiresAt="never" />)).toContain("unknown expiry");
  });
});

describe("Pager", () => {
  it("links newer and older pages, showing a missing direction as disabled", () => {
    const links = buildPageLinks({
      pathname: "/audit",
      params: { actor: "ops", after: "X" },
      nextCursor: null,
      previousCursor: "P",
    });
    const html = renderToStaticMarkup(<Pager links={links} />);
    expect(html).toContain('aria-label="Pages"');
    expect(html).toContain('href="/audit?actor=ops&amp;before=P"');
    expect(html).toContain('href="/audit?actor=ops"');
    expect(html).toContain('<span class="pager-link" aria-disabled="true">Older →</span>');
  });

  it("is absent when there is only one page", () => {
    const links = buildPageLinks({
      pathname: "/audit",
      params: {},
      nextCursor: null,
      previousCursor: null,
    });
    expect(renderToStaticMarkup(<Pager links={links} />)).toBe("");
  });
});

describe("states", () => {
  it("an error state offers a retry link from a server component, a button from a client one", () => {
    const server = renderToStaticMarkup(
      <ErrorState message="The audit log could not be read." retryHref="/audit" digest="abc123" />,
    );
    expect(server).toContain('role="alert"');
    expect(server).toContain('<a class="button" href="/audit">Try again</a>');
    expect(server).toContain("Reference: abc123");
    const client = renderToStaticMarkup(<ErrorState message="x" onRetry={() => undefined} />);
    expect(client).toContain('<button type="button" class="button">Try again</button>');
    expect(renderToStaticMarkup(<ErrorState message="x" />)).not.toContain("Try again");
  });

  it("empty states, skeletons and badges say what they are in text", () => {
    const empty = renderToStaticMarkup(
      <EmptyState title="No entries">Clear the filters.</EmptyState>,
    );
    expect(empty).toContain("No entries");
    expect(renderToStaticMarkup(<Skeleton lines={2} label="Loading audit log" />)).toContain(
      "Loading audit log…",
    );
    expect(
      renderToStaticMarkup(<SkeletonTable rows={2} columns={3} />).match(/<td>/g),
    ).toHaveLength(6);
    expect(renderToStaticMarkup(<SkeletonChart height={120} />)).toContain("height:120px");
    expect(
      renderToStaticMarkup(
        <Badge tone="bad" dot>
          rejecting
        </Badge>,
      ),
    ).toBe(
      '<span class="badge badge-bad"><span class="dot" aria-hidden="true"></span>rejecting</span>',
    );
  });

  it("text someone typed is shown as text", () => {
    const html = renderToStaticMarkup(
      <EmptyState title={'<img src=x onerror="alert(1)">'}>
        {"<script>alert(1)</script>"}
      </EmptyState>,
    );
    expect(html).not.toContain("<script>");
    expect(html).not.toContain("<img");
    expect(html).toContain("&lt;script&gt;");
  });
});

describe("ConfirmDialog", () => {
  it("renders closed: a trigger, and a labelled dialog with cancel focused first", () => {
    const html = renderToStaticMarkup(
      <ConfirmDialog
        triggerLabel="Raise limit"
        title="Raise acme's limit for 15 min?"
        confirmLabel="Raise limit"
        tone="danger"
        onConfirm={() => undefined}
      >
        token bucket: capacity 20 → 60
      </ConfirmDialog>,
    );
    expect(html).toMatch(
      /^<button type="button" class="button button-danger">Raise limit<\/button>/,
    );
    expect(html).toMatch(
      /<dialog class="confirm-dialog" aria-labelledby="[^"]+" aria-describedby="[^"]+">/,
    );
    expect(html).not.toContain("<dialog open");
    expect(html).toContain("Raise acme&#x27;s limit for 15 min?");
    expect(html.indexOf("Cancel")).toBeLessThan(html.lastIndexOf("Raise limit"));
  });
});
