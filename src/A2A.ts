/**
 * Agents of other vendors as tools, over A2A 1.0 (SPEC §27), through the
 * official SDK's client (`@a2a-js/sdk`, JSON-RPC and REST transports, its v0.3
 * compatibility layer on for older peers).
 *
 * `remoteAgent(cardUrl, options)` reads the agent's card and makes it a tool:
 * a call sends the model's `query` as a message (`SendStreamingMessage`, or
 * `SendMessage` when the agent does not stream) and answers with the text of
 * the task's artifacts (or of the agent's reply message). While the remote
 * task works, its status messages are the call's progress (`Tool.progress`:
 * a `ToolProgress` event on the calling tool's card). A task that fails, is
 * canceled or rejected, or needs input the tool cannot give, is a clean tool
 * error the model reads; so is an agent that cannot be reached.
 *
 * Durable runs. The call is a step of the calling run like any tool call: its
 * outcome is stored, a replay does not call the remote agent again. The call's
 * idempotency key (`Tool.CallContext.idempotencyKey`) goes out as the message's
 * metadata `idempotency_key`: the tool is idempotent, so a call in flight when
 * the caller's process died is sent again with the same key after the restart,
 * and a server that honours the key (this engine's A2A server does) follows
 * the task it already started instead of doing the work twice. When the stream
 * breaks after the task was created (the remote server restarted), the call
 * polls `GetTask` until the task is over or the call's timeout.
 *
 * ```ts
 * const expert = yield* A2A.remoteAgent("https://agents.example.com", {
 *   name: "expert",
 *   headers: { Authorization: `Bearer ${token}` }
 * })
 * // Toolkit.layer([expert, ...])
 * ```
 *
 * @since 0.1.0
 */
import type { AgentCard, Message } from "@a2a-js/sdk"
import { Role } from "@a2a-js/sdk"
import type { Client } from "@a2a-js/sdk/client"
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory
} from "@a2a-js/sdk/client"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import { messageOf, send } from "./internal/a2a/task.js"
import * as Tool from "./Tool.js"
import * as Toolkit from "./Toolkit.js"

/**
 * The remote agent could not be reached, or its card is not an A2A card.
 *
 * @since 0.1.0
 * @category errors
 */
export class A2AError
  extends Schema.TaggedError<A2AError>()("A2AError", { url: Schema.String, message: Schema.String })
{}

/**
 * @since 0.1.0
 * @category models
 */
export interface RemoteOptions {
  /** The tool's name (default: the card's name, cut to `[a-zA-Z0-9_-]{1,64}`). */
  readonly name?: string
  /** What the model reads (default: the card's description and skills). */
  readonly description?: string
  /** Headers sent with every request to this agent (its credentials: `Authorization`, an API key). */
  readonly headers?: Readonly<Record<string, string>>
  /** Bounds a call (default 10 minutes). */
  readonly timeout?: Duration.DurationInput
  /** The `fetch` to use (default the global one). */
  readonly fetch?: typeof fetch
}

/**
 * The metadata key of the idempotency key a message carries.
 *
 * @since 0.1.0
 * @category constants
 */
export const IDEMPOTENCY_KEY = "idempotency_key"

/**
 * A connected remote agent: its card and the SDK's client.
 *
 * @since 0.1.0
 * @category models
 */
export interface Remote {
  readonly url: string
  readonly card: AgentCard
  readonly client: Client
}

const withHeaders = (base: typeof fetch, headers: Readonly<Record<string, string>>): typeof fetch => (input, init) => {
  const merged = new Headers(init?.headers)
  for (const [k, v] of Object.entries(headers)) if (!merged.has(k)) merged.set(k, v)
  return base(input, { ...init, headers: merged })
}

/**
 * Reads the agent's card (`cardUrl`: the agent's base URL, whose card is at
 * `/.well-known/agent-card.json`, or the card's own URL ending in `.json`) and
 * makes the SDK's client for it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const connect = (cardUrl: string, options: RemoteOptions = {}): Effect.Effect<Remote, A2AError> =>
  Effect.tryPromise({
    try: async () => {
      const fetchImpl = withHeaders(options.fetch ?? globalThis.fetch, options.headers ?? {})
      const legacyCompat = { enabled: true }
      const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [
          new JsonRpcTransportFactory({ fetchImpl, legacyCompat }),
          new RestTransportFactory({ fetchImpl, legacyCompat })
        ],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat })
      }))
      const own = new URL(cardUrl).pathname.endsWith(".json")
      const client = own ? await factory.createFromUrl(cardUrl, "") : await factory.createFromUrl(cardUrl)
      return { url: cardUrl, card: await client.getAgentCard(), client }
    },
    catch: (error) =>
      new A2AError({ url: cardUrl, message: `cannot reach the A2A agent at ${cardUrl}: ${messageOf(error)}` })
  })

/** A tool name from the card's name. */
const toolName = (name: string): string => {
  const cut = name.replace(/[^a-zA-Z0-9_-]+/g, "_").replace(/^_+|_+$/g, "").slice(0, 64)
  return cut === "" ? "remote_agent" : cut
}

const describe = (card: AgentCard): string => {
  const skills = card.skills.map((s) => `${s.name}: ${s.description}`).join("; ")
  return `${card.description}${
    skills !== "" ? ` (skills: ${skills})` : ""
  } — a remote agent (A2A); give it a complete task.`
}

/**
 * The remote agent as a tool (see the module comment).
 *
 * @since 0.1.0
 * @category constructors
 */
export const tool = (remote: Remote, options: RemoteOptions = {}): Tool.Tool => {
  const name = options.name ?? toolName(remote.card.name)
  const { client } = remote
  return Tool.make({
    name,
    description: options.description ?? describe(remote.card),
    parameters: Schema.Struct({
      query: Schema.String.pipe(Schema.annotations({ description: `The task or question for ${remote.card.name}` }))
    }),
    timeout: options.timeout ?? "10 minutes",
    idempotent: true,
    handler: ({ query }) =>
      Effect.gen(function*() {
        const call = Option.getOrUndefined(yield* FiberRef.get(Tool.currentCall))
        const key = call?.idempotencyKey
        const message: Message = {
          messageId: randomUUID(),
          contextId: "",
          taskId: "",
          role: Role.ROLE_USER,
          parts: [{
            content: { $case: "text", value: query },
            metadata: undefined,
            filename: "",
            mediaType: "text/plain"
          }],
          metadata: key !== undefined ? { [IDEMPOTENCY_KEY]: key } : undefined,
          extensions: [],
          referenceTaskIds: []
        }
        return { content: yield* send(client, name, message), contentType: "markdown" as const }
      })
  })
}

/**
 * Reads the card at `cardUrl` and makes the remote agent a tool (`connect`,
 * then `tool`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const remoteAgent = (cardUrl: string, options: RemoteOptions = {}): Effect.Effect<Tool.Tool, A2AError> =>
  Effect.map(connect(cardUrl, options), (remote) => tool(remote, options))

/**
 * The variable listing the remote agents of the server.
 *
 * @since 0.1.0
 * @category constants
 */
export const ENV = "REACT_A2A_AGENTS"

/**
 * One remote agent of `REACT_A2A_AGENTS`.
 *
 * @since 0.1.0
 * @category models
 */
export const RemoteEntry = Schema.Struct({
  url: Schema.String,
  name: Schema.optional(Schema.String.pipe(Schema.pattern(/^[a-zA-Z0-9_-]{1,64}$/))),
  description: Schema.optional(Schema.String),
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  timeout_ms: Schema.optional(Schema.Int.pipe(Schema.positive()))
})
/**
 * @since 0.1.0
 * @category models
 */
export type RemoteEntry = typeof RemoteEntry.Type

/**
 * The entries of `REACT_A2A_AGENTS`: card URLs separated by commas, or a JSON
 * array of `{url, name?, description?, headers?, timeout_ms?}` (the headers
 * are sent to that agent only: its credentials).
 *
 * @since 0.1.0
 * @category decoding
 */
export const parseAgents = (value: string): Either.Either<ReadonlyArray<RemoteEntry>, ConfigError.ConfigError> => {
  const text = value.trim()
  if (text === "") return Either.right([])
  if (!text.startsWith("[")) {
    const urls = text.split(",").map((u) => u.trim()).filter((u) => u !== "")
    const bad = urls.find((u) => !URL.canParse(u))
    return bad === undefined
      ? Either.right(urls.map((url) => ({ url })))
      : Either.left(ConfigError.InvalidData([ENV], `${ENV}: not a URL: ${bad}`))
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    return Either.left(ConfigError.InvalidData([ENV], `${ENV}: not JSON: ${messageOf(e)}`))
  }
  return Schema.decodeUnknownEither(Schema.Array(RemoteEntry), { onExcessProperty: "error" })(json).pipe(
    Either.mapLeft((e) => ConfigError.InvalidData([ENV], `${ENV}: ${e.message}`)),
    Either.flatMap((entries) => {
      const bad = entries.find((e) => !URL.canParse(e.url))
      return bad === undefined
        ? Either.right(entries)
        : Either.left(ConfigError.InvalidData([ENV], `${ENV}: not a URL: ${bad.url}`))
    })
  )
}

/**
 * The `Toolkit` in context plus the remote agents of `REACT_A2A_AGENTS`, each
 * connected at start-up (its card read). An agent that cannot be reached then
 * is left out, with an error in the log naming it; a malformed variable fails.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Toolkit.Toolkit, ConfigError.ConfigError, Toolkit.Toolkit> = Layer.effect(
  Toolkit.Toolkit,
  Effect.gen(function*() {
    const tools = yield* Toolkit.Toolkit
    const value = yield* Config.string(ENV).pipe(Config.withDefault(""))
    const entries = yield* Either.match(parseAgents(value), { onLeft: Effect.fail, onRight: Effect.succeed })
    if (entries.length === 0) return tools
    const remotes = yield* Effect.forEach(entries, (entry) => {
      const options: RemoteOptions = {
        ...(entry.name !== undefined ? { name: entry.name } : {}),
        ...(entry.description !== undefined ? { description: entry.description } : {}),
        ...(entry.headers !== undefined ? { headers: entry.headers } : {}),
        ...(entry.timeout_ms !== undefined ? { timeout: Duration.millis(entry.timeout_ms) } : {})
      }
      return remoteAgent(entry.url, options).pipe(
        Effect.map(Option.some),
        Effect.catchAll((error) =>
          Effect.as(Effect.logError(`${ENV}: ${error.message}; the agent is left out`), Option.none())
        )
      )
    }, { concurrency: "unbounded" })
    const found = remotes.flatMap(Option.toArray)
    if (found.length > 0) yield* Effect.logInfo(`A2A agents: ${found.map((t) => t.name).join(", ")}`)
    return tools.add(...found)
  })
)
