import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import * as Message from "../../src/Message.js"
import * as ConversationStore from "../../src/server/ConversationStore.js"
import { tempDatabase } from "../utils/serverHarness.js"

const turn = (conversationId: string, query: string, answer: string) => ({
  conversationId,
  query,
  answer,
  messages: [
    Message.assistant(null, { toolCalls: [Message.toolCall("c1", "calculator", "{\"expression\":\"1+1\"}")] }),
    Message.tool("c1", "1+1 = 2", "calculator")
  ],
  usage: { total_tokens: 3 },
  status: "completed" as const
})

describe("ConversationStore (SQLite)", () => {
  it.live("stores turns, gives history and details, lists by recency; reopens the same file", () =>
    Effect.gen(function*() {
      const path = tempDatabase()
      yield* Effect.gen(function*() {
        const store = yield* ConversationStore.ConversationStore
        assert.isFalse(yield* store.exists("a"))
        assert.deepStrictEqual(yield* store.history("a"), [])
        assert.isTrue(Option.isNone(yield* store.get("a")))
        yield* store.appendTurn(turn("a", "  first\nquestion  ", "one"))
        yield* Effect.sleep(5)
        yield* store.appendTurn(turn("b", "x".repeat(200), "bee"))
        yield* Effect.sleep(5)
        yield* store.appendTurn(turn("a", "second", "two"))
      }).pipe(Effect.provide(ConversationStore.layerSqlite(path)))

      // a second open runs the migrations again (no-op) and sees everything
      yield* Effect.gen(function*() {
        const store = yield* ConversationStore.ConversationStore
        assert.isTrue(yield* store.exists("a"))
        assert.deepStrictEqual(yield* store.history("a"), [
          Message.user("  first\nquestion  "),
          Message.assistant("one"),
          Message.user("second"),
          Message.assistant("two")
        ])
        const list = yield* store.list()
        assert.deepStrictEqual(list.map((c) => [c.id, c.turns]), [["a", 2], ["b", 1]])
        assert.strictEqual(list[0].title, "first question")
        assert.strictEqual(list[1].title.length, 80)
        assert.isTrue(list[1].title.endsWith("…"))
        const detail = Option.getOrThrow(yield* store.get("a"))
        assert.deepStrictEqual(detail.messages.map((m) => m.role), [
          "user",
          "assistant",
          "tool",
          "assistant",
          "user",
          "assistant",
          "tool",
          "assistant"
        ])
        assert.deepStrictEqual(detail.turn_details.map((t) => [t.turn, t.status, t.usage]), [
          [1, "completed", { total_tokens: 3 }],
          [2, "completed", { total_tokens: 3 }]
        ])
      }).pipe(Effect.provide(ConversationStore.layerSqlite(path)))
    }))

  it.live("an unusable path fails the layer with a StoreError naming it", () =>
    Effect.gen(function*() {
      // a regular file where the directory should be
      const file = join(dirname(dirname(tempDatabase())), "a-file")
      writeFileSync(file, "")
      const path = join(file, "db.sqlite")
      const error = yield* Effect.flip(
        Effect.provide(ConversationStore.ConversationStore, ConversationStore.layerSqlite(path))
      )
      assert.strictEqual(error._tag, "StoreError")
      assert.include(error.message, path)
    }))

  it.live("a run's turn is stored once: appending it again (its last step re-run after a crash) changes nothing; turns without a run id each count", () =>
    Effect.gen(function*() {
      const store = yield* ConversationStore.ConversationStore
      yield* store.appendTurn({ ...turn("r", "first", "one"), runId: "run_1" })
      yield* store.appendTurn({ ...turn("r", "first", "one"), runId: "run_1" })
      yield* store.appendTurn({ ...turn("r", "second", "two"), runId: "run_2" })
      yield* store.appendTurn(turn("r", "third", "three"))
      yield* store.appendTurn(turn("r", "third", "three"))
      assert.deepStrictEqual(
        (yield* store.history("r")).filter((m) => m.role === "user").map((m) => m.content),
        ["first", "second", "third", "third"]
      )
      const detail = Option.getOrThrow(yield* store.get("r"))
      assert.deepStrictEqual(detail.turn_details.map((t) => t.turn), [1, 2, 3, 4])
      assert.strictEqual((yield* store.list()).find((c) => c.id === "r")?.turns, 4)
    }).pipe(Effect.provide(ConversationStore.layerSqlite(tempDatabase()))))
})
