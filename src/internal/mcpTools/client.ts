/**
 * Starting one MCP server (stdio child process or remote HTTP), listing its tools
 * and wrapping each one as a `Tool`. A call sends its idempotency key
 * (`Tool.CallContext.idempotencyKey`) in the request's `_meta`
 * (`idempotencyKey`) and a progress token: the server's progress
 * notifications become the call's `Tool.progress`.
 *
 * @internal
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { Progress } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AttachmentsService } from "../../Attachments.js"
import type { JsonSchemaObject } from "../../Llm.js"
import type { FilePart } from "../../Message.js"
import * as Message from "../../Message.js"
import type { Tool as ToolT, ToolOutput } from "../../Tool.js"
import * as Tool from "../../Tool.js"
import { currentCall, fromJsonSchema, ToolError } from "../../Tool.js"
import type { ServerConfig } from "./config.js"
import { isStdio, toolName } from "./config.js"

/** How long starting a server and listing its tools may take. @internal */
export const STARTUP_TIMEOUT_MS = 60_000

/** A connected server. @internal */
export interface Connected {
  readonly name: string
  readonly tools: ReadonlyArray<ToolT>
  /** The child process id (stdio servers). */
  readonly pid?: number
}

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e))

const makeTransport = (config: ServerConfig, stderrTail: { text: string }): Transport => {
  if (isStdio(config)) {
    const transport = new StdioClientTransport({
      command: config.command,
      args: [...(config.args ?? [])],
      ...(config.env ? { env: { ...config.env } } : {}),
      ...(config.cwd ? { cwd: config.cwd } : {}),
      stderr: "pipe"
    })
    // Keep the server's stderr off our terminal, but remember its tail for error messages.
    transport.stderr?.on("data", (chunk: Buffer) => {
      stderrTail.text = (stderrTail.text + chunk.toString("utf8")).slice(-2000)
    })
    return transport
  }
  const requestInit: RequestInit = config.headers ? { headers: { ...config.headers } } : {}
  const url = new URL(config.url)
  return config.type === "sse"
    ? new SSEClientTransport(url, { requestInit })
    : new StreamableHTTPClientTransport(url, { requestInit })
}

interface ContentPart {
  readonly type: string
  readonly text?: string
  readonly mimeType?: string
  readonly uri?: string
  readonly name?: string
  readonly resource?: { readonly uri?: string; readonly text?: string; readonly mimeType?: string }
}

/** Joins a tool result's content: text as is, other parts summarised. @internal */
export const contentToText = (
  result: { readonly content?: unknown; readonly structuredContent?: unknown; readonly toolResult?: unknown }
): string => {
  const parts = Array.isArray(result.content) ? (result.content as ReadonlyArray<ContentPart>) : []
  const out: Array<string> = []
  for (const part of parts) {
    switch (part.type) {
      case "text":
        out.push(part.text ?? "")
        break
      case "image":
      case "audio":
        out.push(`[${part.type}: ${part.mimeType ?? "unknown type"}]`)
        break
      case "resource_link":
        out.push(`[resource: ${part.name ?? ""} ${part.uri ?? ""}]`.replace("  ", " "))
        break
      case "resource":
        out.push(
          part.resource?.text !== undefined
            ? part.resource.text
            : `[resource: ${part.resource?.uri ?? ""} (${part.resource?.mimeType ?? "binary"})]`
        )
        break
      default:
        out.push(`[${String(part.type)} content]`)
    }
  }
  if (out.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent)
  if (out.length === 0 && result.toolResult !== undefined) {
    return typeof result.toolResult === "string" ? result.toolResult : JSON.stringify(result.toolResult)
  }
  return out.join("\n")
}

type CallResult = Awaited<ReturnType<Client["callTool"]>>

/** What a call streams: the server's progress notifications, then its result. */
type CallItem = { readonly _tag: "Progress"; readonly progress: Progress } | {
  readonly _tag: "Result"
  readonly result: CallResult
}

/** A progress notification as the call's `Tool.progress`: its message (else `progress/total`) and fraction. */
const reportProgress = (p: Progress): Effect.Effect<void> => {
  const fraction = p.total !== undefined && p.total > 0 ? p.progress / p.total : undefined
  const message = p.message ?? (p.total !== undefined ? `${p.progress}/${p.total}` : String(p.progress))
  return Tool.progress(message, fraction)
}

/** The longest delay a Node timer takes (about 24.8 days). */
const LONGEST_TIMER_MS = 2_147_483_647

/**
 * `tools/call` with a progress token (the SDK sends one when `onprogress` is
 * given): each `notifications/progress` of the call becomes its
 * `Tool.progress`, and resets the request timeout. Interruption aborts the request.
 */
const callWithProgress = (
  client: Client,
  params: Parameters<Client["callTool"]>[0],
  onError: (e: unknown) => ToolError
): Effect.Effect<CallResult, ToolError> =>
  Stream.asyncPush<CallItem, ToolError>((emit) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const controller = new AbortController()
        const options = {
          signal: controller.signal,
          // the SDK's own 60 s default would fail a longer call: a call is bounded by its tool's timeout, when it
          // declares one, and by the run's deadline (interruption aborts the request)
          timeout: LONGEST_TIMER_MS,
          resetTimeoutOnProgress: true,
          onprogress: (progress: Progress) => void emit.single({ _tag: "Progress", progress })
        }
        client.callTool(params, undefined, options).then((result) => {
          emit.single({ _tag: "Result", result })
          emit.end()
        }, (e) => emit.fail(onError(e)))
        return controller
      }),
      (controller) => Effect.sync(() => controller.abort())
    )
  ).pipe(
    Stream.runFoldEffect(undefined as CallResult | undefined, (result, item) =>
      item._tag === "Result" ? Effect.succeed(item.result) : Effect.as(reportProgress(item.progress), result)),
    Effect.flatMap((result) => (result === undefined ? Effect.fail(onError("no result")) : Effect.succeed(result)))
  )

/**
 * The images of a tool result, stored: each `image` content becomes a file the
 * model sees (`files` of a rich result). An image the store refuses (a type it
 * does not take, too large) is left as the text summary, with the reason.
 */
const imagesOf = (
  result: { readonly content?: unknown },
  store: AttachmentsService,
  tool: string
): Effect.Effect<{ readonly files: ReadonlyArray<FilePart>; readonly notes: ReadonlyArray<string> }> => {
  const parts = Array.isArray(result.content)
    ? (result.content as ReadonlyArray<ContentPart & { readonly data?: string }>)
    : []
  const images = parts.filter((p) => p.type === "image" && typeof p.data === "string")
  return Effect.map(
    Effect.forEach(images, (image, k) =>
      Effect.either(store.put(Buffer.from(image.data as string, "base64"), {
        mediaType: image.mimeType,
        name: `${tool}-${k + 1}.${(image.mimeType ?? "image/png").split("/")[1]?.replace("jpeg", "jpg") ?? "png"}`
      }))),
    (outcomes) => ({
      files: outcomes.flatMap((o) => (o._tag === "Right" ? [Message.file(o.right)] : [])),
      notes: outcomes.flatMap((o) => (o._tag === "Left" ? [`[image not kept: ${o.left.message}]`] : []))
    })
  )
}

const wrapTool = (
  server: string,
  client: Client,
  store: AttachmentsService | undefined,
  mcpTool: {
    readonly name: string
    readonly description?: string | undefined
    readonly title?: string | undefined
    readonly inputSchema: Record<string, unknown>
    readonly annotations?: {
      readonly readOnlyHint?: boolean | undefined
      readonly idempotentHint?: boolean | undefined
      readonly title?: string | undefined
    } | undefined
  },
  name: string,
  needsApproval: boolean
): ToolT =>
  fromJsonSchema({
    name,
    needsApproval,
    description: mcpTool.description ?? mcpTool.title ?? mcpTool.annotations?.title ??
      `Tool "${mcpTool.name}" of the MCP server "${server}"`,
    jsonSchema: mcpTool.inputSchema as JsonSchemaObject,
    readOnly: mcpTool.annotations?.readOnlyHint === true,
    // a durable run re-runs an idempotent call cut by a restart (any other is answered with an error)
    idempotent: mcpTool.annotations?.idempotentHint === true,
    handler: (args) =>
      Effect.flatMap(FiberRef.get(currentCall), (call) => {
        // the call's idempotency key goes in the request's `_meta`: a server that deduplicates
        // on it makes an idempotent call's effect happen once, however often it is attempted
        const key = Option.isSome(call) ? call.value.idempotencyKey : undefined
        const params = key === undefined
          ? { name: mcpTool.name, arguments: args }
          : { name: mcpTool.name, arguments: args, _meta: { idempotencyKey: key } }
        return callWithProgress(
          client,
          params,
          (e) => new ToolError({ message: `MCP server "${server}" failed on ${mcpTool.name}: ${errorText(e)}` })
        )
      }).pipe(
        Effect.flatMap((result): Effect.Effect<ToolOutput, ToolError> => {
          const text = contentToText(result)
          if (result.isError === true) {
            return Effect.fail(new ToolError({ message: text || `${mcpTool.name} reported an error` }))
          }
          // images are kept as files the model sees (stored once, by hash) when there is a store
          if (
            store === undefined || !Array.isArray(result.content) || !result.content.some((p) => p?.type === "image")
          ) {
            return Effect.succeed(text)
          }
          return Effect.map(
            imagesOf(result as { readonly content?: unknown }, store, mcpTool.name),
            ({ files, notes }) => {
              const content = [text, ...notes].filter((t) => t !== "").join("\n")
              return files.length === 0 ? content : { content, contentType: "text" as const, files }
            }
          )
        })
      )
  })

/**
 * Starts a server and lists its tools (all pages). The client (and its process)
 * is closed when the scope closes. `taken` holds names already in use; a clash
 * gets a numeric suffix.
 *
 * @internal
 */
export const connect = (
  name: string,
  config: ServerConfig,
  taken: Set<string>,
  store?: AttachmentsService
): Effect.Effect<Connected, string, Scope.Scope> =>
  Effect.gen(function*() {
    const stderrTail = { text: "" }
    const { client, transport } = yield* Effect.acquireRelease(
      Effect.try({
        try: () => ({
          client: new Client({ name: "react-engine", version: "0.1.0" }),
          transport: makeTransport(config, stderrTail)
        }),
        catch: errorText
      }),
      ({ client }) => Effect.promise(() => client.close().catch(() => undefined))
    )
    const withStderr = (message: string) => {
      const tail = stderrTail.text.trim()
      return tail ? `${message} (stderr: ${tail.slice(-500)})` : message
    }
    yield* Effect.tryPromise({
      try: (signal) => client.connect(transport, { signal, timeout: STARTUP_TIMEOUT_MS }),
      catch: (e) => withStderr(`cannot start: ${errorText(e)}`)
    })
    const listed: Array<Parameters<typeof wrapTool>[3]> = []
    let cursor: string | undefined
    do {
      const page = yield* Effect.tryPromise({
        try: (signal) =>
          client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: STARTUP_TIMEOUT_MS }),
        catch: (e) => withStderr(`cannot list tools: ${errorText(e)}`)
      })
      for (const tool of page.tools) listed.push(tool)
      cursor = page.nextCursor
    } while (cursor !== undefined && listed.length < 10_000)
    const tools: Array<ToolT> = []
    for (const mcpTool of listed) {
      let toolNameOut = toolName(name, mcpTool.name)
      for (let n = 2; taken.has(toolNameOut); n++) toolNameOut = toolName(name, `${mcpTool.name}_${n}`)
      taken.add(toolNameOut)
      tools.push(wrapTool(name, client, store, mcpTool, toolNameOut, config.needsApproval === true))
    }
    const pid = transport instanceof StdioClientTransport ? transport.pid : null
    return { name, tools, ...(pid !== null ? { pid } : {}) }
  }).pipe(Effect.timeoutFail({
    duration: STARTUP_TIMEOUT_MS + 1000,
    onTimeout: () => `did not start within ${STARTUP_TIMEOUT_MS / 1000}s`
  }))
