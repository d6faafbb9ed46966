/**
 * SIGTERM keeps the outcomes of the tool calls in flight (issue 32, "Shutdown loses a
 * truth"; SPEC §14). The real server process (`src/app/main.ts`) on a SQLite file, a fake
 * OpenAI-compatible model in this process that gives every request its own tool-call ids,
 * and a real MCP server whose tools append `start <label>` / `end <label>` to a file.
 *
 * - Four parallel calls are running when the server gets SIGTERM; each finishes inside
 *   the shutdown grace (`SHUTDOWN_GRACE_MS`). The server waits for them, stores their
 *   outcomes, asks the model nothing more and exits. After the restart the run resumes:
 *   the model gets the four real results (not "interrupted by a server restart"), no tool
 *   ran twice, the run ends with one `done`.
 * - A call that outlives the grace is the restart case: it is answered `interrupted by a
 *   server restart; not retried` after the restart, while the call of the same round that
 *   finished inside the grace keeps its real result.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import {
  assertContinues,
  assertOneOutcomePerCall,
  assertPaired,
  assertStoredOnce,
  reported,
  requestCountReport,
  resume,
  type SqliteSetup,
  sqliteSetup,
  toolMessages,
  waitUntil
} from "../utils/killMatrix.js"
import { type ServerProcess, startServerProcess } from "../utils/serverProcess.js"
import { openSse, type SseEvent } from "../utils/sse.js"

const { freshCallId } = FakeOpenAi
const RESTART_ERROR = "interrupted by a server restart; not retried"

const counts = requestCountReport(
  "Model requests of the shutdown-grace tests, before and after SIGTERM",
  "shutdown-grace-requests.md"
)
afterAll(() => counts.print())

const isToolDone = (e: SseEvent) => e.event === "step" && e.data.type === "iteration" && e.data.status === "done"

/** The run's query: the first user message of a request. */
const queryOf = (body: any): string => String((body?.messages ?? []).find((m: any) => m.role === "user")?.content ?? "")

/**
 * A fake model: the first request of the run whose query is `q` gets the calls `calls[q]`
 * (label, ms), in parallel; the next one the answer.
 */
const model = (calls: Record<string, ReadonlyArray<readonly [string, number]>>) =>
  FakeOpenAi.start((body, index) => {
    if (body?.stream) return FakeOpenAi.sseText("All recorded.")
    return toolMessages(body).length === 0
      ? FakeOpenAi.completion({
        toolCalls: (calls[queryOf(body)] ?? []).map(([label, ms], k) => ({
          id: freshCallId(index, k),
          name: "rec__record",
          arguments: JSON.stringify({ label, ms })
        }))
      })
      : FakeOpenAi.completion({ content: "done" })
  })

/**
 * Opens the runs (conversation → query), sends SIGTERM once every label has started (the
 * recorder wrote `start <label>`), and reads the streams until the server ends them. Returns
 * the events each client had (those with an id), the last frame of each stream and how long
 * the server took to exit after the signal.
 */
const runUntilSigterm = async (
  server: ServerProcess,
  s: SqliteSetup,
  runs: Record<string, string>,
  labels: ReadonlyArray<string>
) => {
  const events = new Map<string, Array<SseEvent>>()
  let stop: Promise<number> | undefined
  const poll = setInterval(() => {
    if (stop !== undefined || !labels.every((l) => s.records().includes(`start ${l}`))) return
    const sent = Date.now()
    stop = server.kill("SIGTERM").then(() => Date.now() - sent)
  }, 20)
  try {
    await Promise.all(
      Object.entries(runs).map(([conversation, query]) => {
        const seen: Array<SseEvent> = []
        events.set(conversation, seen)
        return openSse(`${server.url}/api/react`, {
          body: { query, conversation_id: conversation },
          timeoutMs: 60_000,
          onEvent: (e) => void seen.push(e)
        }).catch(() => undefined)
      })
    )
    await waitUntil(() => stop !== undefined, 30_000, "SIGTERM sent")
  } finally {
    clearInterval(poll)
  }
  const exitMs = await stop!
  const before = (conversation: string) => (events.get(conversation) ?? []).filter((e) => e.id !== undefined)
  const streamEnd = (conversation: string) => events.get(conversation)?.at(-1)
  return { before, exitMs, streamEnd }
}

describe("SIGTERM with tool calls in flight (real server processes)", () => {
  it.live(
    "four calls finish inside the grace: their real outcomes are stored, none runs again, one done",
    () =>
      Effect.promise(async () => {
        const labels = ["g1", "g2", "g3", "g4"]
        const fake = await model({ "record something": labels.map((l, i) => [l, 1500 + 200 * i] as const) })
        const row = counts.track("four calls finishing inside the grace", fake)
        const s = sqliteSetup(fake.url)
        try {
          await reported(row, async () => {
            const first = await startServerProcess({ ...s.env, SHUTDOWN_GRACE_MS: "15000" })
            const sigterm = await runUntilSigterm(first, s, { "grace-all": "record something" }, labels)
            const { exitMs } = sigterm
            const before = sigterm.before("grace-all")
            const requestsBefore = row.killed()
            // the grace: every call ran to its end before the process exited
            assert.deepStrictEqual(
              s.records().filter((l) => l.startsWith("end ")).sort(),
              labels.map((l) => `end ${l}`)
            )
            assert.strictEqual(requestsBefore, 1, "the model is asked nothing more during the grace")
            assert.isBelow(exitMs, 15_000, `the server exited ${exitMs} ms after SIGTERM (grace 15 s, calls ≤ 2.1 s)`)
            assert.strictEqual(
              sigterm.streamEnd("grace-all")?.event,
              "error",
              "the client's stream ends with the shutdown frame"
            )
            assert.match(first.output(), /shutdown: 4 tool calls of 4 in flight finished in \d+\.\d\d s(?!;)/)
            const second = await first.restart()
            try {
              const after = await resume(second.url, "grace-all", before[before.length - 1].id!)
              assertContinues(before, after)
              assertOneOutcomePerCall([...before, ...after])
              const outcomes = [...before, ...after].filter(isToolDone)
              assert.deepStrictEqual(
                outcomes.map((e) => e.data.observation).sort(),
                labels.map((l) => `recorded ${l}`),
                `the real outcomes, not the restart error: ${
                  outcomes.map((e) => e.data.error ?? e.data.observation).join(" | ")
                }`
              )
              assert.isTrue(outcomes.every((e) => e.data.error === null))
              // the model gets the four results with the calls it gave before the signal
              assert.strictEqual(
                fake.requests.length - requestsBefore,
                2,
                "after the restart: the loop call and the synthesis"
              )
              const next = fake.requests[requestsBefore].body
              assertPaired(next)
              const results = toolMessages(next)
              assert.deepStrictEqual(
                results.map((m: any) => m.tool_call_id).sort(),
                labels.map((_, k) => freshCallId(0, k))
              )
              for (const m of results) assert.notInclude(String(m.content), RESTART_ERROR)
              assert.deepStrictEqual(
                results.map((m: any) => String(m.content)).sort(),
                labels.map((l) => `recorded ${l}`)
              )
              // no tool ran twice
              assert.deepStrictEqual([...s.records()].sort(), [
                ...labels.map((l) => `end ${l}`),
                ...labels.map((l) => `start ${l}`)
              ])
              await assertStoredOnce(second.url, "grace-all")
            } finally {
              await second.kill()
            }
          })
        } finally {
          await fake.close()
        }
      }),
    180_000
  )

  it.live(
    "a call that outlives the grace is the restart case; a run whose call finished waits, keeping its outcome",
    () =>
      Effect.promise(async () => {
        const fake = await model({ "record quick": [["quick", 300]], "record slow": [["slow", 20_000]] })
        const row = counts.track("one call outliving the grace, one run finishing its call", fake)
        const s = sqliteSetup(fake.url)
        const runs = { "grace-quick": "record quick", "grace-slow": "record slow" }
        try {
          await reported(row, async () => {
            const first = await startServerProcess({ ...s.env, SHUTDOWN_GRACE_MS: "1500" })
            const sigterm = await runUntilSigterm(first, s, runs, ["quick", "slow"])
            const requestsBefore = row.killed()
            // the quick run's call ended 300 ms into the grace; the run then waited (no new model call)
            assert.strictEqual(
              requestsBefore,
              2,
              `one model request per run before the restart: ${fake.requests.map((r) => queryOf(r.body)).join(", ")}`
            )
            assert.include(s.records(), "end quick")
            assert.notInclude(s.records(), "end slow", "the slow call was cut by the shutdown")
            assert.isAtLeast(sigterm.exitMs, 1500, "the server waited the grace for the slow call")
            assert.isBelow(
              sigterm.exitMs,
              12_000,
              `the server exited ${sigterm.exitMs} ms after SIGTERM (grace 1.5 s; the slow call takes 20 s)`
            )
            assert.match(
              first.output(),
              /shutdown: 1 tool call of 2 in flight finished in \d+\.\d\d s; 1 call still running at the end of the grace \(SHUTDOWN_GRACE_MS=1500\)/
            )
            const second = await first.restart()
            try {
              for (const [conversation, query] of Object.entries(runs)) {
                const before = sigterm.before(conversation)
                const after = await resume(second.url, conversation, before.at(-1)?.id)
                assertContinues(before, after)
                assertOneOutcomePerCall([...before, ...after])
                const outcomes = [...before, ...after].filter(isToolDone)
                assert.strictEqual(outcomes.length, 1)
                const outcome = outcomes[0]
                const next = fake.requests.slice(requestsBefore).find((r) =>
                  !r.body?.stream && queryOf(r.body) === query
                )?.body
                assertPaired(next)
                const result = String(
                  toolMessages(next).find((m: any) => m.tool_call_id === outcome.data.tool_call_id)?.content
                )
                if (conversation === "grace-quick") {
                  assert.strictEqual(outcome.data.observation, "recorded quick")
                  assert.strictEqual(result, "recorded quick")
                } else {
                  assert.include(outcome.data.error, RESTART_ERROR)
                  assert.include(result, RESTART_ERROR)
                }
                await assertStoredOnce(second.url, conversation, query)
              }
              // neither call ran again
              assert.deepStrictEqual(s.records().filter((l) => l.startsWith("start ")).sort(), [
                "start quick",
                "start slow"
              ])
              assert.strictEqual(
                fake.requests.length - requestsBefore,
                4,
                "after the restart: each run's loop call and synthesis"
              )
            } finally {
              await second.kill()
            }
          })
        } finally {
          await fake.close()
        }
      }),
    180_000
  )
})
