import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger, Ref, Schema, TestClock } from "effect"
import type { AuditEntry } from "../src/HookBuiltins.js"
import { auditLog, rateLimiter, readOnlyMode, resultTruncator, truncateOutput } from "../src/HookBuiltins.js"
import type { Hook, PreDecision, ToolOutcome, ToolUseContext } from "../src/Hooks.js"
import * as Hooks from "../src/Hooks.js"
import * as Tool from "../src/Tool.js"
import { rejectsInvalidHook } from "./utils/hookAssertions.js"

const readTool = Tool.make({
  name: "fs__read",
  description: "Reads a file",
  parameters: Schema.Struct({ path: Schema.String }),
  handler: () => Effect.succeed("content")
})
const writeTool = Tool.make({
  name: "fs__write",
  description: "Writes a file",
  parameters: Schema.Struct({ path: Schema.String, text: Schema.String }),
  handler: () => Effect.succeed("written"),
  readOnly: false
})

const ctx = (tool: Tool.Tool | string, args: Record<string, unknown> = { path: "/a" }): ToolUseContext => ({
  toolName: typeof tool === "string" ? tool : tool.name,
  args,
  toolCallId: "call_7",
  iteration: 3,
  conversationId: "conv-9",
  ...(typeof tool === "string" ? {} : { tool })
})

const success = (output: Tool.ToolOutput): ToolOutcome => ({ _tag: "Success", output })

const pre = (hooks: ReadonlyArray<Hook>, context: ToolUseContext) =>
  Effect.flatMap(Hooks.Hooks, (h) => h.runPreToolUse(context)).pipe(Effect.provide(Hooks.layer(hooks)))
const post = (hooks: ReadonlyArray<Hook>, context: ToolUseContext, outcome: ToolOutcome) =>
  Effect.flatMap(Hooks.Hooks, (h) => h.runPostToolUse(context, outcome)).pipe(Effect.provide(Hooks.layer(hooks)))

const reasonOf = (decision: PreDecision): string => {
  assert.isFalse(decision.allow, "expected the call to be blocked")
  return decision.allow ? "" : decision.reason
}

const rejects = rejectsInvalidHook

describe("resultTruncator", () => {
  it.effect("cuts long text observations with a notice and keeps short ones", () =>
    Effect.gen(function*() {
      const hooks = [resultTruncator({ maxChars: 10 })]
      const long = yield* post(hooks, ctx(readTool), success("abcdefghijklmnopqrstuvwxyz"))
      assert.deepStrictEqual(long, success("abcdefghij\n\n[truncated 16 chars]"))
      const short = success("abcdefghij")
      assert.strictEqual(yield* post(hooks, ctx(readTool), short), short)
      const failure: ToolOutcome = { _tag: "Failure", message: "x".repeat(100) }
      assert.strictEqual(yield* post(hooks, ctx(readTool), failure), failure)
    }))

  it.effect("keeps the rich-result shape and artifacts; truncated JSON becomes text", () =>
    Effect.gen(function*() {
      const hooks = [resultTruncator({ maxChars: 5 })]
      const artifacts = [{ name: "report.pdf", mimeType: "application/pdf", path: "/tmp/report.pdf" }]
      const md = yield* post(
        hooks,
        ctx(readTool),
        success({ content: "# Title\nbody", contentType: "markdown", artifacts })
      )
      assert.deepStrictEqual(
        md,
        success({ content: "# Tit\n\n[truncated 7 chars]", contentType: "markdown", artifacts })
      )
      const json = yield* post(hooks, ctx(readTool), success({ content: "{\"a\":12345}", contentType: "json" }))
      assert.deepStrictEqual(json, success({ content: "{\"a\":\n\n[truncated 6 chars]", contentType: "text" }))
    }))

  it.effect("only applies to matching tools", () =>
    Effect.gen(function*() {
      const hooks = [resultTruncator({ maxChars: 3, matcher: "sql_*" })]
      assert.deepStrictEqual(
        yield* post(hooks, ctx("sql_query"), success("123456")),
        success("123\n\n[truncated 3 chars]")
      )
      assert.deepStrictEqual(yield* post(hooks, ctx(readTool), success("123456")), success("123456"))
    }))

  it("never splits a surrogate pair and rejects a bad maxChars", () => {
    assert.strictEqual(truncateOutput("ab😀cd", 3), "ab\n\n[truncated 4 chars]")
    rejects(() => resultTruncator({ maxChars: 0 }), "maxChars")
    rejects(() => resultTruncator({ maxChars: 2.5 }), "maxChars")
  })
})

describe("readOnlyMode", () => {
  it.effect("blocks writing tools only", () =>
    Effect.gen(function*() {
      const hooks = [readOnlyMode()]
      const blocked = yield* pre(hooks, ctx(writeTool, { path: "/a", text: "x" }))
      assert.deepStrictEqual(blocked, {
        allow: false,
        reason: "The organization is in read-only mode: fs__write writes and is blocked",
        hook: "read-only-mode"
      })
      assert.isTrue((yield* pre(hooks, ctx(readTool))).allow)
      assert.isTrue((yield* pre(hooks, ctx("unknown_tool"))).allow)
    }))

  it.effect("can be switched off, statically or by an Effect read on every call", () =>
    Effect.gen(function*() {
      assert.isTrue((yield* pre([readOnlyMode({ enabled: false })], ctx(writeTool))).allow)
      const flag = yield* Ref.make(false)
      const hooks = [readOnlyMode({ enabled: Ref.get(flag) })]
      assert.isTrue((yield* pre(hooks, ctx(writeTool))).allow)
      yield* Ref.set(flag, true)
      assert.include(reasonOf(yield* pre(hooks, ctx(writeTool))), "read-only mode")
    }))

  it.effect("a failing flag blocks writing tools (fail closed) but not reading ones", () =>
    Effect.gen(function*() {
      const hooks = [readOnlyMode({ enabled: Effect.fail("flag service down") })]
      assert.include(reasonOf(yield* pre(hooks, ctx(writeTool))), "flag service down")
      assert.isTrue((yield* pre(hooks, ctx(readTool))).allow)
    }))
})

describe("rateLimiter", () => {
  it.effect("allows `limit` calls per tool in a sliding window on the Clock", () =>
    Effect.gen(function*() {
      const limiter = rateLimiter({ limit: 2, window: "10 seconds" })
      const h = Hooks.makeUnsafe([limiter])
      const call = (tool: Tool.Tool | string = readTool) => h.runPreToolUse(ctx(tool))

      assert.isTrue((yield* call()).allow) // t=0
      yield* TestClock.adjust("4 seconds")
      assert.isTrue((yield* call()).allow) // t=4
      yield* TestClock.adjust("1 second")
      const reason = reasonOf(yield* call()) // t=5: two calls in (−5, 5]
      assert.include(reason, "Rate limit reached for fs__read")
      assert.include(reason, "at most 2 call(s) per 10s")
      assert.include(reason, "resets in 5s")
      assert.include(reason, "1970-01-01T00:00:10.000Z")
      assert.isTrue((yield* call("other_tool")).allow) // limits are per tool name

      yield* TestClock.adjust("5 seconds") // t=10: the call at t=0 left the window
      assert.isTrue((yield* call()).allow)
      yield* TestClock.adjust("1 second") // t=11: calls at 4 and 10 are in the window
      assert.include(reasonOf(yield* call()), "resets in 3s")
      yield* TestClock.adjust("3 seconds") // t=14: blocked calls were not counted
      assert.isTrue((yield* call()).allow)
    }))

  it.effect("applies only to matching tools and supports a custom key", () =>
    Effect.gen(function*() {
      const h = Hooks.makeUnsafe([
        rateLimiter({ limit: 1, window: "1 minute", matcher: "fs__*", key: (c) => c.conversationId })
      ])
      assert.isTrue((yield* h.runPreToolUse(ctx(readTool))).allow)
      // same conversation key: fs__write shares the budget of fs__read
      assert.include(reasonOf(yield* h.runPreToolUse(ctx(writeTool))), "fs__write")
      assert.isTrue((yield* h.runPreToolUse(ctx("web_fetch"))).allow)
      assert.isTrue((yield* h.runPreToolUse(ctx("web_fetch"))).allow)
    }))

  it("rejects bad limits and windows", () => {
    rejects(() => rateLimiter({ limit: 0, window: "1 second" }), "limit")
    rejects(() => rateLimiter({ limit: 1, window: "0 millis" }), "window")
    rejects(() => rateLimiter({ limit: 1, window: "soon" as any }), "window")
    rejects(() => rateLimiter({ limit: 1, window: Number.POSITIVE_INFINITY }), "window")
  })
})

describe("auditLog", () => {
  it.effect("records an entry per completed call without changing the outcome", () =>
    Effect.gen(function*() {
      const entries: Array<AuditEntry> = []
      const hooks = [auditLog({ sink: (entry) => Effect.sync(() => void entries.push(entry)) })]
      yield* TestClock.adjust("1 minute")
      const ok = success({ content: "hello", contentType: "text" })
      assert.strictEqual(yield* post(hooks, ctx(readTool), ok), ok)
      const failed: ToolOutcome = { _tag: "Failure", message: "permission denied" }
      assert.strictEqual(yield* post(hooks, ctx(writeTool, { path: "/b" }), failed), failed)
      assert.deepStrictEqual(entries, [
        {
          toolName: "fs__read",
          args: { path: "/a" },
          toolCallId: "call_7",
          conversationId: "conv-9",
          iteration: 3,
          ok: true,
          observationChars: 5,
          at: "1970-01-01T00:01:00.000Z"
        },
        {
          toolName: "fs__write",
          args: { path: "/b" },
          toolCallId: "call_7",
          conversationId: "conv-9",
          iteration: 3,
          ok: false,
          error: "permission denied",
          observationChars: 17,
          at: "1970-01-01T00:01:00.000Z"
        }
      ])
    }))

  it.effect("runs after the truncator by default, so it records what the model reads", () =>
    Effect.gen(function*() {
      const entries: Array<AuditEntry> = []
      const hooks = [
        auditLog({ sink: (entry) => Effect.sync(() => void entries.push(entry)) }),
        resultTruncator({ maxChars: 4 })
      ]
      const outcome = yield* post(hooks, ctx(readTool), success("0123456789"))
      assert.deepStrictEqual(outcome, success("0123\n\n[truncated 6 chars]"))
      assert.strictEqual(entries[0].observationChars, "0123\n\n[truncated 6 chars]".length)
    }))

  it.effect("a failing sink never changes the outcome", () =>
    Effect.gen(function*() {
      const warnings: Array<unknown> = []
      const logger = Logger.make(({ logLevel, message }) => {
        if (logLevel._tag === "Warning") warnings.push(message)
      })
      const hooks = [auditLog({ sink: () => Effect.fail(new Error("audit db down")) })]
      const outcome = success("fine")
      const result = yield* post(hooks, ctx(readTool), outcome).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
      assert.strictEqual(result, outcome)
      assert.include(String(warnings), "audit db down")
    }))

  it.effect("the default sink logs the entry at Info level", () =>
    Effect.gen(function*() {
      const lines: Array<{ level: string; message: unknown; annotations: Record<string, unknown> }> = []
      const logger = Logger.make(({ annotations, logLevel, message }) => {
        lines.push({ level: logLevel.label, message, annotations: Object.fromEntries(annotations) })
      })
      yield* post([auditLog()], ctx(writeTool, { path: "/x" }), success("ok")).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
      assert.strictEqual(lines.length, 1)
      assert.strictEqual(lines[0].level, "INFO")
      assert.strictEqual(String(lines[0].message), "tool call")
      assert.strictEqual(lines[0].annotations.toolName, "fs__write")
      assert.strictEqual(lines[0].annotations.args, "{\"path\":\"/x\"}")
      assert.strictEqual(lines[0].annotations.ok, true)
    }))
})
