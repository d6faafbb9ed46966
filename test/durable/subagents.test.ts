/**
 * Sub-agents of `REACT_SUBAGENTS_FILE` in the real server process: a child run
 * whose events reach the parent's SSE stream with `agent`, and that resumes
 * inside itself after a `kill -9` (SPEC §27 with §14): the child's finished tool
 * call is not run again, its model is not asked again for a reply it gave, the
 * tool call in flight at the kill is answered as interrupted (it is not
 * idempotent), and the parent's call of the child is not made again.
 *
 * The fake model tells the parent's requests from the child's by the query the
 * user typed (`PARENT-QUERY`, which the child, with history `none`, never sees),
 * gives every request fresh tool-call ids and counts them.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { assertContinues, assertPaired, resume, sqliteSetup, toolMessages, waitUntil } from "../utils/killMatrix.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { getJson, openSse, postJson, type SseEvent } from "../utils/sse.js"

const { freshCallId } = FakeOpenAi

const isParent = (body: any) => JSON.stringify(body.messages).includes("PARENT-QUERY")

/** The parent delegates once; the child records c1 (quick) then c2 (slow), then answers. */
const model = () =>
  FakeOpenAi.start((body, index) => {
    if (body?.stream) return FakeOpenAi.sseText(isParent(body) ? "Parent answer." : "Child answer.")
    const tools = toolMessages(body).length
    if (isParent(body)) {
      return tools === 0
        ? FakeOpenAi.completion({
          toolCalls: [{ id: freshCallId(index), name: "worker", arguments: JSON.stringify({ query: "CHILD-TASK" }) }]
        })
        : FakeOpenAi.completion({ content: "parent done" })
    }
    const record = (label: string, ms: number) =>
      FakeOpenAi.completion({
        toolCalls: [{ id: freshCallId(index), name: "rec__record", arguments: JSON.stringify({ label, ms }) }]
      })
    return tools === 0
      ? record("c1", 50)
      : tools === 1
      ? record("c2", 8000)
      : FakeOpenAi.completion({ content: "child done" })
  })

const subagentsFile = (dir: string) => {
  const path = join(dir, "subagents.json")
  writeFileSync(
    path,
    JSON.stringify([{
      name: "worker",
      description: "Does the work with the recorder",
      system_prompt: "You are the worker sub-agent.",
      tools: ["rec__record"]
    }])
  )
  return path
}

const childOf = (events: ReadonlyArray<SseEvent>) => events.filter((e) => e.data?.agent !== undefined)

describe("sub-agents as child runs (real server process)", () => {
  it.live(
    "kill -9 inside the child: it resumes inside the child; nothing it finished runs again",
    () =>
      Effect.promise(async () => {
        const fake = await model()
        const s = sqliteSetup(fake.url)
        const env = { ...s.env, REACT_SUBAGENTS_FILE: subagentsFile(s.dir) }
        try {
          const first = await startServerProcess(env)
          const before: Array<SseEvent> = []
          // killed once the recorder has the second call's start (its SSE event can come before the record:
          // the recorder is another process), whatever the stream is doing; the stream ends with the process
          const killing = waitUntil(
            () => s.records().includes("start c2"),
            30_000,
            "the child's second tool call started"
          )
            .then(() => first.kill("SIGKILL"))
          await openSse(`${first.url}/api/react`, {
            body: { query: "PARENT-QUERY", conversation_id: "sub-kill" },
            timeoutMs: 60_000,
            onEvent: (e) => {
              before.push(e)
            }
          }).catch(() => undefined)
          await killing
          const requestsBefore = fake.requests.length
          assert.deepStrictEqual(
            s.records(),
            ["start c1", "end c1", "start c2"],
            "killed inside the child's second call"
          )
          // parent: 1 request (the call of worker); child: 2 (c1, c2)
          assert.deepStrictEqual(fake.requests.map((r) => isParent(r.body)), [true, false, false])
          const started = before.find((e) => e.event === "agent" && e.data.status === "start")
          assert.isDefined(started, `AgentStart before the kill: ${before.map((e) => e.event).join(",")}`)
          const ref = started!.data.agent
          assert.strictEqual(ref.name, "worker")
          assert.strictEqual(ref.depth, 1)

          const second = await first.restart()
          try {
            const after = await resume(second.url, "sub-kill", before[before.length - 1].id, 90_000)
            assertContinues(before, after)
            for (const r of fake.requests) assertPaired(r.body)
            // after the restart: the child's third request (c1's and c2's results), its synthesis, then the parent's two
            const later = fake.requests.slice(requestsBefore)
            assert.deepStrictEqual(
              later.map((r) => [isParent(r.body), toolMessages(r.body).length, r.body.stream === true]),
              [
                [false, 2, false],
                [false, 0, true],
                [true, 1, false],
                [true, 0, true]
              ],
              "the child resumes with its stored replies; no model is asked again for a reply it gave"
            )
            const resumedChild = later[0].body.messages
            assert.isTrue(
              resumedChild.some((m: any) => m.role === "tool" && m.tool_call_id === "call_2_0"),
              "c1's result, from storage"
            )
            assert.isTrue(resumedChild.some((m: any) =>
              m.role === "tool" && m.tool_call_id === "call_3_0" &&
              String(m.content).includes("interrupted by a server restart")
            ))
            assert.deepStrictEqual(
              s.records(),
              ["start c1", "end c1", "start c2"],
              "c1 not run again, c2 (in flight, not idempotent) not retried"
            )
            // the child's events after the restart carry its agent, the same run id; AgentDone once; the parent's answer is its own
            const all = [...before, ...after]
            for (
              const e of childOf(after).filter((e) => e.event !== "agent")
            ) assert.deepStrictEqual(e.data.agent, ref)
            const agentDone = all.filter((e) => e.event === "agent" && e.data.status === "done")
            assert.strictEqual(agentDone.length, 1)
            assert.strictEqual(agentDone[0].data.answer, "Child answer.")
            assert.strictEqual(all.filter((e) => e.event === "agent" && e.data.status === "start").length, 1)
            const done = after[after.length - 1]
            assert.strictEqual(done.data.answer, "Parent answer.")
            const parentTool = all.find((e) =>
              e.event === "step" && e.data.type === "iteration" && e.data.status === "done" &&
              e.data.agent === undefined
            )
            assert.strictEqual(parentTool?.data.observation, "Child answer.")
            const stored = await getJson(`${second.url}/api/conversations/sub-kill`)
            assert.strictEqual(stored.body.turn_details[0].status, "completed")
          } finally {
            await second.kill()
          }
        } finally {
          await fake.close()
        }
      }),
    180_000
  )

  it.live(
    "a bad REACT_SUBAGENTS_FILE stops the start-up with a message naming the file and the entry",
    () =>
      Effect.promise(async () => {
        const fake = await model()
        const s = sqliteSetup(fake.url)
        const path = join(s.dir, "bad.json")
        writeFileSync(
          path,
          JSON.stringify([
            { name: "ok", description: "fine", system_prompt: "p" },
            { name: "writer", description: "writes", system_prompt: "p", tools: ["no_such_tool"] }
          ])
        )
        try {
          const failed = await startServerProcess({ ...s.env, REACT_SUBAGENTS_FILE: path }, 30_000).then(
            async (server) => {
              await server.kill()
              return undefined
            },
            (e: Error) => e.message
          )
          assert.isDefined(failed, "the server did not start")
          assert.include(failed, `REACT_SUBAGENTS_FILE ${path}: entry 2 ("writer"): unknown tool "no_such_tool"`)
          assert.strictEqual(fake.requests.length, 0)
        } finally {
          await fake.close()
        }
      }),
    60_000
  )

  it.live(
    "the run's cassette holds the child's steps; a fork at a child's step takes the child's steps before it from storage",
    () =>
      Effect.promise(async () => {
        // the child records c1, then c2, then answers (both quick)
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText(isParent(body) ? "Parent answer." : "Child answer.")
          const tools = toolMessages(body).length
          if (isParent(body)) {
            return tools === 0
              ? FakeOpenAi.completion({
                toolCalls: [{
                  id: freshCallId(index),
                  name: "worker",
                  arguments: JSON.stringify({ query: "CHILD-TASK" })
                }]
              })
              : FakeOpenAi.completion({ content: "parent done" })
          }
          const label = tools === 0 ? "c1" : "c2"
          return tools >= 2
            ? FakeOpenAi.completion({ content: "child done" })
            : FakeOpenAi.completion({
              toolCalls: [{ id: freshCallId(index), name: "rec__record", arguments: JSON.stringify({ label, ms: 0 }) }]
            })
        })
        const s = sqliteSetup(fake.url)
        const server = await startServerProcess({ ...s.env, REACT_SUBAGENTS_FILE: subagentsFile(s.dir) })
        try {
          const first = await openSse(`${server.url}/api/react`, {
            body: { query: "PARENT-QUERY", conversation_id: "sub-fork" },
            timeoutMs: 60_000
          })
          assert.strictEqual(first.events[first.events.length - 1].data.answer, "Parent answer.")
          const cassette = (await getJson(`${server.url}/api/conversations/sub-fork/runs/latest/cassette`)).body
          const childCalls = cassette.model_calls.filter((c: any) =>
            !JSON.stringify(c.request.messages).includes("PARENT-QUERY")
          )
          assert.strictEqual(childCalls.length, 4, "the child's three loop calls and its synthesis are in the cassette")
          assert.deepStrictEqual(cassette.tool_calls.map((t: any) => t.tool_name), [
            "rec__record",
            "rec__record",
            "worker"
          ])
          // fork at the event that ended the child's call c1
          const c1 = first.events.find((e) =>
            e.event === "step" && e.data.status === "done" && e.data.agent !== undefined &&
            e.data.observation === "recorded c1"
          )
          assert.isDefined(c1)
          const requestsBefore = fake.requests.length
          const forked = await postJson(`${server.url}/api/conversations/sub-fork/fork`, { at: Number(c1!.id) })
          assert.strictEqual(forked.status, 201, JSON.stringify(forked.body))
          const events =
            (await openSse(`${server.url}/api/react/events?conversation_id=${forked.body.conversation_id}`, {
              timeoutMs: 60_000
            })).events
          assert.strictEqual(events[events.length - 1].data.answer, "Parent answer.")
          // c1 came from storage (not run again), c2 ran live; the model was not asked again for a reply stored before the fork point
          assert.deepStrictEqual(s.records(), ["start c1", "end c1", "start c2", "end c2", "start c2", "end c2"])
          const later = fake.requests.slice(requestsBefore)
          assert.deepStrictEqual(
            later.map((r) => [isParent(r.body), toolMessages(r.body).length, r.body.stream === true]),
            [
              [false, 1, false],
              [false, 2, false],
              [false, 0, true],
              [true, 1, false],
              [true, 0, true]
            ]
          )
          // the fork's child events are the child's (agent set), with its own run id
          const forkChild = events.find((e) => e.event === "agent" && e.data.status === "start")
          assert.isDefined(forkChild)
          assert.notStrictEqual(
            forkChild!.data.agent.run_id,
            first.events.find((e) => e.event === "agent")!.data.agent.run_id
          )
        } finally {
          await server.kill()
          await fake.close()
        }
      }),
    180_000
  )
})
