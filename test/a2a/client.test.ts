/**
 * `A2A.remoteAgent` against the A2A SDK's own reference server (in process on
 * 127.0.0.1, the SDK's request handler and Express handlers): the card read,
 * the call's headers sent (the server refuses requests without them), the
 * remote task's answer as the call's observation, its status messages as the
 * call's progress, a failed remote task and an unreachable agent as clean tool
 * errors, the call's idempotency key in the message's metadata.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as A2A from "../../src/A2A.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import type { RunEvent } from "../../src/RunEvent.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import type * as Tool from "../../src/Tool.js"
import { makeAgent } from "../utils/agentLayers.js"
import { startSampleServer } from "../utils/sdkSampleServer.js"
import { freePort } from "../utils/serverProcess.js"

const quiet = { completionCheck: false, selfReflectionInterval: 0 }

const runWith = (tool: ReadonlyArray<Tool.Tool>, query: string) =>
  Effect.gen(function*() {
    const parent = makeAgent([
      ScriptedLlm.toolCall("sample", { query }, { id: "call_s" }),
      ScriptedLlm.text("ok"),
      ScriptedLlm.text("Done.")
    ], { tools: tool, agent: quiet })
    return [
      ...yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => Stream.runCollect(a.run({ query: "ask the sample agent", runId: "run_a2a" }))
      ).pipe(
        Effect.provide(parent.layer)
      )
    ]
  })

const toolDone = (events: ReadonlyArray<RunEvent>) =>
  events.find((e): e is Extract<RunEvent, { _tag: "ToolDone" }> => e._tag === "ToolDone")!

describe("A2A.remoteAgent against the SDK's reference server", () => {
  it.scopedLive(
    "a call: the answer is the remote task's artifact, its status messages the call's progress, the key in the metadata",
    () =>
      Effect.gen(function*() {
        const sample = yield* Effect.acquireRelease(
          Effect.promise(() => startSampleServer({ token: "sample-token" })),
          (s) => Effect.promise(s.close)
        )
        const tool = yield* A2A.remoteAgent(sample.url, {
          name: "sample",
          headers: { Authorization: "Bearer sample-token" }
        })
        assert.strictEqual(tool.name, "sample")
        assert.include(tool.description, "The A2A SDK's sample agent")
        const events = yield* runWith([tool], "What is A2A?")
        const done = toolDone(events)
        assert.isNull(done.error)
        assert.strictEqual(done.observation, "Sample answer to: What is A2A?")
        const progress = events.filter((e) => e._tag === "ToolProgress").map((e) => (e as { message: string }).message)
        assert.deepStrictEqual(progress, ["sample: Looking it up"])
        const start = events.find((e): e is Extract<RunEvent, { _tag: "ToolStart" }> => e._tag === "ToolStart")!
        assert.deepStrictEqual(sample.received.map((r) => r.metadata?.idempotency_key), [start.idempotency_key])
        assert.match(String(start.idempotency_key), /^ik_[0-9a-f]{32}$/)
      }),
    30_000
  )

  it.scopedLive(
    "a failed remote task and a refused call are the call's error observations",
    () =>
      Effect.gen(function*() {
        const sample = yield* Effect.acquireRelease(
          Effect.promise(() => startSampleServer({ token: "sample-token" })),
          (s) => Effect.promise(s.close)
        )
        const tool = yield* A2A.remoteAgent(sample.url, {
          name: "sample",
          headers: { Authorization: "Bearer sample-token" }
        })
        const failed = toolDone(yield* runWith([tool], "please fail"))
        assert.strictEqual(failed.error, "Remote agent sample failed: The sample agent cannot do that")
        // without the credentials the server answers 401: the model reads it, the run goes on
        const anonymous = yield* A2A.remoteAgent(sample.url, { name: "sample" })
        const refused = toolDone(yield* runWith([anonymous], "What is A2A?"))
        assert.match(refused.error ?? "", /^Remote agent sample could not be reached: .*401/)
      }),
    30_000
  )

  it.live("an agent that cannot be reached: remoteAgent fails with an A2AError naming the URL", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(freePort)
      const error = yield* Effect.flip(A2A.remoteAgent(`http://127.0.0.1:${port}`))
      assert.strictEqual(error._tag, "A2AError")
      assert.include(error.message, `cannot reach the A2A agent at http://127.0.0.1:${port}`)
    }))

  it("REACT_A2A_AGENTS: a comma list of URLs, or JSON with names and headers; a malformed value is refused", () => {
    const list = A2A.parseAgents("http://a.example, http://b.example/x/card.json")
    assert.deepStrictEqual(list._tag === "Right" ? list.right : undefined, [{ url: "http://a.example" }, {
      url: "http://b.example/x/card.json"
    }])
    const json = A2A.parseAgents(
      JSON.stringify([{ url: "http://a.example", name: "expert", headers: { Authorization: "Bearer t" } }])
    )
    assert.strictEqual(json._tag, "Right")
    const bad = A2A.parseAgents("not a url")
    assert.strictEqual(bad._tag, "Left")
    const extra = A2A.parseAgents(JSON.stringify([{ url: "http://a.example", nam: "typo" }]))
    assert.strictEqual(extra._tag, "Left")
  })
})
