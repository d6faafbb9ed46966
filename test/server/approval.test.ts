/**
 * Tool approval over HTTP against the REAL server (routes, run
 * registry, SQLite store, the `openai`-SDK LLM) over a fake OpenAI endpoint:
 * `REACT_APPROVAL_TOOLS` from the environment, the `approval` SSE events,
 * `POST /api/react/approve` and its refusals, the detach grace, cancellation.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Tool from "../../src/Tool.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson, openSse, postJson, type SseEvent } from "../utils/sse.js"

/** A plain tool (no `needsApproval`): `REACT_APPROVAL_TOOLS` makes it wait. */
const fileTool = (ms = 0) => {
  const ran: Array<string> = []
  const tool = Tool.make({
    name: "fs__write_file",
    description: "Writes a file",
    parameters: Schema.Struct({ path: Schema.String }),
    handler: ({ path }) =>
      Effect.as(Effect.sleep(ms), `wrote ${path}`).pipe(Effect.tap(() => Effect.sync(() => ran.push(path))))
  })
  return { tool, ran }
}

const hasToolResult = (body: any) => (body?.messages ?? []).some((m: any) => m.role === "tool")

/** Calls the tool once, then answers. */
const writeRound: FakeOpenAi.FakeResponder = (body) => {
  if (body?.stream) return FakeOpenAi.sseText("Handled.")
  return hasToolResult(body)
    ? FakeOpenAi.completion({ content: "Handled." })
    : FakeOpenAi.completion({
      toolCalls: [{ id: "call_w", name: "fs__write_file", arguments: "{\"path\":\"notes.txt\"}" }]
    })
}

const env = (vars: Record<string, string>) =>
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(vars))))

const server = (
  fake: { readonly url: string },
  ran: ReturnType<typeof fileTool>,
  settings: Record<string, unknown> = {}
) =>
  startServer({
    llmUrl: fake.url,
    tools: [ran.tool],
    settings: { detachGraceMs: 10_000, ...settings },
    provide: env({ REACT_APPROVAL_TOOLS: "fs__write_*", REACT_COMPLETION_CHECK_MIN_TOOLS: "10" })
  })

const approvalEvents = (events: ReadonlyArray<SseEvent>) =>
  events.filter((e) => e.event === "approval").map((e) => e.data)

describe("tool approval over HTTP", () => {
  it.scopedLive(
    "approve: 200, the tool runs once; refusals: 409 already decided, 404 unknown, 409 mismatch, 400 bad body",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(writeRound)
        const file = fileTool()
        const { url } = yield* server(fake, file)
        const answers: Array<{ status: number; body: any }> = []
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "write my notes", conversation_id: "ap1" },
            onEvent: async (e) => {
              if (e.event !== "approval" || e.data.status !== "requested") return
              const base = { conversation_id: "ap1", approval_id: e.data.approval_id }
              answers.push(await postJson(`${url}/api/react/approve`, { ...base, decision: "maybe" }))
              answers.push(
                await postJson(`${url}/api/react/approve`, { ...base, decision: "approve", tool_call_id: "call_other" })
              )
              answers.push(
                await postJson(`${url}/api/react/approve`, { ...base, decision: "approve", args_hash: "0".repeat(64) })
              )
              answers.push(
                await postJson(`${url}/api/react/approve`, { ...base, approval_id: "apr_forged", decision: "approve" })
              )
              answers.push(
                await postJson(`${url}/api/react/approve`, { ...base, conversation_id: "other", decision: "approve" })
              )
              const before = (await getJson(`${url}/api/conversations`)).body.conversations
              answers.push({ status: 0, body: before.find((c: any) => c.id === "ap1") })
              answers.push(
                await postJson(`${url}/api/react/approve`, {
                  ...base,
                  decision: "approve",
                  tool_call_id: "call_w",
                  args_hash: e.data.args_hash
                })
              )
              answers.push(await postJson(`${url}/api/react/approve`, { ...base, decision: "deny" }))
            }
          })
        )
        assert.deepStrictEqual(answers.map((a) => a.status), [400, 409, 409, 404, 404, 0, 200, 409])
        assert.strictEqual(answers[0].body.error, "invalid_request")
        assert.include(answers[0].body.issues[0].path, "decision")
        assert.deepStrictEqual([answers[1].body.error, answers[1].body.field], ["approval_mismatch", "tool_call_id"])
        assert.deepStrictEqual([answers[2].body.error, answers[2].body.field], ["approval_mismatch", "args_hash"])
        assert.strictEqual(answers[3].body.error, "approval_not_found")
        // the waiting run's conversation is listed (stored from its first event, no turn yet) and says so
        const { created_at: _, updated_at: __, ...shown } = answers[5].body
        assert.deepStrictEqual(shown, { id: "ap1", title: "write my notes", turns: 0, waiting_approval: true })
        const requested = approvalEvents(result.events)[0]
        assert.deepStrictEqual(answers[6].body, { approval_id: requested.approval_id, decision: "approve" })
        assert.deepStrictEqual([answers[7].body.error, answers[7].body.status], ["already_decided", "approved"])
        assert.deepStrictEqual(file.ran, ["notes.txt"])
        assert.deepStrictEqual(approvalEvents(result.events), [
          {
            type: "approval",
            status: "requested",
            approval_id: requested.approval_id,
            tool_call_id: "call_w",
            tool_name: "fs__write_file",
            tool_args: { path: "notes.txt" },
            args_hash: requested.args_hash,
            iteration: 1
          },
          { type: "approval", status: "approved", approval_id: requested.approval_id, tool_call_id: "call_w" }
        ])
        const done = result.events[result.events.length - 1]
        assert.strictEqual(done.event, "done")
        assert.strictEqual(done.data.answer, "Handled.")
        const stored = yield* Effect.promise(() => getJson(`${url}/api/conversations/ap1`))
        assert.strictEqual(stored.body.waiting_approval, false)
        const listed = (yield* Effect.promise(() => getJson(`${url}/api/conversations`))).body.conversations
        assert.deepStrictEqual(listed.map((c: any) => [c.id, c.waiting_approval]), [["ap1", false]])
      }),
    30_000
  )

  it.scopedLive(
    "deny: the tool never runs; the model and the stored turn get the denial as the call's tool message",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(writeRound)
        const file = fileTool()
        const { url } = yield* server(fake, file)
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "write my notes", conversation_id: "ap2" },
            onEvent: async (e) => {
              if (e.event === "approval" && e.data.status === "requested") {
                await postJson(`${url}/api/react/approve`, {
                  conversation_id: "ap2",
                  approval_id: e.data.approval_id,
                  decision: "deny",
                  reason: "not today"
                })
              }
            }
          })
        )
        assert.deepStrictEqual(file.ran, [])
        assert.deepStrictEqual(approvalEvents(result.events).map((d) => [d.status, d.reason]), [[
          "requested",
          undefined
        ], ["denied", "not today"]])
        const toolDone = result.events.find((e) =>
          e.event === "step" && e.data.type === "iteration" && e.data.status === "done"
        )
        assert.strictEqual(toolDone?.data.error, "the user denied this call: not today")
        const second = fake.requests[1].body.messages
        const toolMessages = second.filter((m: any) => m.role === "tool")
        assert.deepStrictEqual(toolMessages.map((m: any) => [m.tool_call_id, m.content]), [[
          "call_w",
          "Error: the user denied this call: not today"
        ]])
        const stored = yield* Effect.promise(() => getJson(`${url}/api/conversations/ap2`))
        const storedTool = stored.body.messages.filter((m: any) => m.role === "tool")
        assert.deepStrictEqual(storedTool.map((m: any) => m.content), ["Error: the user denied this call: not today"])
      }),
    30_000
  )

  it.scopedLive(
    "a run waiting for approval outlives the detach grace; answered with no client, it runs to its end",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(writeRound)
        const file = fileTool()
        const { url } = yield* server(fake, file, { detachGraceMs: 150 })
        const first = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "write my notes", conversation_id: "ap3" },
            until: (e) => e.event === "approval"
          })
        )
        assert.isTrue(first.hungUp)
        const approvalId = first.events[first.events.length - 1].data.approval_id
        // well past the grace: still waiting, not cancelled
        yield* Effect.sleep("600 millis")
        const listed = (yield* Effect.promise(() => getJson(`${url}/api/conversations`))).body.conversations
        assert.deepStrictEqual(listed.map((c: any) => [c.id, c.waiting_approval]), [["ap3", true]])
        const decided = yield* Effect.promise(() =>
          postJson(`${url}/api/react/approve`, { conversation_id: "ap3", approval_id: approvalId, decision: "approve" })
        )
        assert.strictEqual(decided.status, 200)
        // nobody attached: after the decision the run still goes on to its end (past the grace again)
        let stored: any
        for (let i = 0; i < 60; i++) {
          yield* Effect.sleep("50 millis")
          stored = (yield* Effect.promise(() => getJson(`${url}/api/conversations/ap3`))).body
          if (stored?.active === false) break
        }
        assert.strictEqual(stored.active, false)
        assert.deepStrictEqual(file.ran, ["notes.txt"])
        const replay = yield* Effect.promise(() => openSse(`${url}/api/react/events?conversation_id=ap3`))
        const done = replay.events[replay.events.length - 1]
        assert.strictEqual(done.event, "done")
        assert.isUndefined(done.data.cancelled)
        assert.strictEqual(done.data.answer, "Handled.")
        assert.deepStrictEqual(approvalEvents(replay.events).map((d) => d.status), ["requested", "approved"])
      }),
    30_000
  )

  it.scopedLive(
    "answered within the grace, with no client: the run still goes on to its end (the grace does not apply any more)",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(writeRound)
        // the tool outlasts the grace: without the rule the grace would cancel it mid-call
        const file = fileTool(700)
        const { url } = yield* server(fake, file, { detachGraceMs: 200 })
        const first = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "write my notes", conversation_id: "ap5" },
            until: (e) => e.event === "approval"
          })
        )
        const approvalId = first.events[first.events.length - 1].data.approval_id
        const decided = yield* Effect.promise(() =>
          postJson(`${url}/api/react/approve`, { conversation_id: "ap5", approval_id: approvalId, decision: "approve" })
        )
        assert.strictEqual(decided.status, 200)
        let stored: any
        for (let i = 0; i < 60; i++) {
          yield* Effect.sleep("50 millis")
          stored = (yield* Effect.promise(() => getJson(`${url}/api/conversations/ap5`))).body
          if (stored?.active === false) break
        }
        assert.deepStrictEqual(file.ran, ["notes.txt"])
        const replay = yield* Effect.promise(() => openSse(`${url}/api/react/events?conversation_id=ap5`))
        const done = replay.events[replay.events.length - 1]
        assert.deepStrictEqual([done.event, done.data.cancelled, done.data.answer], ["done", undefined, "Handled."])
      }),
    30_000
  )

  it.scopedLive(
    "cancel while waiting: done (cancelled), every call answered in the stored turn, a late decision is 409",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(writeRound)
        const file = fileTool()
        const { url } = yield* server(fake, file)
        let approvalId = ""
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "write my notes", conversation_id: "ap4" },
            onEvent: async (e) => {
              if (e.event === "approval" && e.data.status === "requested") {
                approvalId = e.data.approval_id
                await postJson(`${url}/api/react/cancel`, { conversation_id: "ap4" })
              }
            }
          })
        )
        const done = result.events[result.events.length - 1]
        assert.strictEqual(done.event, "done")
        assert.isTrue(done.data.cancelled)
        assert.deepStrictEqual(file.ran, [])
        assert.strictEqual(fake.requests.length, 1)
        const stored = yield* Effect.promise(() => getJson(`${url}/api/conversations/ap4`))
        const assistant = stored.body.messages.find((m: any) => m.role === "assistant" && m.tool_calls)
        const tools = stored.body.messages.filter((m: any) => m.role === "tool")
        assert.deepStrictEqual(tools.map((m: any) => m.tool_call_id), assistant.tool_calls.map((c: any) => c.id))
        const late = yield* Effect.promise(() =>
          postJson(`${url}/api/react/approve`, { conversation_id: "ap4", approval_id: approvalId, decision: "approve" })
        )
        assert.deepStrictEqual([late.status, late.body.error, late.body.status], [409, "already_decided", "cancelled"])
        assert.deepStrictEqual(file.ran, [])
      }),
    30_000
  )
})
