/**
 * Tools from MCP servers (Model Context Protocol), configured with the JSON file
 * MCP clients share:
 *
 * ```json
 * { "mcpServers": {
 *     "filesystem": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
 *     "remote": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer …" } } } }
 * ```
 *
 * Each server is started once when the layer is built and closed when its scope
 * closes. Its tools become `server__tool` (sanitized to `[a-zA-Z0-9_-]`, at most
 * 64 characters). A server that fails to start or list its tools is logged as a
 * warning, skipped and reported in `failed` (with its error); a bad configuration
 * file is logged and gives no tools: MCP never stops the app.
 *
 * A tool annotated `idempotentHint` is idempotent (a durable run runs it again
 * when a crash cut its call). Every call sends the call's idempotency key in
 * the request's `_meta` (`{"_meta": {"idempotencyKey": "ik_…"}}`), the same
 * for every attempt of the call: a server that deduplicates on it makes the
 * call's effect happen once.
 *
 * @since 0.1.0
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Attachments from "./Attachments.js"
import { connect } from "./internal/mcpTools/client.js"
import * as internalConfig from "./internal/mcpTools/config.js"
import type { Tool } from "./Tool.js"

/**
 * The configuration file's shape: `{"mcpServers": {name: {command, args?, env?,
 * cwd?} | {url, headers?, type?}}}` (`type: "sse"` selects the legacy SSE
 * transport; `disabled: true` skips a server).
 *
 * @since 0.1.0
 * @category models
 */
export const McpConfig = internalConfig.McpConfig
/**
 * @since 0.1.0
 * @category models
 */
export type McpConfig = internalConfig.McpConfig
/**
 * @since 0.1.0
 * @category models
 */
export const ServerConfig = internalConfig.ServerConfig
/**
 * @since 0.1.0
 * @category models
 */
export type ServerConfig = internalConfig.ServerConfig

/**
 * Parses configuration text; fails with a readable message.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseConfig: (text: string) => Effect.Effect<McpConfig, string> = internalConfig.parseConfig

/**
 * The tool name for an MCP tool: `server__tool`, sanitized, ≤ 64 characters.
 *
 * @since 0.1.0
 * @category utils
 */
export const toolName: (server: string, tool: string) => string = internalConfig.toolName

/**
 * @since 0.1.0
 * @category models
 */
export interface ServerInfo {
  readonly name: string
  /** Names of the tools it contributed. */
  readonly tools: ReadonlyArray<string>
  /** The child process id, for stdio servers. */
  readonly pid?: number
}

/**
 * A configured server that did not start or could not list its tools.
 *
 * @since 0.1.0
 * @category models
 */
export interface FailedServer {
  readonly name: string
  /** Why, e.g. `cannot start: spawn npx ENOENT` (with the tail of its stderr). */
  readonly error: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface McpToolsService {
  /** Every tool of every server that started. */
  readonly tools: ReadonlyArray<Tool>
  /** The servers that started. */
  readonly servers: ReadonlyArray<ServerInfo>
  /** The servers that were configured (and not disabled) but did not start. */
  readonly failed: ReadonlyArray<FailedServer>
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const empty: McpToolsService = { tools: [], servers: [], failed: [] }

/**
 * Starts the configured servers concurrently and collects their tools. Servers
 * that fail are logged (`Effect.logWarning`), skipped and listed in `failed`;
 * each started server is closed when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromConfig = (config: McpConfig): Effect.Effect<McpToolsService, never, Scope.Scope> =>
  Effect.gen(function*() {
    const parent = yield* Effect.scope
    // an image a tool returns is stored and shown to the model when there is an attachment store
    const store = Option.getOrUndefined(yield* Effect.serviceOption(Attachments.Attachments))
    const taken = new Set<string>()
    const entries = Object.entries(config.mcpServers).filter(([, server]) => server.disabled !== true)
    const results = yield* Effect.forEach(entries, ([name, server]) =>
      Effect.gen(function*() {
        // A scope per server: one that fails is closed at once, not at shutdown.
        const scope = yield* Scope.fork(parent, ExecutionStrategy.sequential)
        const exit = yield* Effect.exit(Scope.extend(connect(name, server, taken, store), scope))
        if (Exit.isSuccess(exit)) {
          yield* Effect.logInfo(`MCP server "${name}": ${exit.value.tools.length} tools`)
          return Either.right(exit.value)
        }
        yield* Scope.close(scope, exit)
        const reason = Option.getOrElse(Cause.failureOption(exit.cause), () => Cause.pretty(exit.cause))
        yield* Effect.logWarning(`MCP server "${name}" skipped: ${reason}`)
        return Either.left<FailedServer>({ name, error: reason })
      }), { concurrency: "unbounded" })
    const servers = results.flatMap((r) => Either.isRight(r) ? [r.right] : [])
    return {
      tools: servers.flatMap((s) => s.tools),
      servers: servers.map((s) => ({
        name: s.name,
        tools: s.tools.map((t) => t.name),
        ...(s.pid !== undefined ? { pid: s.pid } : {})
      })),
      failed: results.flatMap((r) => Either.isLeft(r) ? [r.left] : [])
    }
  })

/**
 * Reads a configuration file, then `fromConfig`. A missing, unreadable or invalid
 * file is logged as a warning and gives no tools.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromConfigFile = (
  path: string
): Effect.Effect<McpToolsService, never, Scope.Scope | FileSystem.FileSystem> =>
  internalConfig.loadConfigFile(path).pipe(
    Effect.matchEffect({
      onFailure: (message) => Effect.as(Effect.logWarning(`MCP config ${path} ignored: ${message}`), empty),
      onSuccess: fromConfig
    })
  )

/**
 * The MCP tools loaded at startup. The app merges `tools` with the built-ins.
 *
 * @since 0.1.0
 * @category Context
 */
export class McpTools extends Context.Tag("effect-react-engine/McpTools")<McpTools, McpToolsService>() {}

/**
 * Servers from a configuration value (`{ config }`) or file (`{ file }`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <const O extends { readonly config: McpConfig } | { readonly file: string }>(
  options: O
): Layer.Layer<McpTools, never, O extends { readonly file: string } ? FileSystem.FileSystem : never> =>
  Layer.scoped(
    McpTools,
    "file" in options ? fromConfigFile(options.file) : fromConfig((options as { readonly config: McpConfig }).config)
  ) as Layer.Layer<McpTools, never, any>

/**
 * No MCP tools.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNoop: Layer.Layer<McpTools> = Layer.succeed(McpTools, empty)

/**
 * What `layerConfig` takes (as a `Config.Wrap`): a configuration value, or the
 * path of a configuration file, winning over `MCP_CONFIG` (a value wins over a
 * file).
 *
 * @since 0.1.0
 * @category models
 */
export interface ConfigOptions {
  readonly config?: McpConfig | undefined
  readonly file?: string | undefined
}

/**
 * The servers of `config` (see `ConfigOptions`; as Effect's packages take it:
 * each option a `Config`, or one `Config` of them all), else of the file
 * `MCP_CONFIG` names (read through the `FileSystem`); unset or empty → no MCP
 * tools, e.g. `layerConfig({ file: Config.string("MY_MCP_FILE") })`. A `Config`
 * that cannot be read is logged as a warning and gives no tools: MCP never stops
 * the app.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<ConfigOptions> = {}
): Layer.Layer<McpTools, never, FileSystem.FileSystem> =>
  Layer.scoped(
    McpTools,
    Effect.gen(function*() {
      const read = Config.all({
        // (`Config.unwrap` of an empty record fails: no option given is the empty record)
        given: Config.isConfig(config) || Object.keys(config).length > 0
          ? Config.unwrap(config)
          : Config.succeed<ConfigOptions>({}),
        env: Config.option(Config.string("MCP_CONFIG"))
      })
      const found = yield* Effect.either(read)
      if (Either.isLeft(found)) {
        yield* Effect.logWarning(`MCP configuration ignored: ${found.left}`)
        return empty
      }
      const { env, given } = found.right
      if (given.config !== undefined) return yield* fromConfig(given.config)
      const path = (given.file ?? Option.getOrElse(env, () => "")).trim()
      return path !== "" ? yield* fromConfigFile(path) : empty
    })
  )
