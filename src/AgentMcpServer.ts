/**
 * The agent as an MCP server: one tool, `ask {query}`, whose call
 * runs the agent and answers with its answer. Any MCP client (Claude Desktop,
 * IDEs, another agent through `McpTools`) can use it, over stdio (`npm run
 * mcp`, `serveStdio`) or streamable HTTP (`/mcp` on the server).
 *
 * - **Progress**: when the call carries a `progressToken`, one
 *   `notifications/progress` per step of the run (each loop iteration, each
 *   tool result, each DAG step, the start of the answer), `progress` counting
 *   up, `message` saying what happened.
 * - **Cancellation**: `notifications/cancelled` (what an MCP client sends when
 *   its call is aborted) interrupts the run: the LLM request is aborted, tools
 *   are interrupted.
 * - A run that fails answers `isError: true` with the failure message.
 *
 * ```ts
 * // one MCP server instance per transport
 * const server = (yield* AgentMcpServer.AgentMcpServer).create()
 * yield* Effect.promise(() => server.connect(new StdioServerTransport()))
 * ```
 *
 * @since 0.1.0
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import type { CallToolResult, ServerNotification } from "@modelcontextprotocol/sdk/types.js"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import * as z from "zod"
import * as DagAgent from "./DagAgent.js"
import * as ReactAgent from "./ReactAgent.js"
import type { RunEvent } from "./RunEvent.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The server name reported to clients. Default `effect-react-engine`. */
  readonly name?: string
  /** The server version reported to clients. Default `0.1.0`. */
  readonly version?: string
  /** How `ask` runs: `react`, `dag` or `auto`. Default `react`. */
  readonly mode?: DagAgent.Mode
  /** The description of `ask` the client's model reads. */
  readonly description?: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface AgentMcpServerService {
  /** A new MCP server with the `ask` tool (a server serves one transport: one per stdio process or HTTP session). */
  readonly create: () => McpServer
}

/**
 * @since 0.1.0
 * @category Context
 */
export class AgentMcpServer
  extends Context.Tag("effect-react-engine/AgentMcpServer")<AgentMcpServer, AgentMcpServerService>()
{}

/**
 * The name of the tool.
 *
 * @since 0.1.0
 * @category constants
 */
export const TOOL_NAME = "ask"

const DEFAULT_DESCRIPTION =
  "Ask the agent: it works on the query with its own tools (several steps if needed) and answers it."

/** A step of the run worth a progress notification, as its message. */
const progressMessage = (event: RunEvent): string | undefined => {
  switch (event._tag) {
    case "ThinkingStart":
      return event.step_id === undefined ? `Iteration ${event.iteration}` : undefined
    case "ToolDone":
      return `${event.tool_name} ${event.error === null ? "done" : `failed: ${event.error}`}${
        event.step_id !== undefined ? ` (step ${event.step_id})` : ""
      }`
    case "DagStep":
      return event.status === "start" ? undefined : `Step ${event.step_id} ${event.status}`
    case "AnswerStart":
      return "Writing the answer"
    default:
      return undefined
  }
}

interface CallExtra {
  readonly _meta?: { readonly progressToken?: string | number | undefined } | undefined
  readonly sendNotification: (notification: ServerNotification) => Promise<void>
}

/**
 * The MCP server factory over the agents in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Options = {}
): Effect.Effect<AgentMcpServerService, never, ReactAgent.ReactAgent | DagAgent.DagAgent> =>
  Effect.gen(function*() {
    const agents = { react: yield* ReactAgent.ReactAgent, dag: yield* DagAgent.DagAgent }
    const runPromise = Runtime.runPromise(yield* Effect.runtime<never>())
    const mode = options.mode ?? "react"

    const ask = (query: string, extra: CallExtra): Effect.Effect<CallToolResult> =>
      Effect.suspend(() => {
        const token = extra._meta?.progressToken
        let progress = 0
        let answer = ""
        let failure: string | undefined
        const notify = (message: string) =>
          token === undefined ?
            Effect.void :
            Effect.tryPromise(() =>
              extra.sendNotification({
                method: "notifications/progress",
                params: { progressToken: token, progress: ++progress, message }
              })
            ).pipe(Effect.ignore)
        return DagAgent.runWithMode(agents, mode, { query }).pipe(
          Stream.runForEach((event) => {
            if (event._tag === "Done") answer = event.answer
            else if (event._tag === "RunFailed") failure = event.message
            const message = progressMessage(event)
            return message === undefined ? Effect.void : notify(message)
          }),
          Effect.map((): CallToolResult =>
            failure !== undefined
              ? { content: [{ type: "text", text: failure }], isError: true }
              : { content: [{ type: "text", text: answer }] }
          )
        )
      })

    const create = () => {
      const server = new McpServer({ name: options.name ?? "effect-react-engine", version: options.version ?? "0.1.0" })
      server.registerTool(
        TOOL_NAME,
        {
          description: options.description ?? DEFAULT_DESCRIPTION,
          inputSchema: { query: z.string().min(1).describe("The question or task") }
        },
        // an SDK callback hands the call to Effect here: the run is interrupted
        // when the client cancels the request (the SDK aborts `extra.signal`)
        ({ query }, extra) => runPromise(ask(query, extra), { signal: extra.signal })
      )
      return server
    }
    return { create }
  })

/**
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options?: Options
): Layer.Layer<AgentMcpServer, never, ReactAgent.ReactAgent | DagAgent.DagAgent> =>
  Layer.effect(AgentMcpServer, make(options))

/**
 * The server on this process's stdin / stdout (the MCP stdio transport), closed
 * with the layer's scope; the effect completes when the client goes away
 * (stdin ends or the transport closes). Nothing else may write to stdout.
 *
 * @since 0.1.0
 * @category layers
 */
export const serveStdio: Effect.Effect<void, never, AgentMcpServer> = Effect.scoped(
  Effect.gen(function*() {
    const server = (yield* AgentMcpServer).create()
    const transport = new StdioServerTransport()
    yield* Effect.acquireRelease(
      Effect.promise(() => server.connect(transport)),
      () => Effect.promise(() => server.close())
    )
    yield* Effect.async<void>((resume) => {
      const done = () => resume(Effect.void)
      server.server.onclose = done
      process.stdin.once("end", done)
      return Effect.sync(() => process.stdin.off("end", done))
    })
  })
)
