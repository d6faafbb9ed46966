/**
 * Forks (and cassettes) reproduce what was stored, including a call a kill cut (issue 46 item
 * 7): the real server on SQLite runs the kill matrix's run, is killed (SIGKILL,
 * its process group) while the slow tool — not idempotent — runs, restarts and
 * finishes the run, which answers the cut call `interrupted by a server
 * restart; not retried`. Then the run is forked:
 * - at `done` (the default): every step comes from storage — no model request,
 *   no tool execution (the recorder's file is the count), the cut call still
 *   answered with the restart error, the same answer;
 * - at the cut call (`tool_call_id`, its `iteration done`): the cut comes from
 *   storage as it was stored (the slow tool does not run), what follows runs
 *   live.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import {
  isEvent,
  KILL_POINTS,
  MATRIX_ANSWER,
  MATRIX_WORDS,
  matrixModel,
  resume,
  runToKillPoint,
  sqliteSetup
} from "../utils/killMatrix.js"
import { type ServerProcess, startServerProcess } from "../utils/serverProcess.js"
import { getJson, postJson, type SseEvent } from "../utils/sse.js"

const RESTART_ERROR = "interrupted by a server restart; not retried"

const toolDone = (events: ReadonlyArray<SseEvent>, tool: string) =>
  events.find((e) => isEvent(e, "step", { type: "iteration", status: "done", tool_name: tool }))

describe("fork of a run whose tool call a kill cut (SQLite, real server processes)", () => {
  it.live(
    "at done: no model request, no tool runs, the cut call stays interrupted; at the cut call: it stays interrupted, the rest runs live",
    () =>
      Effect.promise(async () => {
        let killed = false
        const point = KILL_POINTS.find((p) => p.name === "during the slow tool")!
        const fake = await FakeOpenAi.start(
          matrixModel({ slow: point.slow, killed: () => killed, words: MATRIX_WORDS })
        )
        const s = sqliteSetup(fake.url)
        const servers: Array<ServerProcess> = []
        try {
          const first = await startServerProcess(s.env)
          servers.push(first)
          const before = await runToKillPoint({
            url: first.url,
            conversation: "cut",
            point,
            state: () => ({ requests: fake.requests.length, records: s.records() }),
            kill: () => first.kill("SIGKILL")
          })
          killed = true
          const second = await first.restart()
          servers.push(second)
          const after = await resume(second.url, "cut", before[before.length - 1].id)
          const original = [...before, ...after]
          const cutDone = toolDone(original, "rec__record")
          assert.include(
            cutDone?.data.error,
            RESTART_ERROR,
            "the original run answered the cut call with the restart error"
          )
          assert.deepStrictEqual(s.records(), ["start slow", "start fast", "end fast"])

          // the run's cassette holds the cut call as the run answered it
          const cassette = await getJson(`${second.url}/api/conversations/cut/runs/latest/cassette`)
          assert.strictEqual(cassette.status, 200)
          assert.deepStrictEqual(
            cassette.body.tool_calls.map((t: any) => [t.tool_call_id, t.outcome]),
            [[cutDone!.data.tool_call_id, { _tag: "Failure", message: RESTART_ERROR }], [
              toolDone(original, "rec__record_idem")!.data.tool_call_id,
              { _tag: "Success", output: "recorded fast" }
            ]]
          )

          // at done: a copy made from storage
          const requests = fake.requests.length
          const records = s.records()
          const atDone = await postJson(`${second.url}/api/conversations/cut/fork`, {})
          assert.strictEqual(atDone.status, 201, JSON.stringify(atDone.body))
          const copy = await resume(second.url, atDone.body.conversation_id, undefined)
          assert.strictEqual(copy[copy.length - 1]?.event, "done", "the fork's run ends")
          assert.strictEqual(fake.requests.length - requests, 0, "a fork at done asks the model nothing")
          assert.deepStrictEqual(s.records(), records, "a fork at done runs no tool")
          assert.include(toolDone(copy, "rec__record")?.data.error, RESTART_ERROR, "the cut call stays interrupted")
          assert.strictEqual(toolDone(copy, "rec__record_idem")?.data.observation, "recorded fast")
          assert.strictEqual(copy[copy.length - 1].data.answer, MATRIX_ANSWER)

          // at the cut call: its outcome from storage, the next model call and the fast tool live
          const atCall = await postJson(`${second.url}/api/conversations/cut/fork`, {
            tool_call_id: cutDone!.data.tool_call_id
          })
          assert.strictEqual(atCall.status, 201, JSON.stringify(atCall.body))
          const branch = await resume(second.url, atCall.body.conversation_id, undefined)
          assert.strictEqual(branch[branch.length - 1]?.event, "done")
          assert.include(toolDone(branch, "rec__record")?.data.error, RESTART_ERROR, "the cut call stays interrupted")
          assert.deepStrictEqual(
            s.records().slice(records.length),
            ["start fast", "end fast"],
            "only the live part ran a tool"
          )
          assert.isAbove(fake.requests.length - requests, 0, "the part after the fork point asks the model")
          // the first live request carries the cut call's stored answer
          const next = fake.requests[requests].body
          const cutMessage = (next.messages as Array<any>).find((m) =>
            m.role === "tool" && m.tool_call_id === cutDone!.data.tool_call_id
          )
          assert.include(String(cutMessage?.content), RESTART_ERROR)
        } finally {
          await Promise.all(servers.map((p) => p.kill()))
          await fake.close()
        }
      }),
    240_000
  )
})
