/**
 * Server settings, read from the environment once when the layer is built
 * (`PORT`, `HOST`, `API_TOKEN`, `MAX_BODY_BYTES`, `RUN_DETACH_GRACE_MS`, `SHUTDOWN_GRACE_MS`,
 * `DATABASE_PATH`, `REACT_DEFAULT_MODE`, `CORS_ORIGINS`, `ALLOWED_HOSTS`, `REACT_MAX_ACTIVE_RUNS`, …;
 * docs/configuration.md lists them all).
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { Mode } from "../DagAgent.js"
import { modeConfig } from "../DagAgent.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface ServerSettings {
  readonly port: number
  readonly host: string
  /** Bearer token required on every `/api` route when set. */
  readonly apiToken: Option.Option<Redacted.Redacted<string>>
  /** Largest accepted request body (bytes); larger bodies get 413. */
  readonly maxBodyBytes: number
  /** How long a run survives without any SSE subscriber (ms); 0 cancels on disconnect. */
  readonly detachGraceMs: number
  /**
   * At shutdown, how long the tool calls in flight may take to finish and store their
   * outcomes (ms); a call still running then is answered as interrupted after the restart.
   */
  readonly shutdownGraceMs: number
  /** SQLite file holding the conversations. */
  readonly databasePath: string
  /** Interval of the `: ping` SSE comments (ms). */
  readonly heartbeatMs: number
  /** Finished runs' events are kept this long (ms) for replay, then deleted. */
  readonly runRetentionMs: number
  /** The mode of a run whose request names none (`REACT_DEFAULT_MODE`). */
  readonly defaultMode: Mode
  /** Browser origins (`scheme://host[:port]`) allowed besides the server's own; `*` allows any. */
  readonly corsOrigins: ReadonlyArray<string>
  /** `Host` names accepted besides loopback names and the bound address; `*` accepts any. */
  readonly allowedHosts: ReadonlyArray<string>
  /** Time allowed to receive a whole request, headers and body (ms); slower clients get 408. */
  readonly requestTimeoutMs: number
  /** Time allowed to receive the request headers (ms; at most `requestTimeoutMs`). */
  readonly headersTimeoutMs: number
  /** Most simultaneous connections; further ones are closed at once. */
  readonly maxConnections: number
  /** An SSE client with more unread bytes than this is disconnected (its run goes on). */
  readonly sseMaxBacklogBytes: number
  /** Most USD all the runs of one conversation may spend together (`REACT_CONVERSATION_BUDGET_USD`; needs prices). */
  readonly conversationBudgetUsd: Option.Option<number>
  /** Most runs executing at once in this process (`REACT_MAX_ACTIVE_RUNS`); further ones wait their turn. */
  readonly maxActiveRuns: number
  /** Most runs waiting for their turn (`REACT_RUN_QUEUE`); a start beyond gets 503 with `Retry-After`. */
  readonly runQueue: number
  /** Largest attachment, in bytes (`REACT_MAX_ATTACHMENT_BYTES`, 10 MiB); larger ones get 413. */
  readonly maxAttachmentBytes: number
  /** Most attachments of one request (`REACT_MAX_ATTACHMENTS`, 10); more get 400. */
  readonly maxAttachments: number
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const defaults: ServerSettings = {
  port: 3000,
  host: "127.0.0.1",
  apiToken: Option.none(),
  maxBodyBytes: 1024 * 1024,
  detachGraceMs: 10_000,
  shutdownGraceMs: 5_000,
  databasePath: "./data/react-engine.sqlite",
  heartbeatMs: 15_000,
  runRetentionMs: 24 * 60 * 60 * 1000,
  defaultMode: "react",
  corsOrigins: [],
  allowedHosts: [],
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  maxConnections: 2000,
  sseMaxBacklogBytes: 8 * 1024 * 1024,
  conversationBudgetUsd: Option.none(),
  maxActiveRuns: 128,
  runQueue: 1000,
  maxAttachmentBytes: 10 * 1024 * 1024,
  maxAttachments: 10
}

const atLeast = (name: string, min: number, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: `${name} must be an integer >= ${min}`, validation: (n) => n >= min }),
    Config.withDefault(fallback)
  )

const nonNegative = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: `${name} must be an integer >= 0`, validation: (n) => n >= 0 }),
    Config.withDefault(fallback)
  )

// A comma-separated list; empty entries are dropped.
const list = <A>(name: string, parse: (entry: string) => A | undefined, expected: string) =>
  Config.string(name).pipe(
    Config.mapOrFail((raw) => {
      const out: Array<A> = []
      for (const entry of raw.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
        const parsed = parse(entry)
        if (parsed === undefined) return Either.left(ConfigError.InvalidData([], `${expected}, got "${entry}"`))
        out.push(parsed)
      }
      return Either.right(out as ReadonlyArray<A>)
    }),
    Config.withDefault([] as ReadonlyArray<A>)
  )

const origin = (entry: string): string | undefined => {
  if (entry === "*") return entry
  try {
    const url = new URL(entry)
    const bare = url.pathname === "/" && url.search === "" && url.hash === "" && url.username === ""
    return (url.protocol === "http:" || url.protocol === "https:") && bare ? url.origin : undefined
  } catch {
    return undefined
  }
}

const hostName = (entry: string): string | undefined =>
  entry === "*" || /^\.?[a-z0-9-]+(\.[a-z0-9-]+)*$|^\[[0-9a-f:.]+\]$/i.test(entry) ? entry.toLowerCase() : undefined

/**
 * The settings as a `Config` (env names in SCREAMING_CASE).
 *
 * @since 0.1.0
 * @category constructors
 */
export const config: Config.Config<ServerSettings> = Config.all({
  port: Config.integer("PORT").pipe(
    Config.validate({
      message: "PORT must be an integer between 0 and 65535",
      validation: (n) => n >= 0 && n <= 65535
    }),
    Config.withDefault(defaults.port)
  ),
  host: Config.string("HOST").pipe(Config.withDefault(defaults.host)),
  apiToken: Config.option(Config.redacted("API_TOKEN")).pipe(
    Config.map(Option.filter((token) => Redacted.value(token).trim().length > 0))
  ),
  maxBodyBytes: Config.integer("MAX_BODY_BYTES").pipe(
    Config.validate({ message: "MAX_BODY_BYTES must be an integer >= 1", validation: (n) => n >= 1 }),
    Config.withDefault(defaults.maxBodyBytes)
  ),
  detachGraceMs: nonNegative("RUN_DETACH_GRACE_MS", defaults.detachGraceMs),
  shutdownGraceMs: nonNegative("SHUTDOWN_GRACE_MS", defaults.shutdownGraceMs),
  databasePath: Config.string("DATABASE_PATH").pipe(Config.withDefault(defaults.databasePath)),
  heartbeatMs: Config.integer("SSE_HEARTBEAT_MS").pipe(
    Config.validate({ message: "SSE_HEARTBEAT_MS must be an integer >= 100", validation: (n) => n >= 100 }),
    Config.withDefault(defaults.heartbeatMs)
  ),
  runRetentionMs: atLeast("RUN_RETENTION_MS", 1000, defaults.runRetentionMs),
  defaultMode: modeConfig,
  corsOrigins: list(
    "CORS_ORIGINS",
    origin,
    "Expected origins like https://app.example.com (scheme://host[:port]) or *"
  ),
  allowedHosts: list("ALLOWED_HOSTS", hostName, "Expected host names like app.example.com, .example.com or *"),
  requestTimeoutMs: atLeast("REQUEST_TIMEOUT_MS", 100, defaults.requestTimeoutMs),
  headersTimeoutMs: atLeast("HEADERS_TIMEOUT_MS", 100, defaults.headersTimeoutMs),
  maxConnections: atLeast("MAX_CONNECTIONS", 1, defaults.maxConnections),
  sseMaxBacklogBytes: atLeast("SSE_MAX_BACKLOG_BYTES", 1024, defaults.sseMaxBacklogBytes),
  // read with the run budget's REACT_* variables (Budget.loadConfig); checked against the prices by ConversationBudget
  conversationBudgetUsd: Config.option(
    Config.number("REACT_CONVERSATION_BUDGET_USD").pipe(
      Config.validate({
        message: "REACT_CONVERSATION_BUDGET_USD must be a positive number",
        validation: (n) => Number.isFinite(n) && n > 0
      })
    )
  ),
  maxActiveRuns: atLeast("REACT_MAX_ACTIVE_RUNS", 1, defaults.maxActiveRuns),
  runQueue: nonNegative("REACT_RUN_QUEUE", defaults.runQueue),
  maxAttachmentBytes: atLeast("REACT_MAX_ATTACHMENT_BYTES", 1, defaults.maxAttachmentBytes),
  maxAttachments: nonNegative("REACT_MAX_ATTACHMENTS", defaults.maxAttachments)
})

/**
 * @since 0.1.0
 * @category Context
 */
export class ServerConfig extends Context.Tag("effect-react-engine/ServerConfig")<ServerConfig, ServerSettings>() {}

/**
 * From the environment.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<ServerConfig, ConfigError.ConfigError> = Layer.effect(
  ServerConfig,
  config
)

/**
 * Fixed settings (tests, embedding); unspecified fields take the defaults.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (settings: Partial<ServerSettings> = {}): Layer.Layer<ServerConfig> =>
  Layer.succeed(ServerConfig, { ...defaults, ...settings })
