/**
 * The MCP configuration file (`{"mcpServers": {...}}`, the format MCP clients
 * share) and the tool naming rules.
 *
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

const StringMap = Schema.Record({ key: Schema.String, value: Schema.String })

/** A server started as a child process speaking MCP over stdio. @internal */
export const StdioServer = Schema.Struct({
  type: Schema.optional(Schema.Literal("stdio")),
  command: Schema.NonEmptyTrimmedString,
  args: Schema.optional(Schema.Array(Schema.String)),
  env: Schema.optional(StringMap),
  cwd: Schema.optional(Schema.String),
  disabled: Schema.optional(Schema.Boolean),
  /** Every tool of this server waits for a person's approval before each call. */
  needsApproval: Schema.optional(Schema.Boolean)
})

/** A remote server over Streamable HTTP (default) or the legacy SSE transport. @internal */
export const HttpServer = Schema.Struct({
  type: Schema.optional(Schema.Literal("http", "streamable-http", "streamableHttp", "sse")),
  url: Schema.String.pipe(
    Schema.filter((s) => URL.canParse(s) && /^https?:/.test(s) || `Expected an http(s) URL, got ${JSON.stringify(s)}`)
  ),
  headers: Schema.optional(StringMap),
  disabled: Schema.optional(Schema.Boolean),
  /** Every tool of this server waits for a person's approval before each call. */
  needsApproval: Schema.optional(Schema.Boolean)
})

/** @internal */
export const ServerConfig = Schema.Union(StdioServer, HttpServer)
/** @internal */
export type ServerConfig = typeof ServerConfig.Type

/** @internal */
export const McpConfig = Schema.Struct({
  mcpServers: Schema.Record({ key: Schema.String, value: ServerConfig })
})
/** @internal */
export type McpConfig = typeof McpConfig.Type

/** @internal */
export const isStdio = (config: ServerConfig): config is typeof StdioServer.Type => "command" in config

const decodeConfig = Schema.decodeUnknown(McpConfig, { errors: "all", onExcessProperty: "ignore" })

/** Parses a configuration from JSON text; the failure is a readable message. @internal */
export const parseConfig = (text: string): Effect.Effect<McpConfig, string> =>
  Effect.try({ try: () => JSON.parse(text) as unknown, catch: (e) => `invalid JSON: ${(e as Error).message}` }).pipe(
    Effect.flatMap((json) =>
      decodeConfig(json).pipe(
        Effect.mapError((e) =>
          `expected {"mcpServers": {name: {command, args?, env?} | {url, headers?}}}: ` +
          ParseResult.TreeFormatter.formatErrorSync(e)
        )
      )
    )
  )

/** Reads and parses a configuration file; the failure is a readable message. @internal */
export const loadConfigFile = (path: string): Effect.Effect<McpConfig, string, FileSystem.FileSystem> =>
  FileSystem.FileSystem.pipe(
    Effect.flatMap((fs) => fs.readFileString(path)),
    Effect.mapError((e) => `cannot read: ${e.message}`),
    Effect.flatMap(parseConfig)
  )

/** Longest tool name providers accept. @internal */
export const MAX_NAME = 64

const sanitize = (s: string): string => s.replace(/[^a-zA-Z0-9_-]/g, "_")

const hash = (s: string): string => {
  // FNV-1a, 32 bits, base 36: short and stable.
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return (h >>> 0).toString(36)
}

/**
 * `server__tool`, sanitized to `[a-zA-Z0-9_-]`; names over 64 characters are cut
 * and suffixed with a short hash of the full name so they stay distinct.
 *
 * @internal
 */
export const toolName = (server: string, tool: string): string => {
  const full = `${sanitize(server)}__${sanitize(tool)}`
  if (full.length <= MAX_NAME) return full
  const suffix = `_${hash(`${server}\u0000${tool}`)}`
  return full.slice(0, MAX_NAME - suffix.length) + suffix
}
