/**
 * The A2A SDK's own reference server, in process on 127.0.0.1: the SDK's
 * `DefaultRequestHandler` over its `InMemoryTaskStore`, mounted with the SDK's
 * Express handlers (`agentCardHandler`, `jsonRpcHandler`), and an executor
 * shaped like the SDK's `sample-agent` (submitted → working with a status
 * message → an artifact → completed). Not our code: what another vendor's
 * agent built on the SDK looks like.
 *
 * - A query containing `fail` ends the task `failed` with a status message.
 * - `token`: every A2A request must carry `Authorization: Bearer <token>` (401
 *   otherwise); the card stays public.
 * - Every message it received is recorded (text and metadata).
 */
import type { AgentCard, Message } from "@a2a-js/sdk"
import { AGENT_CARD_PATH, Role, TaskState } from "@a2a-js/sdk"
import type { AgentExecutionEvent, AgentExecutor, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server"
import { DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server"
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express"
import { randomUUID } from "node:crypto"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"

/** What this file uses of Express (installed with the SDK's server dependencies; it ships no types). */
interface ExpressApp {
  use(path: string, ...handlers: ReadonlyArray<unknown>): void
  listen(port: number, host: string): Server
}
type Middleware = (req: IncomingMessage, res: ServerResponse, next: () => void) => void
const express = createRequire(import.meta.url)("express") as () => ExpressApp

const text = (value: string) => ({
  content: { $case: "text" as const, value },
  metadata: undefined,
  filename: "",
  mediaType: "text/plain"
})

const agentMessage = (taskId: string, contextId: string, value: string): Message => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_AGENT,
  parts: [text(value)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: []
})

export interface SampleServer {
  readonly url: string
  readonly received: ReadonlyArray<{ readonly text: string; readonly metadata: Record<string, unknown> | undefined }>
  readonly close: () => Promise<void>
}

export const startSampleServer = async (
  options: { readonly token?: string; readonly stepMs?: number } = {}
): Promise<SampleServer> => {
  const received: Array<{ text: string; metadata: Record<string, unknown> | undefined }> = []
  const sleep =
    () => (options.stepMs === 0 ? Promise.resolve() : new Promise((r) => setTimeout(r, options.stepMs ?? 20)))
  const executor: AgentExecutor = {
    execute: async (context: RequestContext, bus: ExecutionEventBus) => {
      const { contextId, taskId, userMessage } = context
      const query = userMessage.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("")
      received.push({ text: query, metadata: userMessage.metadata })
      const publish = (e: AgentExecutionEvent) => bus.publish(e)
      const status = (state: TaskState, message?: string): AgentExecutionEvent => ({
        kind: "statusUpdate",
        data: {
          taskId,
          contextId,
          status: {
            state,
            message: message === undefined ? undefined : agentMessage(taskId, contextId, message),
            timestamp: new Date().toISOString()
          },
          metadata: undefined
        }
      })
      publish({
        kind: "task",
        data: {
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
          history: [userMessage],
          artifacts: [],
          metadata: undefined
        }
      })
      await sleep()
      publish(status(TaskState.TASK_STATE_WORKING, "Looking it up"))
      await sleep()
      if (query.includes("fail")) {
        publish(status(TaskState.TASK_STATE_FAILED, "The sample agent cannot do that"))
        bus.finished()
        return
      }
      publish({
        kind: "artifactUpdate",
        data: {
          taskId,
          contextId,
          artifact: {
            artifactId: "result",
            name: "result",
            description: "",
            parts: [text(`Sample answer to: ${query}`)],
            metadata: undefined,
            extensions: []
          },
          append: false,
          lastChunk: true,
          metadata: undefined
        }
      })
      publish(status(TaskState.TASK_STATE_COMPLETED))
      bus.finished()
    },
    cancelTask: async () => {}
  }
  const app = express()
  const server = app.listen(0, "127.0.0.1")
  await new Promise<void>((resolve) => server.once("listening", () => resolve()))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const card: AgentCard = {
    name: "SDK Sample Agent",
    description: "The A2A SDK's sample agent: answers any question with a sample answer",
    supportedInterfaces: [{
      url: `${url}/a2a/jsonrpc`,
      protocolBinding: "JSONRPC",
      tenant: "",
      protocolVersion: "1.0"
    }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{
      id: "sample",
      name: "Sample",
      description: "Answers with a sample",
      tags: ["sample"],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: []
    }],
    signatures: []
  }
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor)
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }))
  if (options.token !== undefined) {
    const guard: Middleware = (req, res, next) => {
      if (req.headers.authorization === `Bearer ${options.token}`) return next()
      res.writeHead(401, { "content-type": "text/plain" }).end("Unauthorized")
    }
    app.use("/a2a", guard)
  }
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
  return {
    url,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
