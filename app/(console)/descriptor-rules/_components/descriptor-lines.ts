/**
 * The explain form's descriptors as text: one descriptor per line, its entries separated by commas,
 * each `key=value` (split at the first `=`), as in `tenant=acme, path=/orders`. Blank lines are
 * skipped. What this cannot say (a value holding a comma) the API takes as JSON. Pure: the page
 * parses the text and the explain service validates the result with the API's own schema.
 */
export interface DescriptorLine {
  readonly key: string;
  readonly value: string;
}

export function parseDescriptorLines(text: string): DescriptorLine[][] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((line) =>
      line
        .split(",")
        .map((pair) => pair.trim())
        .filter((pair) => pair !== "")
        .map((pair) => {
          const at = pair.indexOf("=");
          // A pair without `=` keeps an empty value, which the schema refuses naming the entry.
          return at === -1
            ? { key: pair, value: "" }
            : { key: pair.slice(0, at).trim(), value: pair.slice(at + 1).trim() };
        }),
    );
}

/** The inverse, for links from a rule's page: `[[tenant=acme]]` as `tenant=acme`. */
export function formatDescriptorLines(descriptors: readonly (readonly DescriptorLine[])[]): string {
  return descriptors
    .map((entries) => entries.map((entry) => `${entry.key}=${entry.value}`).join(", "))
    .join("\n");
}
