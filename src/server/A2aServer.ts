/**
 * The agent as an A2A server (protocol 1.0, SPEC §27), through the official
 * SDK (`@a2a-js/sdk`): its `DefaultRequestHandler` wrapped in its JSON-RPC
 * transport handler, mounted on this server's router — no second HTTP server,
 * no Express — with the v0.3 compatibility layer on.
 *
 * - `GET /.well-known/agent-card.json`: the agent card (name, description,
 *   version, the JSON-RPC interface at `/a2a` for protocol 1.0 and 0.3,
 *   `capabilities.streaming`, a skill, and the bearer scheme when `API_TOKEN`
 *   is set). A request whose `A2A-Version` is absent or `0.3` gets the v0.3
 *   card. The card is public (discovery); its URLs are `A2A_PUBLIC_URL` or the
 *   request's own host.
 * - `POST /a2a`: JSON-RPC — `SendMessage` (a task whose answer is the artifact
 *   `answer`), `SendStreamingMessage` (SSE of the task, its status and artifact
 *   updates), `GetTask`, `CancelTask`, `ListTasks`; v0.3 names (`message/send`,
 *   `message/stream`, `tasks/get`, `tasks/cancel`) when `A2A-Version` is absent
 *   or `0.3`. The same rules as every route: the bearer token (`API_TOKEN`: 401
 *   before anything is read or run), the Host and Origin checks, the body limit.
 * - A task is a durable run, its `contextId` the conversation (see
 *   `internal/a2aExecutor.ts`): it survives a `kill -9` of the server.
 *
 * @since 0.1.0
 */
import type { AgentCard } from "@a2a-js/sdk"
import { A2A_PROTOCOL_VERSION, formatSSEErrorEvent, formatSSEEvent } from "@a2a-js/sdk"
import { duplicateInterfacesForLegacy } from "@a2a-js/sdk/compat/v0_3"
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server"
import {
  DefaultRequestHandler,
  defaultServerCallContextBuilder,
  JsonRpcTransportHandler,
  validateVersion
} from "@a2a-js/sdk/server"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as A2aTasks from "./A2aTasks.js"
import * as ApiError from "./ApiError.js"
import { AppInfo } from "./AppInfo.js"
import * as Executor from "./internal/a2aExecutor.js"
import * as RunLog from "./RunLog.js"
import * as RunRegistry from "./RunRegistry.js"
import * as ServerConfig from "./ServerConfig.js"

/**
 * The JSON-RPC endpoint's path.
 *
 * @since 0.1.0
 * @category constants
 */
export const RPC_PATH = "/a2a"

/**
 * The agent card's path.
 *
 * @since 0.1.0
 * @category constants
 */
export const CARD_PATH = "/.well-known/agent-card.json"

/**
 * What the card says of the agent: `A2A_AGENT_NAME` (default `react-engine`),
 * `A2A_AGENT_DESCRIPTION`, `A2A_PUBLIC_URL` (the base URL clients reach the
 * server at; default: the request's own `http://<Host>`).
 *
 * @since 0.1.0
 * @category config
 */
export const config = Config.all({
  name: Config.string("A2A_AGENT_NAME").pipe(Config.withDefault("react-engine")),
  description: Config.string("A2A_AGENT_DESCRIPTION").pipe(
    Config.withDefault("A ReAct agent: it reasons, calls its tools and answers with sources")
  ),
  publicUrl: Config.option(Config.url("A2A_PUBLIC_URL"))
})

const VERSION = "0.1.0"

/**
 * The agent card with the JSON-RPC interface at `base` (protocol 1.0 and its
 * v0.3 mirror).
 *
 * @since 0.1.0
 * @category constructors
 */
export const card = (options: {
  readonly base: string
  readonly name: string
  readonly description: string
  readonly model: string
  readonly tools: ReadonlyArray<string>
  readonly bearer: boolean
}): AgentCard => ({
  name: options.name,
  description: options.description,
  supportedInterfaces: duplicateInterfacesForLegacy(
    [{
      url: `${options.base}${RPC_PATH}`,
      protocolBinding: "JSONRPC",
      tenant: "",
      protocolVersion: A2A_PROTOCOL_VERSION
    }],
    ["JSONRPC"]
  ),
  provider: undefined,
  version: VERSION,
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: options.bearer
    ? {
      bearer: {
        scheme: {
          $case: "httpAuthSecurityScheme",
          value: { description: "The server's API_TOKEN", scheme: "Bearer", bearerFormat: "" }
        }
      }
    }
    : {},
  securityRequirements: options.bearer ? [{ schemes: { bearer: { list: [] } } }] : [],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain", "text/markdown"],
  skills: [{
    id: "react",
    name: "Answer with tools",
    description: `Answers a question or does a task step by step with its tools (model ${options.model})`,
    tags: ["react", ...options.tools.slice(0, 20)],
    examples: [],
    inputModes: ["text/plain"],
    outputModes: ["text/markdown"],
    securityRequirements: []
  }],
  signatures: []
})

/**
 * The v0.3 shape of our card, as the SDK's own card router translates it (its
 * translator is not exported outside its Express router): the first v0.3
 * interface as `url`, the v1.0 interfaces embedded, bearer as an `http` scheme.
 *
 * @since 0.1.0
 * @category constructors
 */
export const legacyCard = (core: AgentCard): Record<string, unknown> => {
  const legacy = core.supportedInterfaces.filter((i) => i.protocolVersion === "0.3")
  const primary = legacy[0]
  const schemes = Object.entries(core.securitySchemes).flatMap(([key, s]) =>
    s.scheme?.$case === "httpAuthSecurityScheme"
      ? [[key, { type: "http", scheme: s.scheme.value.scheme, description: s.scheme.value.description }] as const]
      : []
  )
  return {
    name: core.name,
    description: core.description,
    version: core.version,
    url: primary?.url,
    preferredTransport: primary?.protocolBinding,
    protocolVersion: primary?.protocolVersion,
    capabilities: { streaming: core.capabilities?.streaming, pushNotifications: core.capabilities?.pushNotifications },
    defaultInputModes: core.defaultInputModes,
    defaultOutputModes: core.defaultOutputModes,
    skills: core.skills.map(({ securityRequirements: _, ...skill }) => skill),
    ...(legacy.length > 1
      ? { additionalInterfaces: legacy.slice(1).map((i) => ({ url: i.url, transport: i.protocolBinding })) }
      : {}),
    ...(schemes.length > 0 ? { securitySchemes: Object.fromEntries(schemes) } : {}),
    ...(core.securityRequirements.length > 0
      ? {
        security: core.securityRequirements.map((r) =>
          Object.fromEntries(Object.entries(r.schemes).map(([k, v]) => [k, [...v.list]]))
        )
      }
      : {}),
    supportedInterfaces: core.supportedInterfaces
  }
}

const sse = (chunks: Stream.Stream<string>) =>
  HttpServerResponse.stream(Stream.encodeText(chunks), {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
  })

const isLegacy = (version: string | undefined): boolean => (version ?? "0.3").trim() === "0.3"

/**
 * The A2A routes as one router layer (mounted by `Server.Routes`), with the
 * follower of the tasks a killed process left open.
 *
 * @since 0.1.0
 * @category layers
 */
export const A2aRoutes = HttpLayerRouter.use((router) =>
  Effect.gen(function*() {
    const settings = yield* ServerConfig.ServerConfig
    const info = yield* AppInfo
    const own = yield* config
    const registry = yield* RunRegistry.RunRegistry
    const tasks = yield* A2aTasks.A2aTasks
    const log = yield* RunLog.RunLog
    const runtime = yield* Effect.runtime<never>()
    const deps: Executor.Deps = { registry, tasks, log, run: (effect) => Runtime.runPromise(runtime)(effect) }
    const guard = ApiError.authorize(settings.apiToken)
    const cardFor = (base: string) =>
      card({
        base,
        name: own.name,
        description: own.description,
        model: info.model,
        tools: [],
        bearer: Option.isSome(settings.apiToken)
      })
    // the handler checks versions and capabilities against this card; clients get it with their base URL
    const template = cardFor("")
    const handler = new DefaultRequestHandler(template, Executor.makeTaskStore(deps), Executor.makeExecutor(deps))
    const rpc = new JsonRpcTransportHandler(handler)
    const legacyRpc = new LegacyJsonRpcTransportHandler(handler)
    const baseOf = (request: HttpServerRequest.HttpServerRequest) =>
      Option.match(own.publicUrl, {
        onSome: (url) => url.toString().replace(/\/$/, ""),
        onNone: () => `http://${request.headers["host"] ?? "localhost"}`
      })

    yield* router.add(
      "GET",
      CARD_PATH,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const served = cardFor(baseOf(request))
        const body = isLegacy(request.headers["a2a-version"]) ? legacyCard(served) : served
        return HttpServerResponse.unsafeJson(body, { headers: { vary: "A2A-Version", "cache-control": "no-cache" } })
      })
    )

    yield* router.add(
      "POST",
      RPC_PATH,
      ApiError.handle(Effect.gen(function*() {
        yield* guard
        const request = yield* HttpServerRequest.HttpServerRequest
        const body = yield* ApiError.decodeBody(
          Schema.Record({ key: Schema.String, value: Schema.Unknown }),
          settings.maxBodyBytes
        )
        const version = request.headers["a2a-version"]
        const legacy = isLegacy(version)
        const id = typeof body.id === "string" || typeof body.id === "number" ? body.id : null
        const context = defaultServerCallContextBuilder({
          extensions: undefined,
          user: { isAuthenticated: true, userName: "api" },
          headers: request.headers,
          ...(version !== undefined ? { requestedVersion: version } : {})
        })
        const mapError = legacy
          ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError
          : JsonRpcTransportHandler.mapToJSONRPCError
        const errorOf = (error: unknown) => ({ jsonrpc: "2.0", id, error: mapError(error) })
        const answer = yield* Effect.promise(async () => {
          try {
            validateVersion(context.requestedVersion, template, "JSONRPC")
            return await (legacy ? legacyRpc : rpc).handle(body, context)
          } catch (error) {
            return errorOf(error)
          }
        })
        if (!(Symbol.asyncIterator in answer)) return HttpServerResponse.unsafeJson(answer)
        const frames = Stream.fromAsyncIterable(answer, (error) => error).pipe(
          Stream.map(formatSSEEvent),
          Stream.catchAll((error) => Stream.make(formatSSEErrorEvent(errorOf(error)))),
          // a server shutting down ends the stream (the task's run goes on; GetTask reads it later)
          Stream.interruptWhenDeferred(registry.shutdown)
        )
        return sse(frames)
      }))
    )
  })
)

/**
 * Follows the tasks a killed process left open (`internal/a2aExecutor.ts`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerResume: Layer.Layer<never, never, RunRegistry.RunRegistry | A2aTasks.A2aTasks | RunLog.RunLog> = Layer
  .scopedDiscard(
    Effect.gen(function*() {
      const registry = yield* RunRegistry.RunRegistry
      const tasks = yield* A2aTasks.A2aTasks
      const log = yield* RunLog.RunLog
      const runtime = yield* Effect.runtime<never>()
      yield* Effect.forkScoped(
        Executor.resumeOpenTasks({ registry, tasks, log, run: (effect) => Runtime.runPromise(runtime)(effect) })
      )
    })
  )
