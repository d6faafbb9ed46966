/**
 * The kill-point matrix on the embedded database (SPEC §14 "stored before it
 * counts", issue 26): a 3-iteration run — a slow tool, a fast tool, then the
 * answer — of the real server process (`npm start`'s main.ts) on a SQLite file,
 * with a real MCP recorder tool, killed with SIGKILL (its whole process group,
 * MCP children included) at each point of the table in test/utils/killMatrix.ts,
 * restarted as `npm start` would be (same port, same environment, same file),
 * and resumed by the client with its last event id. For every point: the model
 * requests after the restart start from the stored history, no completed tool
 * runs again, event ids continue, one `resumed`, `done`, and the stored
 * conversation is paired and without duplicates.
 *
 * Each point has its own server process, file and fake model; points run a
 * few at a time (`KILL_MATRIX_CONCURRENCY`, default 3). The table of results is
 * printed at the end (and written to `$KILL_MATRIX_REPORT_DIR` or the temporary
 * directory as kill-matrix-sqlite.md).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import {
  assertKillPoint,
  describeIds,
  describeRecords,
  KILL_POINTS,
  type KillPoint,
  limit,
  MATRIX_WORDS,
  matrixModel,
  matrixReport,
  resume,
  runToKillPoint,
  shape,
  sqliteSetup,
  waitUntil
} from "../utils/killMatrix.js"
import { type ServerProcess, startServerProcess } from "../utils/serverProcess.js"
import { getJson, postJson } from "../utils/sse.js"

const report = matrixReport(
  "Kill-point matrix, SQLite (one process, kill -9 of its group, restart on the same file and port)",
  "kill-matrix-sqlite.md"
)
afterAll(() => report.print())

const slots = limit(Number(process.env.KILL_MATRIX_CONCURRENCY ?? 3))

/** Runs the matrix's run until `point`, kills the process group, restarts, resumes; then checks the point. */
const killAt = (point: KillPoint, conversation: string) =>
  slots(async () => {
    const started = Date.now()
    let killed = false
    const fake = await FakeOpenAi.start(matrixModel({ slow: point.slow, killed: () => killed, words: MATRIX_WORDS }))
    const s = sqliteSetup(fake.url)
    const servers: Array<ServerProcess> = []
    const row = { requests: "", firstAfter: "", tools: "", ids: "" }
    let requestsBefore: number | undefined
    try {
      const first = await startServerProcess({ ...s.env, ...point.env })
      servers.push(first)
      const before = await runToKillPoint({
        url: first.url,
        conversation,
        point,
        state: () => ({ requests: fake.requests.length, records: s.records() }),
        kill: () => first.kill("SIGKILL")
      })
      // nothing reaches the fake from the dead process: what it has now was asked before the kill
      requestsBefore = fake.requests.length
      const recordsBefore = s.records()
      killed = true
      assert.isAbove(before.length, 0, "the client had events before the kill")
      const second = await first.restart()
      servers.push(second)
      if (point.env?.REACT_APPROVAL_TOOLS !== undefined) {
        // the restarted run waits for the approval the client was shown: a person answers it now
        const requested = before.find((e) => e.event === "approval" && e.data.status === "requested")!.data
        await waitUntil(
          async () => {
            const list = await getJson(`${second.url}/api/conversations`)
            return (list.body?.conversations ?? []).some((c: any) =>
              c.id === conversation && c.waiting_approval === true
            )
          },
          30_000,
          "the restarted run to wait for the approval"
        )
        const approved = await postJson(`${second.url}/api/react/approve`, {
          conversation_id: conversation,
          approval_id: requested.approval_id,
          decision: "approve"
        })
        assert.strictEqual(approved.status, 200, JSON.stringify(approved.body))
      }
      const after = await resume(second.url, conversation, before[before.length - 1].id)
      if (point.env?.REACT_APPROVAL_TOOLS !== undefined) {
        const requested = before.find((e) => e.event === "approval" && e.data.status === "requested")!.data
        const again = await postJson(`${second.url}/api/react/approve`, {
          conversation_id: conversation,
          approval_id: requested.approval_id,
          decision: "approve"
        })
        assert.strictEqual(again.status, 409, "decided once")
      }
      const records = s.records()
      const expected = point.expectRequests
      row.requests = `${requestsBefore} / ${fake.requests.length - requestsBefore} (${
        [expected.before].flat().join(" or ")
      } / ${expected.after})`
      row.firstAfter = `\`${shape(fake.requests[requestsBefore]?.body)}\``
      row.tools = describeRecords(records)
      row.ids = describeIds(before, after)
      await assertKillPoint(point, {
        before,
        after,
        requestsBefore,
        requests: fake.requests,
        url: second.url,
        conversation,
        recordsBefore,
        records
      })
      report.add({ point: point.name, ...row, result: "pass", seconds: (Date.now() - started) / 1000 })
    } catch (error) {
      if (row.requests === "") {
        row.requests = requestsBefore === undefined
          ? `${fake.requests.length} (the kill point was not reached)`
          : `${requestsBefore} / ${fake.requests.length - requestsBefore} (${
            [point.expectRequests.before].flat().join(" or ")
          } / ${point.expectRequests.after})`
      }
      if (row.tools === "") row.tools = describeRecords(s.records())
      const message = String(error instanceof Error ? error.message : error).split("\n")[0].replaceAll("|", "\\|")
        .slice(0, 200)
      report.add({ point: point.name, ...row, result: `FAIL: ${message}`, seconds: (Date.now() - started) / 1000 })
      throw error
    } finally {
      await Promise.all(servers.map((p) => p.kill()))
      await fake.close()
    }
  })

describe("kill-point matrix on SQLite (real server processes, kill -9 of the process group)", () => {
  it.live.each(KILL_POINTS.map((point, i) => ({ ...point, conversation: `kill-point-${i + 1}` })))(
    "kill -9 $name: resumed from the stored steps",
    (point) => Effect.promise(() => killAt(point, point.conversation)),
    { timeout: 300_000, concurrent: true }
  )
})
