/**
 * The documentation's shape, checked on every run: the README stays short (what, why, two
 * commands, one snippet, links), every page under docs/ is reachable from it, and no relative
 * link in the README or under docs/ points at a file that does not exist (anchors are not
 * checked).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const README = path.join(ROOT, "README.md");
const DOCS = path.join(ROOT, "docs");
const MAX_README_LINES = 200;

/** Markdown files under `directory`, as paths relative to the repository. */
function markdownFiles(directory: string): string[] {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".md"))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)))
    .sort();
}

/** The text with fenced code blocks, inline code and HTML comments removed. */
function withoutCode(markdown: string): string {
  return markdown
    .replace(/^ {0,3}(```|~~~)[^\n]*\n[\s\S]*?^ {0,3}\1[^\n]*$/gm, "")
    .replace(/<!--[\s\S]*?-->/g, "")
    .replace(/(`+)[\s\S]*?\1/g, "");
}

/** Every link target in a Markdown text: inline links, images and reference definitions. */
function linkTargets(markdown: string): string[] {
  const text = withoutCode(markdown);
  const destination = String.raw`(<[^>\n]*>|[^)\s]+)`;
  const inline = text.matchAll(
    new RegExp(String.raw`!?\[[^\]\n]*\]\(\s*${destination}(?:\s+"[^"]*")?\s*\)`, "g"),
  );
  const references = text.matchAll(/^ {0,3}\[[^\]\n]+\]:\s*(<[^>\n]*>|\S+)/gm);
  return [...inline, ...references].map((match) => (match[1] ?? "").replace(/^<(.*)>$/, "$1"));
}

/** A link to a file in this repository (no scheme, not only an anchor), without its anchor. */
function relativeFileOf(target: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//") || target.startsWith("#")) {
    return null;
  }
  return decodeURIComponent(target.replace(/[?#].*$/, ""));
}

/** The repository paths a Markdown file links to. */
function linkedFiles(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), "utf8");
  return linkTargets(text).flatMap((target) => {
    const relative = relativeFileOf(target);
    if (relative === null || relative === "") return [];
    return [path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, file)), relative))];
  });
}

describe("linkTargets", () => {
  it.each([
    { markdown: "See [the API](docs/http-api.md).", targets: ["docs/http-api.md"] },
    { markdown: "[a](x.md#part) and ![b](img.png)", targets: ["x.md#part", "img.png"] },
    { markdown: '[a](<my page.md> "title")', targets: ["my page.md"] },
    { markdown: "[ref]: docs/production.md\n", targets: ["docs/production.md"] },
    { markdown: "`[not](a-link.md)` and\n```\n[nor](this.md)\n```\n", targets: [] },
    { markdown: "<!-- [hidden](gone.md) -->", targets: [] },
  ])("finds $targets in $markdown", ({ markdown, targets }) => {
    expect(linkTargets(markdown)).toEqual(targets);
  });
});

describe("the documentation", () => {
  it(`README.md has at most ${MAX_README_LINES} lines`, () => {
    const lines = readFileSync(README, "utf8").split("\n").length - 1;
    expect(lines).toBeLessThanOrEqual(MAX_README_LINES);
  });

  it("README.md links to every page under docs/", () => {
    const linked = new Set(linkedFiles("README.md"));
    const pages = markdownFiles(DOCS);
    expect(pages.length).toBeGreaterThan(0);
    expect(pages.filter((page) => !linked.has(page))).toEqual([]);
  });

  it("every relative link in README.md and under docs/ resolves to a file", () => {
    const broken = ["README.md", ...markdownFiles(DOCS)].flatMap((file) =>
      linkedFiles(file)
        .filter((target) => !existsSync(path.join(ROOT, target)))
        .map((target) => `${file} -> ${target}`),
    );
    expect(broken).toEqual([]);
  });
});
