/**
 * The A2A server (SPEC §27) through the official SDK's own client, unchanged:
 * `new ClientFactory().createFromUrl(url)` reads our agent card and speaks
 * JSON-RPC to our router — send, stream, get, cancel — over the real server
 * (routes, durable runs, SQLite) and a fake OpenAI-compatible model. An
 * unauthenticated call is refused before anything runs, and so is a call from a
 * foreign page (Origin) or through a rebinding name (Host), as on every route.
 */
import { TaskState } from "@a2a-js/sdk"
import type { Message, Task } from "@a2a-js/sdk"
import { ClientFactory } from "@a2a-js/sdk/client"
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import { request } from "node:http"
import * as Tool from "../../src/Tool.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"

const TOKEN = "a2a-test-token"
const auth = { serviceParameters: { Authorization: `Bearer ${TOKEN}` } }

const userMessage = (text: string, extra: Partial<Message> = {}): Message => ({
  messageId: randomUUID(),
  contextId: "",
  taskId: "",
  role: 1,
  parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
  ...extra
})

const send = (text: string, extra: Partial<Message> = {}) => ({
  tenant: "",
  message: userMessage(text, extra),
  configuration: undefined,
  metadata: undefined
})

const answerOf = (task: Task): string =>
  task.artifacts.flatMap((a) => a.parts.flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : []))).join("")

/** A model that calls `calculator` once, then answers; streamed requests are the synthesis. */
const model = (answer: string, slow = 0) =>
  FakeOpenAi.scoped((body: any, index: number) => {
    if (body?.stream) return FakeOpenAi.sseText(answer)
    const tools = (body.messages ?? []).filter((m: any) => m.role === "tool").length
    return tools === 0
      ? FakeOpenAi.completion({
        toolCalls: [{
          id: FakeOpenAi.freshCallId(index),
          name: "calculator",
          arguments: JSON.stringify({ expression: "6*7" })
        }],
        delayMs: slow
      })
      : FakeOpenAi.completion({ content: "42", delayMs: slow })
  })

describe("A2A server through the SDK's own client", () => {
  it.scopedLive(
    "card, SendMessage (a completed task with the answer as an artifact), GetTask, a follow-up in the same context",
    () =>
      Effect.gen(function*() {
        const fake = yield* model("The answer is 42.")
        const server = yield* startServer({
          llmUrl: fake.url,
          settings: { apiToken: Option.some(Redacted.make(TOKEN)) }
        })
        const client = yield* Effect.promise(() => new ClientFactory().createFromUrl(server.url))
        const card = yield* Effect.promise(() => client.getAgentCard())
        assert.strictEqual(card.name, "react-engine")
        assert.isTrue(card.capabilities?.streaming)
        assert.deepStrictEqual(card.supportedInterfaces.map((i) => [i.url, i.protocolVersion]), [
          [`${server.url}/a2a`, "1.0"],
          [`${server.url}/a2a`, "0.3"]
        ])
        assert.deepStrictEqual(Object.keys(card.securitySchemes), ["bearer"])

        const result = yield* Effect.promise(() => client.sendMessage(send("What is 6*7?"), auth))
        assert.isTrue("status" in result, "a task")
        const task = result as Task
        assert.strictEqual(task.status?.state, TaskState.TASK_STATE_COMPLETED)
        assert.strictEqual(answerOf(task), "The answer is 42.")
        assert.notStrictEqual(task.contextId, "")

        const got = yield* Effect.promise(() => client.getTask({ tenant: "", id: task.id }, auth))
        assert.strictEqual(got.status?.state, TaskState.TASK_STATE_COMPLETED)
        assert.strictEqual(answerOf(got), "The answer is 42.")
        assert.strictEqual(got.history[0]?.parts[0]?.content?.$case, "text")

        // the context is the conversation: a follow-up continues it (its run gets the earlier turn as history)
        const again = (yield* Effect.promise(() =>
          client.sendMessage(send("And doubled?", { contextId: task.contextId }), auth)
        )) as Task
        assert.strictEqual(again.contextId, task.contextId)
        assert.strictEqual(again.status?.state, TaskState.TASK_STATE_COMPLETED)
        const followUp = fake.requests.filter((r) =>
          !r.body.stream
        ).at(-2)!.body.messages
        assert.isTrue(
          followUp.some((m: any) => m.role === "assistant" && m.content === "The answer is 42."),
          "the earlier turn is the history"
        )
      }),
    60_000
  )

  it.scopedLive(
    "SendStreamingMessage: the task, working status with the tool call, answer chunks, completed",
    () =>
      Effect.gen(function*() {
        const fake = yield* model("Forty-two.")
        const server = yield* startServer({
          llmUrl: fake.url,
          settings: { apiToken: Option.some(Redacted.make(TOKEN)) }
        })
        const client = yield* Effect.promise(() => new ClientFactory().createFromUrl(server.url))
        const kinds: Array<string> = []
        let answer = ""
        let last: any
        yield* Effect.promise(async () => {
          for await (const event of client.sendMessageStream(send("What is 6*7?"), auth)) {
            const payload = event.payload!
            kinds.push(
              payload.$case === "statusUpdate" ? `status:${TaskState[payload.value.status!.state]}` : payload.$case
            )
            if (payload.$case === "artifactUpdate") {
              const text = payload.value.artifact!.parts.map((
                p
              ) => (p.content?.$case === "text" ? p.content.value : "")).join("")
              answer = payload.value.append ? answer + text : text
            }
            last = payload
          }
        })
        assert.strictEqual(kinds[0], "task")
        assert.include(kinds, "status:TASK_STATE_WORKING")
        assert.include(kinds, "artifactUpdate")
        assert.strictEqual(kinds[kinds.length - 1], "status:TASK_STATE_COMPLETED")
        assert.strictEqual(answer, "Forty-two.")
        const calling = kinds.indexOf("status:TASK_STATE_WORKING")
        assert.isAtLeast(calling, 1)
        assert.strictEqual(last.value.status.state, TaskState.TASK_STATE_COMPLETED)
      }),
    60_000
  )

  it.scopedLive(
    "CancelTask: a task whose run waits on the model is canceled, and its run stops",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(() => FakeOpenAi.completion({ content: "late", delayMs: 20_000 }))
        const server = yield* startServer({
          llmUrl: fake.url,
          settings: { apiToken: Option.some(Redacted.make(TOKEN)) }
        })
        const client = yield* Effect.promise(() => new ClientFactory().createFromUrl(server.url))
        const started = (yield* Effect.promise(() =>
          client.sendMessage({
            ...send("slow question"),
            configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true }
          }, auth)
        )) as Task

        yield* Effect.promise(() => fake.waitForRequests(1, 10_000))

        const cancelled = yield* Effect.promise(() =>
          client.cancelTask({ tenant: "", id: started.id, metadata: undefined }, auth)
        )

        assert.strictEqual(cancelled.status?.state, TaskState.TASK_STATE_CANCELED)
        const got = yield* Effect.promise(() => client.getTask({ tenant: "", id: started.id }, auth))
        assert.strictEqual(got.status?.state, TaskState.TASK_STATE_CANCELED)
        const conversation = yield* Effect.promise(() =>
          fetch(`${server.url}/api/conversations/${started.contextId}`, {
            headers: { authorization: `Bearer ${TOKEN}` }
          }).then((r) => r.json())
        )
        assert.strictEqual(conversation.turn_details[0].status, "cancelled")
      }),
    60_000
  )

  it.scopedLive(
    "v0.3 peers: the card without A2A-Version is the v0.3 card; message/send answers a v0.3 task",
    () =>
      Effect.gen(function*() {
        const fake = yield* model("Legacy answer.")
        const server = yield* startServer({
          llmUrl: fake.url,
          settings: { apiToken: Option.some(Redacted.make(TOKEN)) }
        })
        const legacyCard = yield* Effect.promise(() =>
          fetch(`${server.url}/.well-known/agent-card.json`).then((r) => r.json())
        )
        assert.strictEqual(legacyCard.protocolVersion, "0.3")
        assert.strictEqual(legacyCard.url, `${server.url}/a2a`)
        assert.isTrue(legacyCard.capabilities.streaming)
        const reply = yield* Effect.promise(() =>
          fetch(`${server.url}/a2a`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
            body: JSON.stringify({
              jsonrpc: "2.0",
              id: 7,
              method: "message/send",
              params: {
                message: {
                  kind: "message",
                  messageId: randomUUID(),
                  role: "user",
                  parts: [{ kind: "text", text: "What is 6*7?" }]
                }
              }
            })
          }).then((r) => r.json())
        )
        assert.strictEqual(reply.id, 7)
        assert.strictEqual(reply.result.kind, "task")
        assert.strictEqual(reply.result.status.state, "completed")
        assert.strictEqual(reply.result.artifacts[0].parts[0].text, "Legacy answer.")
      }),
    60_000
  )

  it.scopedLive(
    "an unauthenticated call is refused (401) and calls no model; a wrong token too",
    () =>
      Effect.gen(function*() {
        const fake = yield* model("never")
        const server = yield* startServer({
          llmUrl: fake.url,
          settings: { apiToken: Option.some(Redacted.make(TOKEN)) }
        })
        const client = yield* Effect.promise(() => new ClientFactory().createFromUrl(server.url))
        const refused = yield* Effect.promise(() =>
          client.sendMessage(send("What is 6*7?")).then(() => "sent", (e: Error) => e.message)
        )
        assert.include(refused, "401")
        const wrong = yield* Effect.promise(() =>
          client.sendMessage(send("What is 6*7?"), { serviceParameters: { Authorization: "Bearer nope" } }).then(
            () => "sent",
            (e: Error) => e.message
          )
        )
        assert.include(wrong, "401")
        const raw = yield* Effect.promise(() =>
          fetch(`${server.url}/a2a`, {
            method: "POST",
            headers: { "content-type": "application/json", "a2a-version": "1.0" },
            body: JSON.stringify({
              jsonrpc: "2.0",
              id: 1,
              method: "SendMessage",
              params: { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "hi" }] } }
            })
          }).then(async (r) => ({ status: r.status, body: await r.json() }))
        )
        assert.strictEqual(raw.status, 401)
        assert.strictEqual(fake.requests.length, 0, "no model call")
      }),
    60_000
  )

  it.scopedLive(
    "the browser rules of every route: a foreign Origin is refused (403), a foreign Host too (421); no model call",
    () =>
      Effect.gen(function*() {
        const fake = yield* model("never")
        const server = yield* startServer({
          llmUrl: fake.url,
          settings: { apiToken: Option.some(Redacted.make(TOKEN)) }
        })
        const port = new URL(server.url).port
        const body = JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "SendMessage",
          params: { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "hi" }] } }
        })
        const post = (headers: Record<string, string>) =>
          Effect.promise(() =>
            fetch(`${server.url}/a2a`, {
              method: "POST",
              headers: {
                "content-type": "application/json",
                "a2a-version": "1.0",
                authorization: `Bearer ${TOKEN}`,
                ...headers
              },
              body
            }).then((r) => r.status)
          )
        // the token is right: only the page's origin or the rebinding host is wrong
        assert.strictEqual(yield* post({ origin: "https://attacker.example" }), 403)
        // fetch does not send a Host of its own choosing: node:http does
        const rebound = yield* Effect.async<number>((resume) => {
          const req = request({
            host: "127.0.0.1",
            port: Number(port),
            path: "/a2a",
            method: "POST",
            headers: {
              host: `attacker.example:${port}`,
              "content-type": "application/json",
              "a2a-version": "1.0",
              authorization: `Bearer ${TOKEN}`
            }
          }, (res) => {
            res.resume()
            resume(Effect.succeed(res.statusCode ?? 0))
          })
          req.on("error", (e) => resume(Effect.die(e)))
          req.end(body)
        })
        assert.strictEqual(rebound, 421)
        const card = yield* Effect.promise(() =>
          fetch(`${server.url}/.well-known/agent-card.json`, { headers: { origin: "https://attacker.example" } }).then((
            r
          ) => r.status)
        )
        assert.strictEqual(card, 403)
        assert.strictEqual(fake.requests.length, 0, "no model call")
      }),
    60_000
  )

  it.scopedLive(
    "a message sent again with an idempotency key already seen follows the first task's run: no work again",
    () =>
      Effect.gen(function*() {
        // each run's answer names its question: a task following the wrong run shows the wrong answer
        const fake = yield* FakeOpenAi.scoped((body: any, index: number) => {
          const text = JSON.stringify(body.messages)
          if (body?.stream) return FakeOpenAi.sseText(text.includes("SECOND-Q") ? "Second answer." : "First answer.")
          const tools = (body.messages ?? []).filter((m: any) => m.role === "tool").length
          return tools === 0
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: FakeOpenAi.freshCallId(index),
                name: "calculator",
                arguments: "{\"expression\":\"1+1\"}"
              }]
            })
            : FakeOpenAi.completion({ content: "2" })
        })
        const server = yield* startServer({
          llmUrl: fake.url,
          settings: { apiToken: Option.some(Redacted.make(TOKEN)) }
        })
        const client = yield* Effect.promise(() => new ClientFactory().createFromUrl(server.url))
        const keyed = { metadata: { idempotency_key: "ik_retry" } }
        const first = (yield* Effect.promise(() => client.sendMessage(send("FIRST-Q", keyed), auth))) as Task
        assert.strictEqual(answerOf(first), "First answer.")
        // a later run in the same conversation: the conversation's latest run is no longer the first task's
        const second = (yield* Effect.promise(() =>
          client.sendMessage(send("SECOND-Q", { contextId: first.contextId }), auth)
        )) as Task
        assert.strictEqual(answerOf(second), "Second answer.")
        const requests = fake.requests.length
        // the caller retries the first message (a new message id, the same key)
        const retried = (yield* Effect.promise(() =>
          client.sendMessage(send("FIRST-Q", keyed), auth)
        )) as Task
        assert.strictEqual(retried.status?.state, TaskState.TASK_STATE_COMPLETED)
        assert.strictEqual(answerOf(retried), "First answer.")
        assert.strictEqual(fake.requests.length, requests, "no model call for the retry")
      }),
    60_000
  )

  it.scopedLive(
    "CancelTask on a task sent again with the same key cancels the run both tasks follow",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped((body: any, index: number) => {
          if (body?.stream) return FakeOpenAi.sseText("Never shown.")
          const tools = (body.messages ?? []).filter((m: any) => m.role === "tool").length
          return tools === 0
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: FakeOpenAi.freshCallId(index),
                name: "calculator",
                arguments: "{\"expression\":\"1+1\"}"
              }],
              delayMs: 20_000
            })
            : FakeOpenAi.completion({ content: "2" })
        })
        const server = yield* startServer({
          llmUrl: fake.url,
          settings: { apiToken: Option.some(Redacted.make(TOKEN)) }
        })
        const client = yield* Effect.promise(() => new ClientFactory().createFromUrl(server.url))
        const atOnce = (text: string) => ({
          ...send(text, { metadata: { idempotency_key: "ik_cancel" } }),
          configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true }
        })
        const first = (yield* Effect.promise(() => client.sendMessage(atOnce("SLOW-Q"), auth))) as Task
        yield* Effect.promise(() => fake.waitForRequests(1, 10_000))
        const retried = (yield* Effect.promise(() => client.sendMessage(atOnce("SLOW-Q"), auth))) as Task
        assert.notStrictEqual(retried.id, first.id)
        yield* Effect.promise(() => client.cancelTask({ tenant: "", id: retried.id, metadata: undefined }, auth))
        // the run both follow stops: the first task ends canceled too, long before the model's 20 s reply
        let state: TaskState | undefined
        for (let i = 0; i < 50 && state !== TaskState.TASK_STATE_CANCELED; i++) {
          yield* Effect.sleep("200 millis")
          state = (yield* Effect.promise(() => client.getTask({ tenant: "", id: first.id }, auth))).status?.state
        }
        assert.strictEqual(state, TaskState.TASK_STATE_CANCELED)
        assert.strictEqual(fake.requests.length, 1, "one run, asked once")
      }),
    60_000
  )

  it.scopedLive(
    "a task waiting for a free slot streams a submitted status saying so, then works and completes",
    () =>
      Effect.gen(function*() {
        const release = yield* Deferred.make<void>()
        const holding = yield* Deferred.make<void>()
        const hold = Tool.make({
          name: "calculator",
          description: "Holds the first run until released",
          parameters: Schema.Struct({ expression: Schema.String }),
          handler: () => Effect.zipRight(Deferred.succeed(holding, undefined), Effect.as(Deferred.await(release), "42"))
        })
        const fake = yield* model("Forty-two.")
        const server = yield* startServer({
          llmUrl: fake.url,
          tools: [hold],
          settings: { apiToken: Option.some(Redacted.make(TOKEN)), maxActiveRuns: 1, runQueue: 5 }
        })
        const client = yield* Effect.promise(() => new ClientFactory().createFromUrl(server.url))
        // the only slot: a run holding its tool call
        const first = yield* Effect.fork(Effect.promise(() => client.sendMessage(send("FIRST"), auth)))
        yield* Deferred.await(holding)
        const statuses: Array<[string, string]> = []
        const streamed = yield* Effect.fork(Effect.promise(async () => {
          for await (const event of client.sendMessageStream(send("SECOND"), auth)) {
            const payload = event.payload!
            if (payload.$case !== "statusUpdate") continue
            const message = payload.value.status!.message?.parts[0]?.content
            statuses.push([TaskState[payload.value.status!.state], message?.$case === "text" ? message.value : ""])
            if (message?.$case === "text" && message.value.startsWith("Waiting for a free slot")) {
              Effect.runFork(Deferred.succeed(release, undefined))
            }
          }
        }))
        yield* Fiber.join(streamed)
        yield* Fiber.join(first)
        assert.deepStrictEqual(
          statuses[0],
          ["TASK_STATE_SUBMITTED", "Waiting for a free slot (0 ahead)"],
          JSON.stringify(statuses)
        )
        assert.deepStrictEqual(statuses.at(-1)?.[0], "TASK_STATE_COMPLETED")
        assert.isTrue(statuses.some(([state]) => state === "TASK_STATE_WORKING"))
      }),
    60_000
  )
})
