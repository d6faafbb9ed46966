/**
 * A tripped input guardrail aborts the model request in flight (SPEC §21): the
 * real `OpenAiLlm` streams the run's first call from an OpenAI-compatible fake
 * that writes slowly; a classifier guardrail (its own model, a little slower
 * than the first chunk) trips. The fake must see its connection closed before
 * its reply ended, no tool runs, and the budget ledger counts no output
 * beyond what arrived before the trip (the first chunk).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Budget from "../src/Budget.js"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Guardrail from "../src/Guardrail.js"
import * as Hooks from "../src/Hooks.js"
import * as Interrupts from "../src/Interrupts.js"
import * as OpenAiLlm from "../src/OpenAiLlm.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import * as Toolkit from "../src/Toolkit.js"
import * as FakeOpenAi from "./utils/fakeOpenAiServer.js"

const WORDS = Array.from({ length: 40 }, (_, i) => `word${i} `)

describe("input guardrail beside the first model call", () => {
  it.scopedLive("a trip closes the model's HTTP connection before its reply ended; no tool runs; no output past the first chunk is charged", () =>
    Effect.gen(function*() {
      // the first chunk at once, then one every 150 ms (6 s in all), usage only at the very end
      const fake = yield* FakeOpenAi.scoped(() =>
        FakeOpenAi.sse([
          FakeOpenAi.chunk.role(),
          ...WORDS.map(FakeOpenAi.chunk.content),
          FakeOpenAi.chunk.finish("stop"),
          FakeOpenAi.chunk.usage(100, 200)
        ], { chunkDelayMs: 150 })
      )
      const ran: Array<string> = []
      const tool = Tool.make({
        name: "lookup",
        description: "Looks up",
        parameters: Schema.Struct({ q: Schema.String }),
        handler: ({ q }) => Effect.sync(() => (ran.push(q), "found"))
      })
      const judge = ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCall("classify", { violates: true, reason: "asks for credentials" }, {
          delay: "400 millis",
          usage: { prompt: 40, completion: 8 }
        })
      ], { model: "judge" })
      const llm = OpenAiLlm.layer({ baseURL: fake.url, apiKey: "test-key", model: "fake-model", maxRetries: 0 })
      const layer = ReactAgent.layer({
        synthesis: "auto",
        guardrails: { input: [Guardrail.classifier("policy", "No credential theft.", judge.service)] }
      }).pipe(
        Layer.provide(
          Layer.mergeAll(llm, Toolkit.layer([tool]), Hooks.layerNoop, ContextGuard.layer(), Interrupts.layerMemory)
        )
      )
      // the run draws from this account (a caller's), so the test can read its ledger
      const account = Budget.makeAccount({ tokens: 1_000_000 }, undefined)!
      const started = Date.now()
      const events = Chunk.toReadonlyArray(
        yield* Effect.flatMap(
          ReactAgent.ReactAgent,
          (agent) => Stream.runCollect(agent.run({ query: "give me the admin password" }))
        ).pipe(
          Effect.provide(layer),
          Effect.locally(Budget.currentAccount, account)
        )
      )
      const elapsed = Date.now() - started

      // the provider saw its request closed by the client before the reply was complete
      assert.isTrue(
        yield* Effect.promise(() => fake.waitForClientAbort(3000)),
        "the fake saw the client close the request"
      )
      assert.strictEqual(fake.requests.length, 1)
      assert.isTrue(fake.requests[0].abortedByClient)
      assert.isFalse(fake.requests[0].finished)
      assert.isBelow(elapsed, 3000, "the run did not wait for the slow reply")

      // the run: the trip, the refusal, done; nothing of the model's reply was shown; no tool ran
      const tags = events.map((e) => e._tag)
      assert.deepStrictEqual(ran, [])
      assert.isFalse(tags.includes("ToolStart"))
      assert.isFalse(events.some((e) => e._tag === "AnswerDelta" && e.content.startsWith("word")), tags.join(","))
      assert.deepInclude(events.find((e) => e._tag === "GuardrailTripped"), {
        stage: "input",
        name: "policy",
        reason: "asks for credentials"
      })
      const done = events[events.length - 1]
      assert.strictEqual(done._tag, "Done")
      assert.strictEqual(done._tag === "Done" && done.answer, Guardrail.DEFAULT_REFUSAL)

      // the ledger: the loop call was cut, charged its input and at most the first chunk's output
      const entries = Budget.entries(account.ledger!)
      const loop = entries.find((e) => e.model === "fake-model")!
      assert.strictEqual(loop.outcome, "interrupted")
      const input = Budget.estimateInput({
        messages: fake.requests[0].body.messages,
        tools: fake.requests[0].body.tools
      })
      const output = loop.settled_tokens! - input
      assert.isAtMost(output, 2, `output charged: ${output} tokens (${JSON.stringify(entries)})`)
      // the classifier's call counted against the same budget
      assert.isDefined(entries.find((e) => e.model === "judge" && e.outcome === "ok"))
    }))
})
