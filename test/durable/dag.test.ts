/**
 * Durable DAG runs on the embedded database: the real server process on a
 * SQLite file, a fake OpenAI-compatible model that plans two independent steps
 * (A: a fast recording tool call, B: a slow one), a real MCP server whose tool
 * records every execution to a file. The server is killed with SIGKILL during
 * step B, after step A ended, and restarted on the same file and port; the run
 * must continue by itself: the planner is not asked again, step A (its model
 * calls and its tool) is not run again, step B's loop resumes from its stored
 * model reply (its tool call in flight, not idempotent, is answered with the
 * restart error), and the client resuming with its last event id gets
 * `resumed` once, continuing ids and `done` with the answer.
 *
 * The fake gives every request's tool calls ids of their own
 * (`call_<request#>_<k>`): a model asked again would show up as new ids.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { sqliteSetup } from "../utils/killMatrix.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse, type SseEvent } from "../utils/sse.js"

const RESTART_ERROR = "interrupted by a server restart; not retried"
const ANSWER = "Both labels were recorded."

/** The `k`-th tool call of the reply to request `index` (0-based): an id no other request gets. */
const callId = (index: number, k = 0) => `call_${index + 1}_${k}`

const textOf = (body: any): string =>
  (body?.messages ?? []).map((m: any) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? "")))
    .join("\n")
const toolMessages = (body: any): Array<any> => (body?.messages ?? []).filter((m: any) => m.role === "tool")
const forced = (body: any): string | undefined => body?.tool_choice?.function?.name
/** The step a request belongs to (its query names it), if any. */
const stepOf = (body: any): string | undefined => /Your task \(step (\w+)\)/.exec(textOf(body))?.[1]

const PLAN = {
  steps: [{ id: "A", task: "Record the label a", dependencies: [] }, {
    id: "B",
    task: "Record the label b",
    dependencies: []
  }]
}
const TOOL = { A: { label: "a", ms: 100 }, B: { label: "b", ms: 20_000 } } as const

const responder: FakeOpenAi.FakeResponder = (body, index) => {
  if (forced(body) === "create_plan") {
    return FakeOpenAi.completion({
      toolCalls: [{ id: callId(index), name: "create_plan", arguments: JSON.stringify(PLAN) }],
      delayMs: 100
    })
  }
  if (forced(body) === "report_analysis") {
    return FakeOpenAi.completion({
      toolCalls: [{
        id: callId(index),
        name: "report_analysis",
        arguments: JSON.stringify({ achieved: true, confidence: 1, reasoning: "both recorded" })
      }]
    })
  }
  const step = stepOf(body) as keyof typeof TOOL | undefined
  if (step !== undefined) {
    // REACT_SYNTHESIS=always: a step's streamed request is its synthesis
    if (body?.stream) return FakeOpenAi.sseText(`Step ${step} is recorded.`)
    if (toolMessages(body).length === 0) {
      return FakeOpenAi.completion({
        toolCalls: [{ id: callId(index), name: "rec__record", arguments: JSON.stringify(TOOL[step]) }],
        delayMs: 50
      })
    }
    return FakeOpenAi.completion({ content: `Step ${step} done.` })
  }
  if (body?.stream) return FakeOpenAi.sseText(ANSWER)
  return FakeOpenAi.completion({ content: "unexpected request" })
}

const waitUntil = async (predicate: () => boolean, timeoutMs: number, what: string) => {
  const started = Date.now()
  while (!predicate()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

const isStepEnd = (e: SseEvent, id: string) =>
  e.event === "dag" && e.data.type === "step" && e.data.step_id === id && e.data.status !== "start"

describe("durable DAG runs on SQLite (real server processes, SIGKILL)", () => {
  it.live(
    "kill -9 during a step: the run continues, no finished step runs again, the planner is asked once",
    () =>
      Effect.promise(async () => {
        const fake = await FakeOpenAi.start(responder)
        // a SQLite file and the recording MCP tool (the record file lists every real execution)
        const { env, records } = sqliteSetup(fake.url)
        const conversation = "kill-dag-step"
        try {
          const first = await startServerProcess(env)
          // read the run until step A ended and step B's tool runs, then kill -9
          const before: Array<SseEvent> = []
          let kill: Promise<void> | undefined
          await openSse(`${first.url}/api/react`, {
            body: { query: "record a and b", conversation_id: conversation, mode: "dag" },
            timeoutMs: 60_000,
            onEvent: (e) => {
              before.push(e)
              if (kill === undefined && isStepEnd(e, "A")) {
                kill = waitUntil(() => records().includes("start b"), 15_000, "step B's tool to start").then(() =>
                  first.kill("SIGKILL")
                )
              }
            }
          }).catch(() => undefined)
          assert.isDefined(kill, "step A ended before the kill")
          await kill
          assert.isFalse(before.some((e) => isStepEnd(e, "B")), "killed during step B")
          assert.deepStrictEqual([...records()].sort(), ["end a", "start a", "start b"])
          const requestsBefore = fake.requests.length
          const stepARequests = fake.requests.filter((r) => stepOf(r.body) === "A").length

          const second = await startServerProcess({ ...env, PORT: String(first.port) })
          try {
            const after = (await openSse(`${second.url}/api/react/events?conversation_id=${conversation}`, {
              headers: { "last-event-id": before[before.length - 1].id! },
              timeoutMs: 60_000
            })).events
            // one cursor: ids continue, `resumed` once, `done` last with the answer
            const ids = [...before, ...after].map((e) => Number(e.id))
            ids.forEach((id, i) => assert.strictEqual(id, i + 1, `event ids continue: ${ids.join(",")}`))
            assert.strictEqual(after.filter((e) => e.event === "phase" && e.data.phase === "resumed").length, 1)
            const done = after[after.length - 1]
            assert.strictEqual(done.event, "done")
            assert.strictEqual(done.data.answer, ANSWER)
            assert.isUndefined([...before, ...after].find((e) => e.event === "error"), "no error event")

            // the planner was asked once; step A's calls and tool ran once
            const requests = fake.requests.map((r) => r.body)
            assert.strictEqual(requests.filter((b) => forced(b) === "create_plan").length, 1, "one planner request")
            assert.strictEqual(
              requests.filter((b) => stepOf(b) === "A").length,
              stepARequests,
              "step A's model is not asked again"
            )
            assert.deepStrictEqual(
              [...records()].sort(),
              ["end a", "start a", "start b"],
              "no tool ran again (B's call in flight is not idempotent)"
            )
            assert.isFalse(
              after.some((e) => e.event === "dag" && e.data.type === "step" && e.data.step_id === "A"),
              "step A's events are not sent again"
            )

            // step B resumed from its stored model reply: its next request carries the call and the restart error
            const resumedB = requests.slice(requestsBefore).filter((b) => stepOf(b) === "B" && !b.stream)
            assert.isAtLeast(resumedB.length, 1)
            for (const b of resumedB) {
              const tools = toolMessages(b)
              assert.strictEqual(tools.length, 1, "step B is not asked again from scratch")
              assert.include(tools[0].content, RESTART_ERROR)
              const call = (b.messages as Array<any>).find((m) => m.role === "assistant")?.tool_calls?.[0]
              assert.strictEqual(call?.id, tools[0].tool_call_id)
            }
            const toolDoneB = after.find((e) =>
              e.event === "step" && e.data.type === "iteration" && e.data.status === "done" && e.data.step_id === "B"
            )
            assert.include(toolDoneB?.data.error, RESTART_ERROR)
            assert.strictEqual(after.find((e) => isStepEnd(e, "B"))?.data.status, "done")
            // the run's stored turn: the query and the answer
            const stored = await fetch(`${second.url}/api/conversations/${conversation}`).then((r) => r.json())
            assert.deepStrictEqual(stored.messages.map((m: any) => m.role), ["user", "assistant"])
            assert.strictEqual(stored.messages[1].content, ANSWER)
          } finally {
            await second.kill()
          }
        } finally {
          await fake.close()
        }
      }),
    180_000
  )
})
