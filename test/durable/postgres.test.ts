/**
 * Several server instances on one PostgreSQL database: two real server
 * processes (`npm start`'s main.ts) with `DATABASE_URL` pointing at the same
 * database, each its own cluster runner (`CLUSTER_PORT`), each its own MCP
 * recorder whose lines say which instance ran a tool. A run started on one
 * instance is followed, interrupted, recalled and cancelled through the other;
 * when the instance executing a run is killed with SIGKILL, the survivor takes
 * its shards over and finishes the run, and a client that resumes through the
 * survivor gets the rest with continuing event ids. PostgreSQL is started by the
 * test itself (a fresh cluster in a temporary directory); when it is not
 * installed the tests are skipped with that message.
 *
 * The fake models give every request its own tool-call ids (`call_<request#>_<k>`)
 * and decide from the request's content; the tests count the model requests (on
 * both sides of a kill): a model asked again for a reply it gave shows up as new
 * ids and as a request without the stored history (SPEC §14 "stored before it
 * counts"). The counts are printed at the end (kill-requests-postgres.md).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import {
  assertOneOutcomePerCall,
  assertPaired,
  assertStartsFromStored,
  type PgCluster,
  pgCluster,
  reported,
  requestCountReport,
  startTwo,
  toolMessages,
  waitUntil
} from "../utils/killMatrix.js"
import { findPostgres, type Postgres, startPostgres } from "../utils/postgres.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { getJson, openSse, postJson, type SseEvent } from "../utils/sse.js"

const { freshCallId } = FakeOpenAi
const found = findPostgres()
if ("missing" in found) {
  // CI installs PostgreSQL and sets REQUIRE_POSTGRES: there a missing server is a failure, not a skip
  if (process.env.REQUIRE_POSTGRES === "1") throw new Error(found.missing)
  console.warn(found.missing)
}

/** The label a run's query names ("record <label>"), wherever the prompt puts the query. */
const labelOf = (body: any) => /record (r\d+)/.exec(JSON.stringify(body?.messages ?? []))?.[1] ?? "?"

const counts = requestCountReport(
  "Model requests of the durable PostgreSQL tests, before and after the kill",
  "kill-requests-postgres.md"
)
afterAll(() => counts.print())

/** One database, one record file, per-instance MCP configs and runner ports. */
const cluster = (pg: Postgres, database: string, llmUrl: string): PgCluster => pgCluster(pg, database, llmUrl)

const resume = async (url: string, conversation: string, lastId: string) =>
  (await openSse(`${url}/api/react/events?conversation_id=${conversation}`, {
    headers: { "last-event-id": lastId },
    timeoutMs: 90_000
  })).events

describe.skipIf("missing" in found)("several instances on one PostgreSQL database (real processes, SIGKILL)", () => {
  let pg: Postgres
  const withPg = <A>(body: (pg: Postgres) => Promise<A>) =>
    Effect.promise(async () => {
      pg ??= await startPostgres((found as { bin: string }).bin)
      return body(pg)
    })
  afterAll(() => pg?.stop())

  it.live(
    "a run is interrupted, recalled, refused a second start and cancelled through the instance that does not execute it",
    () =>
      withPg(async (pg) => {
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText("never")
          const tools = toolMessages(body).length
          return FakeOpenAi.completion({
            toolCalls: [{
              id: freshCallId(index),
              name: "rec__record_idem",
              arguments: JSON.stringify({ label: `c${tools}`, ms: tools === 0 ? 3000 : 60_000 })
            }]
          })
        })
        const row = counts.track("interrupted, recalled, refused, cancelled across instances (no kill)", fake)
        const c = cluster(pg, "control", fake.url)
        const [a, b] = await startTwo(c)
        try {
          await reported(row, async () => {
            const seen: Array<SseEvent> = []
            const stream = openSse(`${a.url}/api/react`, {
              body: { query: "record c", conversation_id: "cross" },
              timeoutMs: 90_000,
              onEvent: (e) => void seen.push(e)
            })
            await waitUntil(() => c.records().some((l) => l.startsWith("start c0")), 20_000, "the first tool to start")
            // the recorder line names the instance whose process runs the loop: every request goes to the other one
            const executor = c.records()[0].split(" ")[2]
            const other = executor === "A" ? b : a
            const second = await postJson(`${other.url}/api/react`, { query: "record again", conversation_id: "cross" })
            assert.strictEqual(second.status, 409, "one run per conversation, whichever instance is asked")
            const kept = await postJson(`${other.url}/api/react/inject`, {
              conversation_id: "cross",
              content: "keep this note"
            })
            const dropped = await postJson(`${other.url}/api/react/inject`, {
              conversation_id: "cross",
              content: "drop this note"
            })
            assert.deepStrictEqual([kept.status, dropped.status], [200, 200])
            const recalled = await postJson(`${other.url}/api/react/inject/recall`, {
              conversation_id: "cross",
              id: dropped.body.id
            })
            assert.isTrue(recalled.body.recalled, "recalled through the instance that does not execute the run")
            // the next loop call takes the kept interrupt in (the second tool then runs for a minute)
            await waitUntil(() => c.records().some((l) => l.startsWith("start c1")), 30_000, "the second tool to start")
            assert.isTrue(
              c.records().every((l) => l.endsWith(` ${executor}`)),
              `one instance executes the run: ${c.records().join(" | ")}`
            )
            const cancelled = await postJson(`${other.url}/api/react/cancel`, { conversation_id: "cross" })
            assert.strictEqual(cancelled.status, 200, JSON.stringify(cancelled.body))
            const result = await stream
            const done = result.events[result.events.length - 1]
            assert.strictEqual(done.event, "done")
            assert.isTrue(done.data.cancelled)
            const injects = result.events.filter((e) => e.event === "inject").map((e) => e.data.content)
            assert.deepStrictEqual(injects, ["keep this note"])
            const carried = fake.requests.filter((r) => !r.body?.stream).map((r) => JSON.stringify(r.body.messages))
            assert.isTrue(carried.some((m) => m.includes("keep this note")))
            // each loop call asked once: the first, then the one with its result and the kept interrupt (no synthesis after a cancel)
            assert.strictEqual(fake.requests.length, 2, "two model requests")
            for (const r of fake.requests) assertPaired(r.body)
            assert.deepStrictEqual(
              toolMessages(fake.requests[1].body).map((m) => m.tool_call_id),
              ["call_1_0"],
              "the second request carries the first reply's call"
            )
            assert.isFalse(
              carried.some((m) => m.includes("drop this note")),
              "a recalled message never reaches the model"
            )
            // the other instance sees the finished conversation too
            const stored = await getJson(`${other.url}/api/conversations/cross`)
            assert.strictEqual(stored.body.active, false)
          })
        } finally {
          await Promise.all([a.kill(), b.kill()])
          await fake.close()
        }
      }),
    180_000
  )

  it.live(
    "a call waiting for approval is approved through the instance that does not execute the run; it runs once",
    () =>
      withPg(async (pg) => {
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText("Approved and recorded.")
          const tools = toolMessages(body).length
          // a first call (no approval) shows which instance executes the run; the second waits for a person
          if (tools === 0) {
            return FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "rec__record_idem",
                arguments: JSON.stringify({ label: "p", ms: 50 })
              }]
            })
          }
          if (tools === 1) {
            return FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "rec__record",
                arguments: JSON.stringify({ label: "ap", ms: 50 })
              }]
            })
          }
          return FakeOpenAi.completion({ content: "done" })
        })
        const row = counts.track("approved through the other instance (no kill)", fake)
        const c = cluster(pg, "approval", fake.url)
        const env = async (instance: string) => ({ ...(await c.env(instance)), REACT_APPROVAL_TOOLS: "rec__record" })
        const a = await startServerProcess(await env("A"))
        const b = await startServerProcess(await env("B")).catch(async (error) => {
          await a.kill()
          throw error
        })
        try {
          await reported(row, async () => {
            let answered: Promise<{ status: number; body: any }> | undefined
            const result = await openSse(`${a.url}/api/react`, {
              body: { query: "record with approval", conversation_id: "approve-cross" },
              timeoutMs: 90_000,
              onEvent: (e) => {
                if (answered !== undefined || e.event !== "approval" || e.data.status !== "requested") return
                const executor = c.records()[0]?.split(" ")[2]
                const other = executor === "A" ? b : a
                assert.deepStrictEqual(
                  c.records().filter((l) => l.startsWith("start ap")),
                  [],
                  "nothing runs before the approval"
                )
                answered = postJson(`${other.url}/api/react/approve`, {
                  conversation_id: "approve-cross",
                  approval_id: e.data.approval_id,
                  decision: "approve"
                })
              }
            })
            const reply = await answered
            assert.strictEqual(reply?.status, 200, JSON.stringify(reply?.body))
            const done = result.events[result.events.length - 1]
            assert.strictEqual(done.event, "done")
            assert.isTrue(result.events.some((e) => e.event === "approval" && e.data.status === "approved"))
            const executor = c.records()[0].split(" ")[2]
            assert.deepStrictEqual(c.records().filter((l) => l.includes(" ap ")), [
              `start ap ${executor}`,
              `end ap ${executor}`
            ], "approved once, run once")
            // each step asked once: three loop calls and the synthesis
            assert.strictEqual(fake.requests.length, 4, "four model requests")
            for (const r of fake.requests) assertPaired(r.body)
            assert.deepStrictEqual(toolMessages(fake.requests[2].body).map((m) => m.tool_call_id), [
              "call_1_0",
              "call_2_0"
            ], "the third request carries both stored replies' calls")
            assertOneOutcomePerCall(result.events)
          })
        } finally {
          await Promise.all([a.kill(), b.kill()])
          await fake.close()
        }
      }),
    180_000
  )

  it.live(
    "kill -9 the instance executing a run: the other takes it over, the client resumes through it",
    () =>
      withPg(async (pg) => {
        let killed = false
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText("All three recorded.")
          const tools = toolMessages(body).length
          return tools < 3
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "rec__record",
                arguments: JSON.stringify({ label: `k${tools}`, ms: 1500 })
              }],
              // the kill comes after the first tool's done: the second call is still waiting for its reply then
              delayMs: tools === 1 && !killed ? 2500 : 0
            })
            : FakeOpenAi.completion({ content: "done" })
        })
        const row = counts.track("kill -9 the executing instance after a tool round (takeover)", fake)
        const c = cluster(pg, "takeover", fake.url)
        const [a, b] = await startTwo(c)
        const servers = { A: a, B: b }
        try {
          await reported(row, async () => {
            // started through A; the client hangs up after the first event and follows through the executing instance
            const first = await openSse(`${a.url}/api/react`, {
              body: { query: "record k", conversation_id: "takeover" },
              until: () => true,
              timeoutMs: 30_000
            })
            await waitUntil(() => c.records().some((l) => l.startsWith("start k0")), 30_000, "the first tool to start")
            const executor = c.records()[0].split(" ")[2] as "A" | "B"
            const survivor = executor === "A" ? servers.B : servers.A
            const before: Array<SseEvent> = [...first.events]
            let kill: Promise<void> | undefined
            await openSse(`${servers[executor].url}/api/react/events?conversation_id=takeover`, {
              headers: { "last-event-id": first.events[first.events.length - 1].id! },
              timeoutMs: 60_000,
              onEvent: (e) => {
                before.push(e)
                // after the first tool round: kill the instance that runs the loop (and serves this client)
                if (
                  kill === undefined && e.event === "step" && e.data.type === "iteration" && e.data.status === "done"
                ) {
                  kill = servers[executor].kill("SIGKILL")
                }
              }
            }).catch(() => undefined)
            await kill
            const requestsBefore = row.killed()
            killed = true
            // the second call may or may not have been sent when the process died; its reply was not given
            assert.include([1, 2], requestsBefore, "model requests before the kill")
            const lastId = before[before.length - 1].id!
            const after = await resume(survivor.url, "takeover", lastId)
            for (const r of fake.requests) assertPaired(r.body)
            // the tool's done the client was shown is its outcome: the survivor neither runs it again nor answers it otherwise
            assertOneOutcomePerCall([...before, ...after])
            assertStartsFromStored({ before, after, requestsBefore, requests: fake.requests })
            assert.strictEqual(
              fake.requests.length - requestsBefore,
              4,
              "after the kill: loop calls 2, 3 and 4, the synthesis"
            )
            const ids = [...before, ...after].map((e) => Number(e.id))
            ids.forEach((id, i) => assert.strictEqual(id, i + 1, `event ids continue: ${ids.join(",")}`))
            assert.strictEqual(after.filter((e) => e.event === "phase" && e.data.phase === "resumed").length, 1)
            assert.strictEqual(after[after.length - 1].event, "done")
            assert.strictEqual(after[after.length - 1].data.answer, "All three recorded.")
            const records = c.records()
            const ends = records.filter((l) => l.startsWith("end "))
            assert.deepStrictEqual(
              ends.map((l) => l.split(" ")[1]).sort(),
              ["k0", "k1", "k2"],
              `each tool ran to its end once: ${records.join(" | ")}`
            )
            const other = executor === "A" ? "B" : "A"
            assert.isTrue(
              records.slice(1).some((l) => l.endsWith(` ${other}`)),
              `the survivor ran the rest: ${records.join(" | ")}`
            )
            console.log(`takeover: executor ${executor}, records ${records.join(" | ")}, ids before ${
              before.map((e) => e.id).join(",")
            }, after ${after.map((e) => `${e.id}:${e.event}`).join(",")}`)
          })
        } finally {
          await Promise.all([a.kill(), b.kill()])
          await fake.close()
        }
      }),
    180_000
  )

  it.live(
    "50 concurrent runs across two instances, one killed halfway: every run ends with done, no tool ran to its end twice",
    () =>
      withPg(async (pg) => {
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText(`Recorded ${labelOf(body)}.`)
          const label = labelOf(body)
          const tools = toolMessages(body).length
          return tools < 2
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "rec__record",
                arguments: JSON.stringify({ label: `${label}.${tools}`, ms: 400 })
              }],
              delayMs: 100
            })
            : FakeOpenAi.completion({ content: "done", delayMs: 100 })
        })
        const row = counts.track("50 concurrent runs, one instance killed halfway (totals over the runs)", fake)
        const c = cluster(pg, "load", fake.url)
        const [a, b] = await startTwo(c)
        try {
          // B's share of the shards moves over from A within about a second (assignment refresh 500 ms,
          // lock refresh 1 s): a call in flight on a moving shard is asked again there, as after a kill,
          // which this test would count as a second ask (seen once: the first calls of r0, r2, r4)
          await new Promise((resolve) => setTimeout(resolve, 3000))
          await reported(row, async () => {
            const runs = Array.from({ length: 50 }, (_, i) => `r${i}`)
            // half through each instance; each client hangs up after the first event (the runs go on detached)
            const started = await Promise.all(runs.map((label, i) =>
              openSse(`${(i % 2 === 0 ? a : b).url}/api/react`, {
                body: { query: `record ${label}`, conversation_id: label },
                until: () => true,
                timeoutMs: 60_000
              })
            ))
            // a refused start names the run, its status and what the instance answered
            const refused = started.flatMap((r, i) =>
              r.status === 200
                ? []
                : [`${runs[i]} via ${i % 2 === 0 ? "A" : "B"}: ${r.status} ${JSON.stringify(r.body)}`]
            )
            // ... and what either instance logged above INFO then
            const warned = refused.length === 0 ?
              [] :
              [a, b].flatMap((instance, i) =>
                instance.output().split("\n").filter((line) =>
                  /level=(WARN|ERROR|FATAL)|\] (WARN|ERROR|FATAL) /.test(line)
                )
                  .slice(-20).map((line) => `${i === 0 ? "A" : "B"}: ${line.slice(0, 600)}`)
              )
            assert.deepStrictEqual([...refused, ...warned], [], "every start is answered with its event stream")
            // runs between their two calls, by the instance that executes them (shards decide which one that is)
            const inMiddle = (instance: string) => {
              const records = c.records()
              return runs.filter((label) =>
                records.includes(`end ${label}.0 ${instance}`) && !records.some((l) => l.startsWith(`end ${label}.1 `))
              )
            }
            await waitUntil(
              () =>
                c.records().filter((l) => l.startsWith("end ")).length >= 50 &&
                inMiddle("A").length + inMiddle("B").length > 0,
              90_000,
              "half of the tool calls, with runs between their calls"
            )
            // kill the instance with the most runs in the middle
            const victimName = inMiddle("A").length >= inMiddle("B").length ? "A" : "B"
            const [victim, survivor] = victimName === "A" ? [a, b] : [b, a]
            await victim.kill("SIGKILL")
            const requestsBefore = row.killed()
            // every run ends through the survivor
            const streams = await Promise.all(runs.map(async (label) =>
              (await openSse(`${survivor.url}/api/react/events?conversation_id=${label}`, { timeoutMs: 150_000 }))
                .events
            ))
            const finals = streams.map((events) =>
              events[events.length - 1]
            )
            assert.deepStrictEqual(finals.map((e) => e.event), runs.map(() => "done"))
            const ends = new Map<string, number>()
            for (const line of c.records().filter((l) => l.startsWith("end "))) {
              const label = line.split(" ")[1]
              ends.set(label, (ends.get(label) ?? 0) + 1)
            }
            const twice = [...ends].filter(([, n]) => n > 1)
            assert.deepStrictEqual(twice, [], "no tool call ran to its end twice")
            // no run starts over: its first model request after the kill carries at least the tool results its last one before had
            const loop = (from: number, to: number) => fake.requests.slice(from, to).filter((r) => !r.body?.stream)
            const startedOver = runs.flatMap((label) => {
              const had = Math.max(
                -1,
                ...loop(0, requestsBefore).filter((r) => labelOf(r.body) === label).map((r) =>
                  toolMessages(r.body).length
                )
              )
              const next = loop(requestsBefore, fake.requests.length).find((r) => labelOf(r.body) === label)
              return next !== undefined && toolMessages(next.body).length < had
                ? [`${label}: ${had} → ${toolMessages(next.body).length}`]
                : []
            })
            assert.deepStrictEqual(
              startedOver,
              [],
              "a run's model requests after the kill start from its stored history"
            )
            for (const r of fake.requests) assertPaired(r.body)
            // a loop request is asked again only across the kill (its reply was in flight then), once; a request
            // the victim sent just before it died may be counted by the fake after the kill (its bytes were
            // still to be read): its reply never reached the victim (cut) — that one was in flight too
            const inFlightAtKill = (i: number) => i < requestsBefore || fake.requests[i].abortedByClient
            const askedAgain = runs.flatMap((label) => {
              const asked = new Map<number, Array<number>>()
              fake.requests.forEach((r, i) => {
                if (r.body?.stream || labelOf(r.body) !== label) return
                const n = toolMessages(r.body).length
                asked.set(n, [...(asked.get(n) ?? []), i])
              })
              return [...asked].filter(([, at]) =>
                at.length > 2 || (at.length === 2 && !(inFlightAtKill(at[0]) && at[1] >= requestsBefore))
              )
                .map(([n, at]) => `${label} with ${n} tool results: requests ${at.join(",")}`)
            })
            assert.deepStrictEqual(
              askedAgain,
              [],
              `no model request asked twice but one in flight at the kill (the kill after request ${requestsBefore})`
            )
            // a wrong answer names the run, its done (without the history) and its last events
            const wrong = runs.flatMap((label, i) => {
              const done = finals[i]
              if (done?.data.answer === `Recorded ${label}.`) return []
              const { messages: _messages, steps: _steps, ...fields } = (done?.data ?? {}) as Record<string, unknown>
              const tail = streams[i].slice(-12).map((e) =>
                e.event === "error" || e.event === "answer" ? `${e.event} ${JSON.stringify(e.data)}` : e.event
              )
              // what either instance logged about the run's conversation (a failed run says why)
              const logged = [victim, survivor].flatMap((instance) =>
                instance.output().split("\n").filter((line) => line.includes(`conversation ${label})`))
              )
              return [
                `${label}: done ${JSON.stringify(fields)}; last events: ${tail.join(" | ")}; logged: ${
                  logged.join(" / ")
                }`
              ]
            })
            assert.deepStrictEqual(wrong, [], "every run answers what its synthesis streamed")
            const records = c.records()
            const count = (prefix: string, instance: string) =>
              records.filter((l) => l.startsWith(prefix) && l.endsWith(` ${instance}`)).length
            // runs the victim executed and did not finish: their second call did not end there (it had not
            // started, or the kill cut it); the survivor ran it, or answered it as interrupted, and the run ended
            const takenOver = runs.filter((label) =>
              records.includes(`start ${label}.0 ${victimName}`) && !records.includes(`end ${label}.1 ${victimName}`)
            )
            assert.isAtLeast(takenOver.length, 1, "the kill caught runs in the middle")
            console.log(
              `load: killed ${victimName}, ${finals.length} done, ${takenOver.length} taken over; started A ${
                count("start", "A")
              } B ${count("start", "B")}, ended A ${count("end", "A")} B ${count("end", "B")}`
            )
          })
        } finally {
          await Promise.all([a.kill(), b.kill()])
          await fake.close()
        }
      }),
    300_000
  )
})
