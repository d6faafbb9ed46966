/**
 * Forks over HTTP (SPEC §22): the real server (a child process) with the
 * recording MCP server as its tools (every execution is a line in a file) and
 * an OpenAI-compatible fake model that gives each request fresh tool-call ids
 * and counts the requests. A run records `a` then `b`; forking it at the event
 * that ended the `a` call and letting the fork's run go on executes `b` again
 * (live) but never `a`, and never repeats the model request that asked for
 * `a`; the original conversation is unchanged.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { recorderConfig, recordFile } from "../utils/killMatrix.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { getJson, openSse, postJson, type SseEvent } from "../utils/sse.js"

const toolResults = (body: any): number => (body?.messages ?? []).filter((m: any) => m.role === "tool").length
const userText = (body: any): string =>
  (body?.messages ?? []).filter((m: any) => m.role === "user").map((m: any) => JSON.stringify(m.content)).join("\n")

/** Records `a`, then `b`, then answers; the synthesis streams. Fresh call ids per request. */
const model: FakeOpenAi.FakeResponder = (body, index) => {
  if (body?.stream) {
    return FakeOpenAi.sse([
      FakeOpenAi.chunk.role(),
      FakeOpenAi.chunk.content("Recorded a and b."),
      FakeOpenAi.chunk.finish("stop")
    ])
  }
  const done = toolResults(body)
  if (done >= 2) return FakeOpenAi.completion({ content: "Both recorded." })
  const label = done === 0 ? "a" : "b"
  return FakeOpenAi.completion({
    content: "",
    toolCalls: [{ id: FakeOpenAi.freshCallId(index), name: "rec__record", arguments: JSON.stringify({ label, ms: 0 }) }]
  })
}

/** The server's environment: the recording MCP tools in `dir`, the fake model at `url`. */
const serverEnv = (
  dir: string,
  records: ReturnType<typeof recordFile>,
  url: string,
  extra: Record<string, string> = {}
) => ({
  DATABASE_PATH: join(dir, "react.db"),
  MCP_CONFIG: recorderConfig(dir, records),
  LLM_BASE_URL: url,
  LLM_MODEL: "fake-model",
  LLM_API_KEY: "test",
  LLM_MAX_RETRIES: "0",
  REACT_SYNTHESIS: "always",
  ...extra
})

/** A fake model, a fresh directory with a record file and a server over both, closed with the scope. */
const serverWith = (responder: FakeOpenAi.FakeResponder, prefix: string, extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const fake = yield* Effect.acquireRelease(
      Effect.promise(() => FakeOpenAi.start(responder)),
      (f) => Effect.promise(() => f.close())
    )
    const dir = mkdtempSync(join(tmpdir(), prefix))
    const records = recordFile(dir)
    const server = yield* Effect.acquireRelease(
      Effect.promise(() => startServerProcess(serverEnv(dir, records, fake.url, extra))),
      (s) => Effect.promise(() => s.kill("SIGTERM"))
    )
    return { fake, dir, records, server }
  })

const run = async (url: string, conversationId: string) => {
  const result = await openSse(`${url}/api/react/events?conversation_id=${conversationId}`, { timeoutMs: 60_000 })
  assert.strictEqual(result.status, 200, JSON.stringify(result.body))
  return result.events
}
const doneOf = (events: ReadonlyArray<SseEvent>) => events[events.length - 1]
const toolDone = (events: ReadonlyArray<SseEvent>, label: string) =>
  events.find((e) =>
    e.event === "step" && e.data.type === "iteration" && e.data.status === "done" &&
    e.data.observation === `recorded ${label}`
  )

describe("POST /api/conversations/:id/fork", () => {
  it.live(
    "a fork at a mid-run event takes the steps before it from storage (no tool run, no model request again) and runs the rest live; the original is unchanged",
    () =>
      Effect.gen(function*() {
        const { fake, records, server } = yield* serverWith(model, "fork-", { REACT_COMPLETION_CHECK_MIN_TOOLS: "10" })
        yield* Effect.promise(async () => {
          const url = server.url
          // the original run: a, then b
          const first = await openSse(`${url}/api/react`, { body: { query: "Record a and b." }, timeoutMs: 60_000 })
          const original = first.headers.get("x-conversation-id")!
          const done = doneOf(first.events)
          assert.strictEqual(done.event, "done")
          assert.match(done.data.run_id, /^run_/)
          assert.deepStrictEqual(records.records(), ["start a", "end a", "start b", "end b"])
          assert.strictEqual(fake.requests.length, 4)
          const before = (await getJson(`${url}/api/conversations/${original}`)).body
          assert.deepStrictEqual(before.turn_details.map((t: any) => t.run_id), [done.data.run_id])
          assert.strictEqual(before.forked_from, null)

          // fork where the `a` call ended
          const at = Number(toolDone(first.events, "a")!.id)
          const forked = await postJson(`${url}/api/conversations/${original}/fork`, { at })
          assert.strictEqual(forked.status, 201, JSON.stringify(forked.body))
          assert.deepStrictEqual(forked.body.forked_from, { conversation_id: original, run_id: done.data.run_id, at })
          const fork = forked.body.conversation_id as string
          assert.notStrictEqual(fork, original)
          const events = await run(url, fork)
          assert.strictEqual(doneOf(events).event, "done")
          assert.strictEqual(doneOf(events).data.answer, "Recorded a and b.")
          assert.notStrictEqual(doneOf(events).data.run_id, done.data.run_id)
          // `a` (before the fork point) was not executed again, `b` (after it) was, live
          assert.deepStrictEqual(records.records(), ["start a", "end a", "start b", "end b", "start b", "end b"])
          // the model was not asked again for the step before the fork point (the request without tool results):
          // the fork's requests are the live ones, each after `a`'s stored result
          const live = fake.requests.slice(4)
          assert.strictEqual(live.length, 3)
          assert.deepStrictEqual(live.map((r) => r.body.stream === true ? "stream" : toolResults(r.body)), [
            1,
            2,
            "stream"
          ])
          // the stored `a` step shows in the fork with its original call id; `b` has the live request's fresh id
          assert.strictEqual(toolDone(events, "a")!.data.tool_call_id, toolDone(first.events, "a")!.data.tool_call_id)
          assert.notStrictEqual(
            toolDone(events, "b")!.data.tool_call_id,
            toolDone(first.events, "b")!.data.tool_call_id
          )

          // the fork: its origin, its own run; the original: unchanged, its events too
          const forkDetail = (await getJson(`${url}/api/conversations/${fork}`)).body
          assert.deepStrictEqual(forkDetail.forked_from, {
            conversation_id: original,
            run_id: done.data.run_id,
            at,
            title: "Record a and b.",
            step: "step 1 · rec__record"
          })
          assert.strictEqual(forkDetail.title, "Record a and b. (fork)")
          assert.deepStrictEqual(forkDetail.turn_details.map((t: any) => t.run_id), [doneOf(events).data.run_id])
          assert.deepStrictEqual((await getJson(`${url}/api/conversations/${original}`)).body, before)
          const again = await openSse(`${url}/api/react/events?conversation_id=${original}&after=0`)
          assert.deepStrictEqual(again.events, first.events)

          // at its last event (the default): everything from storage
          const whole = await postJson(`${url}/api/conversations/${original}/fork`, {})
          assert.strictEqual(whole.status, 201)
          assert.strictEqual(whole.body.forked_from.at, Number(done.id))
          const copy = await run(url, whole.body.conversation_id)
          assert.strictEqual(doneOf(copy).data.answer, "Recorded a and b.")
          assert.strictEqual(fake.requests.length, 7)
          assert.strictEqual(records.records().length, 6)

          // re-asked with a new query at the same point: `a` from storage, the rest live with the new query
          // (named by its tool call instead of its event id: what a stored turn's card knows)
          const callA = toolDone(first.events, "a")!.data.tool_call_id
          const reasked = await postJson(`${url}/api/conversations/${original}/fork`, {
            tool_call_id: callA,
            replace_query: "Record a and b, twice."
          })
          assert.strictEqual(reasked.status, 201)
          assert.strictEqual(reasked.body.forked_from.at, at)
          await run(url, reasked.body.conversation_id)
          assert.deepStrictEqual(records.records().slice(6), ["start b", "end b"])
          const requeried = fake.requests.slice(7)
          assert.deepStrictEqual(requeried.map((r) => r.body.stream === true ? "stream" : toolResults(r.body)), [
            1,
            2,
            "stream"
          ])
          for (const r of requeried) assert.include(userText(r.body), "twice")
          const reaskedDetail = (await getJson(`${url}/api/conversations/${reasked.body.conversation_id}`)).body
          assert.strictEqual(reaskedDetail.turn_details[0].query, "Record a and b, twice.")

          // a fork of the fork's second turn: the fork's conversation continues like any other
          const next = await openSse(`${url}/api/react`, {
            body: { query: "Record a and b.", conversation_id: fork },
            timeoutMs: 60_000
          })
          assert.strictEqual(doneOf(next.events).event, "done")
          assert.strictEqual((await getJson(`${url}/api/conversations/${fork}`)).body.turn_details.length, 2)
        })
      }).pipe(Effect.scoped),
    180_000
  )

  it.live("clear 4xx errors: unknown conversation, run or event, a bad body", () =>
    Effect.gen(function*() {
      const { server } = yield* serverWith(model, "fork-errors-")
      yield* Effect.promise(async () => {
        const url = server.url
        const first = await openSse(`${url}/api/react`, { body: { query: "Record a and b." }, timeoutMs: 60_000 })
        const id = first.headers.get("x-conversation-id")!
        const fork = (body: unknown, conversation = id) =>
          postJson(`${url}/api/conversations/${conversation}/fork`, body)

        const unknown = await fork({}, "conv_nope")
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.body.error, "conversation_not_found")
        const run = await fork({ run_id: "run_nope" })
        assert.strictEqual(run.status, 404)
        assert.deepStrictEqual([run.body.error, run.body.run_id], ["run_not_found", "run_nope"])
        const event = await fork({ at: 9999 })
        assert.strictEqual(event.status, 404)
        assert.deepStrictEqual([event.body.error, event.body.at], ["event_not_found", 9999])
        const bad = await fork({ at: -1, replace_query: "" })
        assert.strictEqual(bad.status, 400)
        assert.deepStrictEqual(bad.body.issues.map((i: any) => i.path).sort(), ["at", "replace_query"])
        assert.strictEqual((await fork("[1]")).status, 400)
        const both = await fork({ at: 3, tool_call_id: "call_1_0" })
        assert.deepStrictEqual([both.status, both.body.issues[0].path], [400, "tool_call_id"])
        const call = await fork({ tool_call_id: "call_nope" })
        assert.deepStrictEqual([call.status, call.body.error, call.body.at], [404, "event_not_found", undefined])
        assert.strictEqual((await fork({ at: "3" })).status, 400)
        // none of them made a conversation
        const listed = (await getJson(`${url}/api/conversations`)).body.conversations
        assert.deepStrictEqual(listed.map((c: any) => c.id), [id])
      })
    }).pipe(Effect.scoped), 120_000)

  it.live(
    "kill -9 during the fork's live part: after the restart the fork's run goes on from its stored steps; the prefix's tool and model request are never repeated",
    () =>
      Effect.gen(function*() {
        // as `model`, but in the fork (requests after the original's four) `b` takes 4 s: time to kill the server
        const slow: FakeOpenAi.FakeResponder = (body, index) => {
          if (body?.stream) return model(body, index)
          const done = toolResults(body)
          if (done !== 1 || index < 4) return model(body, index)
          return FakeOpenAi.completion({
            content: "",
            toolCalls: [{
              id: FakeOpenAi.freshCallId(index),
              name: "rec__record",
              arguments: JSON.stringify({ label: "b", ms: 4000 })
            }]
          })
        }
        const fake = yield* Effect.acquireRelease(Effect.promise(() => FakeOpenAi.start(slow)), (f) =>
          Effect.promise(() => f.close()))
        const dir = mkdtempSync(join(tmpdir(), "fork-kill-"))
        const records = recordFile(dir)
        const env = serverEnv(dir, records, fake.url, {
          RUN_DETACH_GRACE_MS: "60000",
          REACT_COMPLETION_CHECK_MIN_TOOLS: "10"
        })
        let server = yield* Effect.promise(() =>
          startServerProcess(env)
        )
        yield* Effect.addFinalizer(() => Effect.promise(() => server.kill("SIGTERM")))
        yield* Effect.promise(async () => {
          const first = await openSse(`${server.url}/api/react`, {
            body: { query: "Record a and b." },
            timeoutMs: 60_000
          })
          const original = first.headers.get("x-conversation-id")!
          assert.strictEqual(fake.requests.length, 4)
          const at = Number(toolDone(first.events, "a")!.id)
          const forked = await postJson(`${server.url}/api/conversations/${original}/fork`, { at })
          assert.strictEqual(forked.status, 201)
          // the fork's `b` is running: kill -9
          const started = Date.now()
          while (records.records().filter((l) => l === "start b").length < 2) {
            if (Date.now() - started > 30_000) throw new Error("the fork's b never started")
            await new Promise((r) => setTimeout(r, 50))
          }
          await server.kill("SIGKILL")
          server = await server.restart()
          const events = await run(server.url, forked.body.conversation_id)
          assert.strictEqual(doneOf(events).event, "done")
          assert.isTrue(events.some((e) => e.event === "phase" && e.data.phase === "resumed"))
          // `a` ran once (the original's), never in the fork; the fork's `b` was cut by the kill and not retried
          assert.deepStrictEqual(records.records(), ["start a", "end a", "start b", "end b", "start b"])
          const cut = events.find((e) =>
            e.event === "step" && e.data.type === "iteration" && e.data.status === "done" &&
            e.data.observation !== "recorded a"
          )
          assert.include(String(cut?.data.observation), "interrupted by a server restart")
          // the model was never asked again for the step before the fork point, before or after the restart
          const forkRequests = fake.requests.slice(4)
          assert.isAbove(forkRequests.length, 2)
          for (const r of forkRequests) {
            assert.isTrue(r.body.stream === true || toolResults(r.body) >= 1, JSON.stringify(r.body.messages))
          }
        })
      }).pipe(Effect.scoped),
    180_000
  )
})
