/**
 * A stand-in OpenTelemetry collector: an HTTP server on 127.0.0.1 that accepts
 * OTLP/HTTP exports (`POST /v1/traces`, `/v1/metrics`, `/v1/logs`), answers 200,
 * and decodes trace exports — protobuf (`application/x-protobuf`, the default
 * protocol) or JSON — into plain spans. Only the fields the tests read are
 * decoded (a tiny protobuf wire-format reader, following
 * opentelemetry/proto/trace/v1/trace.proto).
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"

export type Value = string | number | boolean | ReadonlyArray<Value> | null

export interface CollectedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  /** 1 internal, 2 server, 3 client. */
  readonly kind: number
  readonly start: bigint
  readonly end: bigint
  readonly attributes: Readonly<Record<string, Value>>
  readonly events: ReadonlyArray<{ readonly name: string; readonly attributes: Readonly<Record<string, Value>> }>
  /** 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message: string }
  /** The resource's `service.name`. */
  readonly service: string
}

export interface Export {
  readonly path: string
  readonly contentType: string
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly body: Buffer
}

export interface Collector {
  readonly url: string
  readonly exports: ReadonlyArray<Export>
  readonly spans: () => ReadonlyArray<CollectedSpan>
}

// ---------------------------------------------------------------------------
// protobuf wire format

type Field = { readonly no: number; readonly wire: number; readonly int: bigint; readonly bytes: Buffer }

const fields = (buf: Buffer): Array<Field> => {
  const out: Array<Field> = []
  let at = 0
  const varint = (): bigint => {
    let result = 0n
    let shift = 0n
    for (;;) {
      const b = buf[at++]
      result |= BigInt(b & 0x7f) << shift
      if ((b & 0x80) === 0) return result
      shift += 7n
    }
  }
  while (at < buf.length) {
    const tag = Number(varint())
    const no = tag >>> 3
    const wire = tag & 7
    if (wire === 0) out.push({ no, wire, int: varint(), bytes: Buffer.alloc(0) })
    else if (wire === 1) {
      out.push({ no, wire, int: buf.readBigUInt64LE(at), bytes: buf.subarray(at, at + 8) })
      at += 8
    } else if (wire === 5) {
      out.push({ no, wire, int: BigInt(buf.readUInt32LE(at)), bytes: buf.subarray(at, at + 4) })
      at += 4
    } else if (wire === 2) {
      const len = Number(varint())
      out.push({ no, wire, int: 0n, bytes: buf.subarray(at, at + len) })
      at += len
    } else throw new Error(`unsupported wire type ${wire}`)
  }
  return out
}

const all = (fs: ReadonlyArray<Field>, no: number) => fs.filter((f) => f.no === no)
const first = (fs: ReadonlyArray<Field>, no: number) => fs.find((f) => f.no === no)

const anyValue = (buf: Buffer): Value => {
  const f = fields(buf)[0]
  if (f === undefined) return null
  switch (f.no) {
    case 1:
      return f.bytes.toString("utf8")
    case 2:
      return f.int !== 0n
    case 3:
      return Number(BigInt.asIntN(64, f.int))
    case 4:
      return f.bytes.readDoubleLE(0)
    case 5:
      return all(fields(f.bytes), 1).map((v) => anyValue(v.bytes))
    default:
      return `<field ${f.no}>`
  }
}

const keyValues = (fs: ReadonlyArray<Field>): Record<string, Value> => {
  const out: Record<string, Value> = {}
  for (const kv of fs) {
    const parts = fields(kv.bytes)
    out[first(parts, 1)?.bytes.toString("utf8") ?? ""] = anyValue(first(parts, 2)?.bytes ?? Buffer.alloc(0))
  }
  return out
}

const hex = (
  f: Field | undefined
): string | undefined => (f === undefined || f.bytes.length === 0 ? undefined : f.bytes.toString("hex"))

const protobufSpans = (body: Buffer): Array<CollectedSpan> =>
  all(fields(body), 1).flatMap((rs) => {
    const resourceSpans = fields(rs.bytes)
    const resource = keyValues(all(fields(first(resourceSpans, 1)?.bytes ?? Buffer.alloc(0)), 1))
    return all(resourceSpans, 2).flatMap((ss) =>
      all(fields(ss.bytes), 2).map((sp): CollectedSpan => {
        const s = fields(sp.bytes)
        const status = fields(first(s, 15)?.bytes ?? Buffer.alloc(0))
        return {
          traceId: hex(first(s, 1)) ?? "",
          spanId: hex(first(s, 2)) ?? "",
          parentSpanId: hex(first(s, 4)),
          name: first(s, 5)?.bytes.toString("utf8") ?? "",
          kind: Number(first(s, 6)?.int ?? 0n),
          start: first(s, 7)?.int ?? 0n,
          end: first(s, 8)?.int ?? 0n,
          attributes: keyValues(all(s, 9)),
          events: all(s, 11).map((e) => {
            const ef = fields(e.bytes)
            return { name: first(ef, 2)?.bytes.toString("utf8") ?? "", attributes: keyValues(all(ef, 3)) }
          }),
          status: {
            code: Number(first(status, 3)?.int ?? 0n),
            message: first(status, 2)?.bytes.toString("utf8") ?? ""
          },
          service: String(resource["service.name"] ?? "")
        }
      })
    )
  })

// ---------------------------------------------------------------------------
// OTLP JSON

const jsonValue = (v: any): Value => {
  if (v === undefined || v === null) return null
  if ("stringValue" in v) return v.stringValue
  if ("boolValue" in v) return v.boolValue
  if ("intValue" in v) return Number(v.intValue)
  if ("doubleValue" in v) return v.doubleValue
  if ("arrayValue" in v) return (v.arrayValue.values ?? []).map(jsonValue)
  return null
}

const jsonAttributes = (list: ReadonlyArray<any> | undefined): Record<string, Value> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]))

const jsonSpans = (body: Buffer): Array<CollectedSpan> =>
  (JSON.parse(body.toString("utf8")).resourceSpans ?? []).flatMap((rs: any) =>
    (rs.scopeSpans ?? []).flatMap((ss: any) =>
      (ss.spans ?? []).map((s: any): CollectedSpan => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId || undefined,
        name: s.name,
        kind: s.kind,
        start: BigInt(s.startTimeUnixNano),
        end: BigInt(s.endTimeUnixNano),
        attributes: jsonAttributes(s.attributes),
        events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: jsonAttributes(e.attributes) })),
        status: { code: s.status?.code ?? 0, message: s.status?.message ?? "" },
        service: String(jsonAttributes(rs.resource?.attributes)["service.name"] ?? "")
      }))
    )
  )

// ---------------------------------------------------------------------------
// the server

const read = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c)).once("end", () => resolve(Buffer.concat(chunks))).once(
      "error",
      reject
    )
  })

/** The collector for the scope's lifetime. */
export const scoped: Effect.Effect<Collector, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ readonly server: ReturnType<typeof createServer>; readonly collector: Collector }>((resolve) => {
      const exports: Array<Export> = []
      const server = createServer((req, res) => {
        void read(req).then((body) => {
          exports.push({
            path: req.url ?? "",
            contentType: String(req.headers["content-type"] ?? ""),
            headers: req.headers,
            body
          })
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resolve({
          server,
          collector: {
            url: `http://127.0.0.1:${port}`,
            exports,
            spans: () =>
              exports.filter((e) => e.path === "/v1/traces").flatMap((e) =>
                e.contentType.includes("json") ? jsonSpans(e.body) : protobufSpans(e.body)
              )
          }
        })
      })
    })
  ),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
).pipe(Effect.map(({ collector }) => collector))

/** The span tree: names and the attributes `keep` selects, children in start order. */
export const renderCollected = (spans: ReadonlyArray<CollectedSpan>, keep: (key: string) => boolean): string => {
  const ids = new Set(spans.map((s) => s.spanId))
  const sorted = [...spans].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0))
  const lines: Array<string> = []
  const walk = (s: CollectedSpan, depth: number) => {
    const pad = "  ".repeat(depth)
    const status = ["unset", "ok", "error"][s.status.code] ?? String(s.status.code)
    const attrs = Object.keys(s.attributes).filter(keep).sort().map((k) => `${k}=${JSON.stringify(s.attributes[k])}`)
    lines.push(`${pad}${s.name} [${status}]${attrs.length > 0 ? ` ${attrs.join(" ")}` : ""}`)
    for (const c of sorted) if (c.parentSpanId === s.spanId) walk(c, depth + 1)
  }
  for (const root of sorted) if (root.parentSpanId === undefined || !ids.has(root.parentSpanId)) walk(root, 0)
  return lines.join("\n")
}
