/**
 * Memory across conversations in process (SPEC §25): recall into the first
 * request of the user's next conversation (never another user's), the working
 * memory changed by `update_memory` shown in the next system prompt, an
 * embeddings outage that leaves runs answering, nothing read or written
 * without a user id, updates applied once per idempotency key, embedding
 * tokens metered.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Memory from "../src/Memory.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { makeWorld, requestText, runOnce } from "./utils/memoryAgents.js"

const FACT = "My dog is called Biscuit and she only eats carrots"

describe("Memory", () => {
  it.effect("a fact of one conversation is in the first request of the user's next conversation, never in another user's", () =>
    Effect.gen(function*() {
      const world = makeWorld()
      const told = yield* runOnce(world, [ScriptedLlm.text("Noted: Biscuit eats carrots.")], {
        query: FACT,
        conversationId: "conv-a",
        userId: "ada"
      })
      assert.strictEqual(told.done.answer, "Noted: Biscuit eats carrots.")
      const next = yield* runOnce(world, [ScriptedLlm.text("Carrots.")], {
        query: "What does my dog Biscuit eat?",
        conversationId: "conv-b",
        userId: "ada"
      })
      const first = requestText(next.requests[0])
      assert.include(first, FACT)
      assert.include(first, "Noted: Biscuit eats carrots.")
      const recalled = next.events.find((e) => e._tag === "MemoryRecalled")
      assert.deepStrictEqual(recalled?._tag === "MemoryRecalled" ? recalled.items.map((i) => i.conversation_id) : [], [
        "conv-a"
      ])
      // the recall event names conversations and scores, never the text
      assert.notInclude(JSON.stringify(recalled), "Biscuit")

      const other = yield* runOnce(world, [ScriptedLlm.text("I do not know.")], {
        query: "What does my dog Biscuit eat?",
        conversationId: "conv-c",
        userId: "grace"
      })
      for (const request of other.requests) assert.notInclude(requestText(request), "carrots")
      // the same conversation is not recalled into itself (its history carries it)
      const again = yield* runOnce(world, [ScriptedLlm.text("Carrots.")], {
        query: "What does Biscuit eat?",
        conversationId: "conv-a",
        userId: "ada"
      })
      const items = again.events.flatMap((e) => (e._tag === "MemoryRecalled" ? e.items : []))
      assert.isFalse(items.some((i) => i.conversation_id === "conv-a"))
    }))

  it.effect("a question asked again and again is one memory: it does not push what the user told out of recall", () =>
    Effect.gen(function*() {
      const world = makeWorld()
      yield* runOnce(world, [ScriptedLlm.text("Noted.")], { query: FACT, conversationId: "conv-a", userId: "ada" })
      // asked more often than the recall has places (top 4), answered the same way each time
      for (let i = 0; i < 6; i++) {
        yield* runOnce(world, [ScriptedLlm.text("I am not sure.")], {
          query: "What does my dog eat?",
          conversationId: `conv-q${i}`,
          userId: "ada"
        })
      }
      const next = yield* runOnce(world, [ScriptedLlm.text("Carrots.")], {
        query: "What does my dog eat?",
        conversationId: "conv-b",
        userId: "ada"
      })
      assert.include(requestText(next.requests[0]), FACT)
      const recalled = next.events.flatMap((e) => (e._tag === "MemoryRecalled" ? e.items : []))
      // the repeated turn once, as last said, and the fact
      assert.deepStrictEqual(recalled.map((i) => i.conversation_id), ["conv-q5", "conv-a"])
    }))

  it.effect("update_memory changes what the next conversation's system prompt says", () =>
    Effect.gen(function*() {
      const world = makeWorld()
      const first = yield* runOnce(world, [
        ScriptedLlm.toolCall(Memory.UPDATE_TOOL, { set: { favourite_colour: "teal", city: "Lyon" } }),
        ScriptedLlm.text("I will remember that.")
      ], { query: "I love teal and I live in Lyon", conversationId: "c1", userId: "ada" })
      const tools = first.requests[0].request.tools?.map((t) => t.function.name) ?? []
      assert.include(tools, Memory.UPDATE_TOOL)
      const updated = first.events.filter((e) => e._tag === "MemoryUpdated")
      assert.deepStrictEqual(updated.map((e) => (e._tag === "MemoryUpdated" ? e.keys : [])), [[
        "favourite_colour",
        "city"
      ]])
      // the observation names keys, not values (it goes to clients)
      const done = first.events.find((e) => e._tag === "ToolDone")
      assert.isTrue(done?._tag === "ToolDone" && done.error === null && !done.observation.includes("teal"))

      const second = yield* runOnce(world, [
        ScriptedLlm.toolCall(Memory.UPDATE_TOOL, { remove: ["city"], set: { city_note: "moved away" } }),
        ScriptedLlm.text("Updated.")
      ], { query: "I moved away from Lyon", conversationId: "c2", userId: "ada" })
      const system = second.requests[0].request.messages[0]
      assert.strictEqual(system.role, "system")
      assert.include(JSON.stringify(system.content), "\\\"favourite_colour\\\": \\\"teal\\\"")
      assert.include(JSON.stringify(system.content), "\\\"city\\\": \\\"Lyon\\\"")

      const third = yield* runOnce(world, [ScriptedLlm.text("Hi")], {
        query: "hello",
        conversationId: "c3",
        userId: "ada"
      })
      const prompt = JSON.stringify(third.requests[0].request.messages[0].content)
      assert.include(prompt, "city_note")
      assert.notInclude(prompt, "\\\"city\\\": \\\"Lyon\\\"")
      // another user's prompt has none of it
      const other = yield* runOnce(world, [ScriptedLlm.text("Hi")], {
        query: "hello",
        conversationId: "c4",
        userId: "grace"
      })
      assert.notInclude(JSON.stringify(other.requests[0].request.messages[0].content), "teal")
    }))

  it.effect("an embeddings outage leaves runs answering, and says so", () =>
    Effect.gen(function*() {
      const world = makeWorld()
      yield* runOnce(world, [ScriptedLlm.text("Noted.")], { query: FACT, conversationId: "a", userId: "ada" })
      world.embedder.state.down = true
      const run = yield* runOnce(world, [ScriptedLlm.text("Carrots, I think.")], {
        query: "What does Biscuit eat?",
        conversationId: "b",
        userId: "ada"
      })
      assert.strictEqual(run.done.answer, "Carrots, I think.")
      const reasons = run.events.flatMap((e) => (e._tag === "MemoryUnavailable" ? [e.reason] : []))
      assert.strictEqual(reasons.length, 2) // no recall, and the turn is not indexed
      assert.match(reasons[0], /embeddings failed: 503/)
      assert.match(reasons[1], /not indexed/)
      assert.isFalse(run.events.some((e) => e._tag === "RunFailed"))
      assert.notInclude(requestText(run.requests[0]), "carrots")
      world.embedder.state.down = false
      const items = yield* world.memory.inspect("ada")
      assert.deepStrictEqual(items.items.map((i) => i.conversation_id), ["a"])
    }))

  it.effect("without a user id nothing is read or written", () =>
    Effect.gen(function*() {
      const world = makeWorld()
      yield* world.memory.update({
        userId: "ada",
        patch: { set: { secret: "violet" } },
        idempotencyKey: "k0",
        epoch: 0
      })
      const run = yield* runOnce(world, [ScriptedLlm.text("Hello.")], { query: FACT, conversationId: "a" })
      assert.strictEqual(world.embedder.state.texts.length, 0)
      const text = requestText(run.requests[0])
      assert.notInclude(text, "violet")
      assert.notInclude(text, Memory.UPDATE_TOOL)
      assert.isFalse(run.events.some((e) => e._tag.startsWith("Memory")))
      assert.deepStrictEqual((yield* world.memory.inspect("ada")).items, [])
      assert.isUndefined(run.done.usage.by_phase.memory)
    }))

  it.effect("an update is applied once per idempotency key, and refused after a forget", () =>
    Effect.gen(function*() {
      const world = makeWorld()
      const one = yield* world.memory.update({
        userId: "ada",
        patch: { set: { n: 1 } },
        idempotencyKey: "k1",
        epoch: 0
      })
      yield* world.memory.update({ userId: "ada", patch: { set: { n: 2 } }, idempotencyKey: "k2", epoch: 0 })
      // k1 again (a call re-run after a crash): its first result, and n stays 2
      const again = yield* world.memory.update({
        userId: "ada",
        patch: { set: { n: 1 } },
        idempotencyKey: "k1",
        epoch: 0
      })
      assert.deepStrictEqual(again, one)
      assert.deepStrictEqual((yield* world.memory.inspect("ada")).working_memory, { n: 2 })
      yield* world.memory.forget("ada")
      const refused = yield* Effect.flip(
        world.memory.update({ userId: "ada", patch: { set: { n: 3 } }, idempotencyKey: "k3", epoch: 0 })
      )
      assert.match(refused.message, /forgotten/)
      assert.deepStrictEqual((yield* world.memory.inspect("ada")).working_memory, {})
    }))

  it.effect("a typed working memory refuses updates that do not match its schema", () =>
    Effect.gen(function*() {
      const world = makeWorld({
        schema: Schema.Struct({ name: Schema.optional(Schema.String), age: Schema.optional(Schema.Number) })
      })
      const run = yield* runOnce(world, [
        ScriptedLlm.toolCall(Memory.UPDATE_TOOL, { set: { age: "forty" } }),
        ScriptedLlm.text("Could not save.")
      ], { query: "I am forty", conversationId: "c", userId: "ada" })
      const done = run.events.find((e) => e._tag === "ToolDone")
      assert.isTrue(done?._tag === "ToolDone" && done.error !== null && /schema/.test(done.error))
      assert.isFalse(run.events.some((e) => e._tag === "MemoryUpdated"))
      assert.deepStrictEqual((yield* world.memory.inspect("ada")).working_memory, {})
    }))

  it.effect("embedding tokens are in done.usage.by_phase.memory and in the budget", () =>
    Effect.gen(function*() {
      const world = makeWorld()
      const run = yield* runOnce(world, [ScriptedLlm.text("Noted.")], {
        query: FACT,
        conversationId: "a",
        userId: "ada"
      }, {
        agent: { budget: { tokens: 100_000 } }
      })
      const memory = run.done.usage.by_phase.memory
      assert.isDefined(memory)
      assert.isAbove(memory?.prompt_tokens ?? 0, 0)
      assert.isAtLeast(
        run.done.usage.total_tokens,
        (memory?.prompt_tokens ?? 0) + (run.done.usage.by_phase.loop?.total_tokens ?? 0)
      )
      // a budget with no room for an embedding: the run answers without recall
      const poor = yield* runOnce(world, [ScriptedLlm.text("Hi.")], {
        query: "What does Biscuit eat?",
        conversationId: "b",
        userId: "ada"
      }, {
        agent: { budget: { tokens: 3 } }
      })
      const reasons = poor.events.flatMap((e) => (e._tag === "MemoryUnavailable" ? [e.reason] : []))
      assert.match(reasons[0] ?? "", /embedding budget/)
    }))
})
