/**
 * The RLS v3 `RateLimitResponse` written straight to protobuf bytes, for the fields this service
 * sets (`overall_code`, `statuses`, `response_headers_to_add`, `raw_body`). grpc-js's generic
 * encoder (protobufjs through proto-loader, with enums as names) converts the message object field
 * by field on every call; a rejection's answer (seven headers and a problem body) cost about
 * 50 µs that way against about 3 µs for the no-op's bare OK, which was most of what kept a flood of
 * rejections at half the no-op's throughput. Written here it costs a few microseconds, and a
 * rejection's headers, which the enforcer's pre-built 429s reuse as one frozen record per limit
 * and second, are encoded once and copied.
 *
 * The bytes are what protobufjs writes for the same message, field for field (proto3: a field at
 * its default is left out, as protobufjs leaves out what the object does not set); the unit test
 * decodes both with Envoy's protos and compares. Field numbers are those of
 * `envoy/service/ratelimit/v3/rls.proto` and `envoy/config/core/v3/base.proto` (`HeaderValue`) in
 * `@grpc/grpc-js-xds`.
 */
import type { RlsCode, RlsResponseMessage } from "./rls-response";
import { RLS_UNITS, type RlsUnit } from "./rls-units";

const CODE_NUMBER: Readonly<Record<RlsCode, number>> = { OK: 1, OVER_LIMIT: 2 };
const UNIT_NUMBER = Object.fromEntries(
  RLS_UNITS.map((unit) => [unit.name, unit.number]),
) as Readonly<Record<RlsUnit, number>>;

// Tags: field number << 3 | wire type (0 varint, 2 length-delimited).
const TAG_OVERALL_CODE = 0x08;
const TAG_STATUS = 0x12;
const TAG_RESPONSE_HEADER = 0x1a;
const TAG_RAW_BODY = 0x2a;
const TAG_STATUS_CODE = 0x08;
const TAG_CURRENT_LIMIT = 0x12;
const TAG_LIMIT_REMAINING = 0x18;
const TAG_DURATION = 0x22;
const TAG_REQUESTS_PER_UNIT = 0x08;
const TAG_UNIT = 0x10;
const TAG_NAME = 0x1a;
const TAG_SECONDS = 0x08;
const TAG_NANOS = 0x10;
const TAG_HEADER_KEY = 0x0a;
const TAG_HEADER_VALUE = 0x12;

/** Bytes a varint of `value` (a whole number from 0 to 2^53) takes. */
function varintSize(value: number): number {
  let size = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

/** A length-delimited field's size: tag, length and content. */
function delimitedSize(contentSize: number): number {
  return 1 + varintSize(contentSize) + contentSize;
}

type Status = RlsResponseMessage["statuses"][number];
type Header = RlsResponseMessage["response_headers_to_add"][number];

function currentLimitSize(limit: NonNullable<Status["current_limit"]>): number {
  let size = 0;
  if (limit.requests_per_unit !== 0) size += 1 + varintSize(limit.requests_per_unit);
  size += 1 + varintSize(UNIT_NUMBER[limit.unit]);
  const name = Buffer.byteLength(limit.name);
  if (name !== 0) size += delimitedSize(name);
  return size;
}

function durationSize(duration: NonNullable<Status["duration_until_reset"]>): number {
  let size = 0;
  if (duration.seconds !== 0) size += 1 + varintSize(duration.seconds);
  if (duration.nanos !== 0) size += 1 + varintSize(duration.nanos);
  return size;
}

function statusSize(status: Status): number {
  let size = 1 + varintSize(CODE_NUMBER[status.code]);
  if (status.current_limit !== null) size += delimitedSize(currentLimitSize(status.current_limit));
  if (status.limit_remaining !== 0) size += 1 + varintSize(status.limit_remaining);
  if (status.duration_until_reset !== null) {
    size += delimitedSize(durationSize(status.duration_until_reset));
  }
  return size;
}

function headerSize(header: Header): number {
  let size = 0;
  const key = Buffer.byteLength(header.key);
  const value = Buffer.byteLength(header.value);
  if (key !== 0) size += delimitedSize(key);
  if (value !== 0) size += delimitedSize(value);
  return size;
}

/** Writes into one buffer sized beforehand. */
class Writer {
  position = 0;
  constructor(readonly bytes: Buffer) {}

  varint(value: number): void {
    const bytes = this.bytes;
    let position = this.position;
    while (value >= 128) {
      bytes[position++] = (value % 128) | 128;
      value = Math.floor(value / 128);
    }
    bytes[position++] = value;
    this.position = position;
  }

  tagged(tag: number, value: number): void {
    this.bytes[this.position++] = tag;
    this.varint(value);
  }

  text(tag: number, text: string): void {
    const size = Buffer.byteLength(text);
    if (size === 0) return;
    this.tagged(tag, size);
    this.position += this.bytes.write(text, this.position, "utf8");
  }

  copy(source: Uint8Array): void {
    this.bytes.set(source, this.position);
    this.position += source.length;
  }
}

function writeStatus(writer: Writer, status: Status): void {
  writer.tagged(TAG_STATUS, statusSize(status));
  writer.tagged(TAG_STATUS_CODE, CODE_NUMBER[status.code]);
  const limit = status.current_limit;
  if (limit !== null) {
    writer.tagged(TAG_CURRENT_LIMIT, currentLimitSize(limit));
    if (limit.requests_per_unit !== 0)
      writer.tagged(TAG_REQUESTS_PER_UNIT, limit.requests_per_unit);
    writer.tagged(TAG_UNIT, UNIT_NUMBER[limit.unit]);
    writer.text(TAG_NAME, limit.name);
  }
  if (status.limit_remaining !== 0) writer.tagged(TAG_LIMIT_REMAINING, status.limit_remaining);
  const duration = status.duration_until_reset;
  if (duration !== null) {
    writer.tagged(TAG_DURATION, durationSize(duration));
    if (duration.seconds !== 0) writer.tagged(TAG_SECONDS, duration.seconds);
    if (duration.nanos !== 0) writer.tagged(TAG_NANOS, duration.nanos);
  }
}

/** The `response_headers_to_add` fields of a header list, encoded once per list. */
const encodedHeaders = new WeakMap<readonly Header[], Buffer>();

function encodeHeaders(headers: readonly Header[]): Buffer {
  const cached = encodedHeaders.get(headers);
  if (cached !== undefined) return cached;
  let size = 0;
  for (const header of headers) size += delimitedSize(headerSize(header));
  const writer = new Writer(Buffer.allocUnsafe(size));
  for (const header of headers) {
    writer.tagged(TAG_RESPONSE_HEADER, headerSize(header));
    writer.text(TAG_HEADER_KEY, header.key);
    writer.text(TAG_HEADER_VALUE, header.value);
  }
  // Only a list that cannot change is kept (the pre-built rejections' are frozen).
  if (Object.isFrozen(headers)) encodedHeaders.set(headers, writer.bytes);
  return writer.bytes;
}

/** The protobuf bytes of `message`, as `RateLimitResponse`. */
export function encodeRlsResponse(message: RlsResponseMessage): Buffer {
  const headers = encodeHeaders(message.response_headers_to_add);
  let size = 1 + varintSize(CODE_NUMBER[message.overall_code]);
  for (const status of message.statuses) size += delimitedSize(statusSize(status));
  size += headers.length;
  if (message.raw_body.length !== 0) size += delimitedSize(message.raw_body.length);
  const writer = new Writer(Buffer.allocUnsafe(size));
  writer.tagged(TAG_OVERALL_CODE, CODE_NUMBER[message.overall_code]);
  for (const status of message.statuses) writeStatus(writer, status);
  writer.copy(headers);
  if (message.raw_body.length !== 0) {
    writer.tagged(TAG_RAW_BODY, message.raw_body.length);
    writer.copy(message.raw_body);
  }
  return writer.bytes;
}
