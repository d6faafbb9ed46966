/**
 * Durable runs on the embedded database: the real server process (`npm start`'s
 * main.ts) on a SQLite file, a fake OpenAI-compatible model in this process
 * whose replies are slow enough to kill in between, and a real MCP server whose
 * tools record every execution to a file. The server is killed with SIGKILL at
 * different points of a run and restarted on the same file; the run must
 * continue by itself, run no completed tool again, and a client reconnecting
 * with its last event id gets `resumed` once, the rest with continuing ids, and
 * `done`.
 *
 * The fake models give every request its own tool-call ids (`call_<request#>_<k>`)
 * and decide from the request's content (how many tool messages it carries), and
 * every test counts the model requests on both sides of the kill: a model asked
 * again for a reply it already gave shows up as a first request after the restart
 * without the stored history, and as new ids (SPEC §14 "stored before it counts").
 * The counts are printed at the end (kill-requests-sqlite.md in
 * `$KILL_MATRIX_REPORT_DIR` or the temporary directory).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import {
  answer,
  assertContinues,
  assertPaired,
  assertStartsFromStored,
  assertStoredOnce,
  reported,
  requestCountReport,
  resume,
  sqliteSetup,
  toolMessages,
  waitUntil
} from "../utils/killMatrix.js"
import { type ServerProcess, startServerProcess } from "../utils/serverProcess.js"
import { getJson, openSse, postJson, type SseEvent } from "../utils/sse.js"

const { freshCallId } = FakeOpenAi

const counts = requestCountReport(
  "Model requests of the durable SQLite tests, before and after the kill",
  "kill-requests-sqlite.md"
)
afterAll(() => counts.print())

/**
 * Opens a run and reads its events until `until` holds (checked on every event and every 25 ms,
 * so it may wait for something else than an event, e.g. a tool's `start` line), then kills the
 * server's process group. Returns the events the client had.
 */
const runUntilKill = async (
  server: ServerProcess,
  conversation: string,
  until: (seen: ReadonlyArray<SseEvent>) => boolean
) => {
  const seen: Array<SseEvent> = []
  let kill: Promise<void> | undefined
  const check = () => {
    if (kill === undefined && until(seen)) kill = server.kill("SIGKILL")
  }
  const poll = setInterval(check, 25)
  try {
    await openSse(`${server.url}/api/react`, {
      body: { query: "record something", conversation_id: conversation },
      timeoutMs: 30_000,
      onEvent: (e) => {
        seen.push(e)
        check()
      }
    }).catch(() => undefined)
  } finally {
    clearInterval(poll)
  }
  assert.isDefined(kill, `the run reached the kill point (events: ${seen.map((e) => e.event).join(",")})`)
  await kill
  return seen
}

const isToolStart = (e: SseEvent) => e.event === "step" && e.data.type === "iteration" && e.data.status === "start"

/** A tool's start event came, and the recorder has started it (it runs: the kill lands in it). */
const toolRunning =
  (s: { readonly records: () => ReadonlyArray<string> }, label: string) => (seen: ReadonlyArray<SseEvent>) =>
    seen.some(isToolStart) && s.records().includes(`start ${label}`)

/**
 * Kills the server after the third answer delta of a run whose answer is `words`, restarts it on the
 * same file and resumes: the client gets `reset`, then the whole answer again, stored once.
 * Returns the events on both sides of the kill, for checks of the scenario's own.
 */
const killDuringAnswer = async (
  env: Record<string, string>,
  conversation: string,
  words: ReadonlyArray<string>,
  killed: () => void
) => {
  const first = await startServerProcess(env)
  const before = await runUntilKill(
    first,
    conversation,
    (seen) => seen.filter((e) => e.event === "answer" && e.data.status === "delta").length >= 3
  )
  killed()
  assert.strictEqual(answer(before), words.slice(0, 3).join(""))
  const second = await first.restart()
  try {
    const after = await resume(second.url, conversation, before[before.length - 1].id!)
    assertContinues(before, after)
    const reset = after.findIndex((e) => e.event === "answer" && e.data.status === "reset")
    assert.isAtLeast(reset, 0)
    assert.strictEqual(answer(after.slice(reset)), words.join(""))
    assert.strictEqual(after[after.length - 1].data.answer, words.join(""))
    const stored = await assertStoredOnce(second.url, conversation)
    assert.strictEqual(
      stored[stored.length - 1].content,
      words.join(""),
      "the stored answer is the one streamed again, once"
    )
    return { before, after }
  } finally {
    await second.kill()
  }
}

describe("durable runs on SQLite (real server processes, SIGKILL)", () => {
  it.live(
    "kill -9 during a tool call: the call is not run twice (restart error), the run goes on and ends with done",
    () =>
      Effect.promise(async () => {
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText("It was recorded.")
          const tools = toolMessages(body).length
          return tools === 0
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "rec__record",
                arguments: JSON.stringify({ label: "t1", ms: 5000 })
              }],
              delayMs: 200
            })
            : FakeOpenAi.completion({ content: "done", delayMs: 200 })
        })
        const row = counts.track("kill -9 during a tool call", fake)
        const s = sqliteSetup(fake.url)
        try {
          await reported(row, async () => {
            const first = await startServerProcess(s.env)
            const before = await runUntilKill(first, "kill-tool", toolRunning(s, "t1"))
            const requestsBefore = row.killed()
            assert.deepStrictEqual(s.records(), ["start t1"], "the tool was running at the kill")
            assert.strictEqual(requestsBefore, 1, "one model request before the kill")
            const second = await first.restart()
            try {
              const after = await resume(second.url, "kill-tool", before[before.length - 1].id!)
              assertContinues(before, after)
              for (const r of fake.requests) assertPaired(r.body)
              // the model is not asked again for call 1: the first request carries its reply and the call's (restart) result
              assertStartsFromStored({ before, after, requestsBefore, requests: fake.requests })
              const toolDone = after.find((e) =>
                e.event === "step" && e.data.type === "iteration" && e.data.status === "done"
              )
              assert.include(toolDone?.data.error, "interrupted by a server restart; not retried")
              assert.deepStrictEqual(s.records(), ["start t1"], "the call in flight was not run again")
              const first_ = fake.requests[requestsBefore].body.messages
              assert.isTrue(first_.some((m: any) =>
                m.role === "tool" && m.tool_call_id === "call_1_0" &&
                String(m.content).includes("interrupted by a server restart")
              ))
              assert.strictEqual(
                fake.requests.length - requestsBefore,
                2,
                "after the restart: the loop call and the synthesis"
              )
              const stored = await getJson(`${second.url}/api/conversations/kill-tool`)
              assert.strictEqual(stored.body.turn_details[0].status, "completed")
              await assertStoredOnce(second.url, "kill-tool")
            } finally {
              await second.kill()
            }
          })
        } finally {
          await fake.close()
        }
      }),
    120_000
  )

  it.live("kill -9 during an idempotent tool call: it runs again, once more", () =>
    Effect.promise(async () => {
      const fake = await FakeOpenAi.start((body, index) => {
        if (body?.stream) return FakeOpenAi.sseText("Recorded twice, safely.")
        return toolMessages(body).length === 0
          ? FakeOpenAi.completion({
            toolCalls: [{
              id: freshCallId(index),
              name: "rec__record_idem",
              arguments: JSON.stringify({ label: "i1", ms: 4000 })
            }]
          })
          : FakeOpenAi.completion({ content: "done" })
      })
      const row = counts.track("kill -9 during an idempotent tool call", fake)
      const s = sqliteSetup(fake.url)
      try {
        await reported(row, async () => {
          const first = await startServerProcess(s.env)
          const before = await runUntilKill(first, "kill-idem", toolRunning(s, "i1"))
          const requestsBefore = row.killed()
          assert.deepStrictEqual(s.records(), ["start i1"], "the tool was running at the kill")
          assert.strictEqual(requestsBefore, 1, "one model request before the kill")
          const second = await first.restart()
          try {
            const after = await resume(second.url, "kill-idem", before[before.length - 1].id!)
            assertContinues(before, after)
            for (const r of fake.requests) assertPaired(r.body)
            assertStartsFromStored({ before, after, requestsBefore, requests: fake.requests })
            const toolDone = after.find((e) =>
              e.event === "step" && e.data.type === "iteration" && e.data.status === "done"
            )
            assert.strictEqual(toolDone?.data.observation, "recorded i1")
            assert.strictEqual(toolDone?.data.tool_call_id, "call_1_0", "the stored call runs again, not a new one")
            assert.deepStrictEqual(s.records(), ["start i1", "start i1", "end i1"])
            assert.strictEqual(
              fake.requests.length - requestsBefore,
              2,
              "after the restart: the loop call and the synthesis"
            )
            await assertStoredOnce(second.url, "kill-idem")
          } finally {
            await second.kill()
          }
        })
      } finally {
        await fake.close()
      }
    }), 120_000)

  it.live(
    "kill -9 after a tool round (during the next LLM call): the completed tool is not run again",
    () =>
      Effect.promise(async () => {
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText("Both recorded.")
          const tools = toolMessages(body).length
          if (tools === 0) {
            return FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "rec__record",
                arguments: JSON.stringify({ label: "a", ms: 100 })
              }]
            })
          }
          if (tools === 1) {
            return FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "rec__record",
                arguments: JSON.stringify({ label: "b", ms: 100 })
              }],
              delayMs: 3000
            })
          }
          return FakeOpenAi.completion({ content: "done" })
        })
        const row = counts.track("kill -9 after a tool round (during the next LLM call)", fake)
        const s = sqliteSetup(fake.url)
        try {
          await reported(row, async () => {
            const first = await startServerProcess(s.env)
            const before = await runUntilKill(first, "kill-llm", (seen) =>
              seen.some((e) =>
                e.event === "step" && e.data.type === "thinking" && e.data.status === "start" && e.data.iteration === 2
              ))
            const requestsBefore = row.killed()
            // the second call may or may not have been sent when the process died; its reply was not given
            assert.include([1, 2], requestsBefore)
            const second = await first.restart()
            try {
              const after = await resume(second.url, "kill-llm", before[before.length - 1].id!)
              assertContinues(before, after)
              for (const r of fake.requests) {
                assertPaired(r.body)
              }
              assertStartsFromStored({ before, after, requestsBefore, requests: fake.requests })
              assert.deepStrictEqual(
                s.records(),
                ["start a", "end a", "start b", "end b"],
                "the completed tool is not run again"
              )
              assert.strictEqual(
                fake.requests.length - requestsBefore,
                3,
                "after the restart: loop calls 2 and 3, the synthesis"
              )
              assert.include(answer(after), "Both recorded.")
              const stored = await assertStoredOnce(second.url, "kill-llm")
              assert.strictEqual(
                stored.filter((m) =>
                  m.role === "tool"
                ).length,
                2
              )
            } finally {
              await second.kill()
            }
          })
        } finally {
          await fake.close()
        }
      }),
    120_000
  )

  it.live(
    "kill -9 during synthesis: the client gets answer reset, then the whole answer again",
    () =>
      Effect.promise(async () => {
        const words = Array.from({ length: 30 }, (_, i) => `w${i} `)
        let killed = false
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) {
            return FakeOpenAi.sse([...words.map((w) => FakeOpenAi.chunk.content(w)), FakeOpenAi.chunk.finish("stop")], {
              chunkDelayMs: killed ? 5 : 150
            })
          }
          return toolMessages(body).length === 0
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "rec__record",
                arguments: JSON.stringify({ label: "y", ms: 100 })
              }]
            })
            : FakeOpenAi.completion({ content: "draft" })
        })
        const row = counts.track("kill -9 during synthesis", fake)
        const s = sqliteSetup(fake.url)
        try {
          await reported(row, async () => {
            let requestsBefore = 0
            const { after, before } = await killDuringAnswer(s.env, "kill-answer", words, () => {
              requestsBefore = row.killed()
              killed = true
            })
            assert.strictEqual(requestsBefore, 3, "two loop calls and the synthesis before the kill")
            assertStartsFromStored({ before, after, requestsBefore, requests: fake.requests })
            assert.strictEqual(fake.requests.length - requestsBefore, 1, "after the restart: the synthesis alone")
            assert.deepStrictEqual(s.records(), ["start y", "end y"], "the completed tool is not run again")
          })
        } finally {
          await fake.close()
        }
      }),
    120_000
  )

  it.live(
    "kill -9 while an interrupt is queued: after the restart it is taken in, and the run finishes by itself",
    () =>
      Effect.promise(async () => {
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText("Handled the follow-up.")
          const tools = toolMessages(body).length
          return tools === 0
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "rec__record_idem",
                arguments: JSON.stringify({ label: "q", ms: 4000 })
              }]
            })
            : FakeOpenAi.completion({ content: "done" })
        })
        const row = counts.track("kill -9 while an interrupt is queued", fake)
        const s = sqliteSetup(fake.url)
        try {
          await reported(row, async () => {
            const first = await startServerProcess(s.env)
            const seen: Array<SseEvent> = []
            const stream = openSse(`${first.url}/api/react`, {
              body: { query: "record something", conversation_id: "kill-inject-2" },
              timeoutMs: 30_000,
              onEvent: (e) => void seen.push(e)
            }).catch(() => undefined)
            await waitUntil(() => toolRunning(s, "q")(seen), 15_000, "the tool to start")
            const queued = await postJson(`${first.url}/api/react/inject`, {
              conversation_id: "kill-inject-2",
              content: "also note the time"
            })
            assert.strictEqual(queued.status, 200)
            await first.kill("SIGKILL")
            await stream
            const requestsBefore = row.killed()
            assert.strictEqual(requestsBefore, 1, "one model request before the kill")
            const second = await first.restart()
            try {
              // nobody reconnects: the run finishes by itself
              await waitUntil(
                async () => (await getJson(`${second.url}/api/conversations/kill-inject-2`)).body?.active === false,
                60_000,
                "the run to finish"
              )
              const after = await resume(second.url, "kill-inject-2", seen[seen.length - 1].id!)
              assertContinues(seen, after)
              const inject = after.find((e) => e.event === "inject")
              assert.strictEqual(inject?.data.content, "also note the time")
              assertStartsFromStored({ before: seen, after, requestsBefore, requests: fake.requests })
              assert.strictEqual(
                fake.requests.length - requestsBefore,
                2,
                "after the restart: the loop call and the synthesis"
              )
              const last = fake.requests[requestsBefore].body
              assert.isTrue(
                last.messages.some((m: any) =>
                  m.role === "user" && String(m.content).startsWith("[USER INTERRUPT]") &&
                  String(m.content).includes("also note the time")
                ),
                "the loop call after the restart carries the interrupt"
              )
              const stored = await assertStoredOnce(second.url, "kill-inject-2")
              assert.strictEqual(
                stored.filter((m) => m.role === "user" && String(m.content).includes("also note the time")).length,
                1
              )
            } finally {
              await second.kill()
            }
          })
        } finally {
          await fake.close()
        }
      }),
    120_000
  )

  it.live(
    "synthesis auto: kill -9 while the answer streams from the loop call: reset, the answer again, no synthesis call",
    () =>
      Effect.promise(async () => {
        const words = Array.from({ length: 30 }, (_, i) => `v${i} `)
        let killed = false
        const fake = await FakeOpenAi.start((body, index) =>
          toolMessages(body).length === 0
            ? FakeOpenAi.sse([
              FakeOpenAi.chunk.role(),
              FakeOpenAi.chunk.toolCall(0, {
                id: freshCallId(index),
                name: "rec__record",
                arguments: JSON.stringify({ label: "s", ms: 100 })
              }),
              FakeOpenAi.chunk.finish("tool_calls")
            ])
            : FakeOpenAi.sse([...words.map((w) => FakeOpenAi.chunk.content(w)), FakeOpenAi.chunk.finish("stop")], {
              chunkDelayMs: killed ? 5 : 150
            })
        )
        const row = counts.track("synthesis auto: kill -9 while the answer streams from the loop call", fake)
        const s = sqliteSetup(fake.url)
        const env = { ...s.env, REACT_SYNTHESIS: "auto" }
        try {
          await reported(row, async () => {
            let requestsBefore = 0
            const { after, before } = await killDuringAnswer(env, "kill-auto", words, () => {
              requestsBefore = row.killed()
              killed = true
            })
            assert.strictEqual(requestsBefore, 2, "two loop calls before the kill")
            assertStartsFromStored({ before, after, requestsBefore, requests: fake.requests })
            assert.strictEqual(
              fake.requests.length - requestsBefore,
              1,
              "after the restart: the second loop call alone"
            )
            assert.isTrue(fake.requests.every((r) => r.body?.stream === true), "every loop call streams")
            assert.isFalse(
              fake.requests.some((r) =>
                String(r.body?.messages?.[0]?.content ?? "").startsWith("You write the final answer")
              ),
              "no synthesis call"
            )
            assert.deepStrictEqual(s.records(), ["start s", "end s"], "the completed tool is not run again")
          })
        } finally {
          await fake.close()
        }
      }),
    120_000
  )

  it.live(
    "kill -9 with a client attached, nobody reconnects: the detach grace cancels the resumed run",
    () =>
      Effect.promise(async () => {
        const fake = await FakeOpenAi.start((body, index) =>
          body?.stream
            ? FakeOpenAi.sseText("never")
            : FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "rec__record_idem",
                arguments: JSON.stringify({ label: "g", ms: 20_000 })
              }]
            })
        )
        const row = counts.track("kill -9 with a client attached, nobody reconnects (detach grace)", fake)
        const s = sqliteSetup(fake.url)
        const env = { ...s.env, RUN_DETACH_GRACE_MS: "1500" }
        try {
          await reported(row, async () => {
            const first = await startServerProcess(env)
            const before = await runUntilKill(first, "kill-grace", toolRunning(s, "g"))
            const requestsBefore = row.killed()
            assert.strictEqual(requestsBefore, 1, "one model request before the kill")
            const second = await first.restart()
            try {
              // the lease of the client of the dead process is gone: the grace runs from the restart
              await waitUntil(
                async () => (await getJson(`${second.url}/api/conversations/kill-grace`)).body?.active === false,
                15_000,
                "the grace to cancel the run"
              )
              const after = await resume(second.url, "kill-grace", before[before.length - 1].id!)
              const done = after[after.length - 1]
              assert.deepStrictEqual([done.event, done.data.cancelled], ["done", true])
              assert.include(second.output(), "no client re-attached within 1500 ms")
              // the stored reply is not asked for again: the call (idempotent) ran again and was cancelled
              assert.strictEqual(fake.requests.length, requestsBefore, "no model request after the restart")
              assert.isFalse(
                s.records().some((l) => l.startsWith("end g")),
                "the call (idempotent: it may run again) was cancelled"
              )
            } finally {
              await second.kill()
            }
          })
        } finally {
          await fake.close()
        }
      }),
    120_000
  )

  it.live(
    "kill -9 while a call waits for approval: after the restart it still waits, an approval runs it once",
    () =>
      Effect.promise(async () => {
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText("Recorded after approval.")
          return toolMessages(body).length === 0
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "rec__record",
                arguments: JSON.stringify({ label: "ap", ms: 100 })
              }]
            })
            : FakeOpenAi.completion({ content: "done" })
        })
        const row = counts.track("kill -9 while a call waits for approval", fake)
        const s = sqliteSetup(fake.url)
        const env = { ...s.env, REACT_APPROVAL_TOOLS: "rec__record" }
        try {
          await reported(row, async () => {
            const first = await startServerProcess(env)
            const before = await runUntilKill(first, "kill-approval", (seen) =>
              seen.some((e) =>
                e.event === "approval" && e.data.status === "requested"
              ))
            const requestsBefore = row.killed()
            assert.strictEqual(requestsBefore, 1, "one model request before the kill")
            const requested = before.find((e) => e.event === "approval" && e.data.status === "requested")!.data
            assert.deepStrictEqual(s.records(), [], "nothing runs before the approval")
            const second = await first.restart()
            try {
              // the restarted run waits for the same approval (same id): a person answers it now
              await waitUntil(
                async () => {
                  const list = await getJson(`${second.url}/api/conversations`)
                  return (list.body?.conversations ?? []).some((c: any) =>
                    c.id === "kill-approval" && c.waiting_approval === true
                  )
                },
                30_000,
                "the restarted run to wait for the approval"
              )
              const answer = await postJson(`${second.url}/api/react/approve`, {
                conversation_id: "kill-approval",
                approval_id: requested.approval_id,
                decision: "approve"
              })
              assert.strictEqual(answer.status, 200, JSON.stringify(answer.body))
              const after = await resume(second.url, "kill-approval", before[before.length - 1].id!)
              assertContinues(before, after)
              assert.isTrue(after.some((e) => e.event === "approval" && e.data.status === "approved"))
              assert.deepStrictEqual(s.records(), ["start ap", "end ap"], "approved once, run once")
              assertStartsFromStored({ before, after, requestsBefore, requests: fake.requests })
              assert.strictEqual(
                fake.requests.length - requestsBefore,
                2,
                "after the restart: the loop call and the synthesis"
              )
              const again = await postJson(`${second.url}/api/react/approve`, {
                conversation_id: "kill-approval",
                approval_id: requested.approval_id,
                decision: "approve"
              })
              assert.strictEqual(again.status, 409)
            } finally {
              await second.kill()
            }
          })
        } finally {
          await fake.close()
        }
      }),
    120_000
  )
})
