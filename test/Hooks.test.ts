import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Logger, Ref } from "effect"
import * as fc from "effect/FastCheck"
import type { Hook, PreDecision, ToolOutcome, ToolUseContext } from "../src/Hooks.js"
import { matches } from "../src/Hooks.js"
import * as Hooks from "../src/Hooks.js"
import { rejectsInvalidHook } from "./utils/hookAssertions.js"

const ctx = (toolName = "fs__read", args: Record<string, unknown> = { path: "/a" }): ToolUseContext => ({
  toolName,
  args,
  toolCallId: "call_1",
  iteration: 1,
  conversationId: "conv-1"
})

const success = (output: string): ToolOutcome => ({ _tag: "Success", output })

const withHooks = <A, E>(
  hooks: ReadonlyArray<Hook>,
  body: (hooks: Context.Tag.Service<Hooks.Hooks>) => Effect.Effect<A, E>
) => Effect.flatMap(Hooks.Hooks, body).pipe(Effect.provide(Hooks.layer(hooks)))

/** Pre and Post hooks that append their name to a log and change nothing. */
const recordingPre = (log: Array<string>, name: string, priority: number, matcher?: string) =>
  Hooks.pre({ name, priority, ...(matcher ? { matcher } : {}), run: () => Effect.sync(() => void log.push(name)) })
const recordingPost = (log: Array<string>, name: string, priority: number) =>
  Hooks.post({ name, priority, run: () => Effect.sync(() => void log.push(name)) })

/** Collects warning logs. */
const captureWarnings = () => {
  const warnings: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel._tag === "Warning") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
  })
  return { warnings, layer: Logger.replace(Logger.defaultLogger, logger) }
}

const assertBlocked = (decision: PreDecision, hook: string, ...fragments: Array<string>) => {
  assert.isFalse(decision.allow)
  if (decision.allow) return
  assert.strictEqual(decision.hook, hook)
  for (const fragment of fragments) assert.include(decision.reason, fragment)
}

describe("Hooks", () => {
  it.effect("the empty layer allows every call unchanged and keeps every outcome", () =>
    Effect.gen(function*() {
      const hooks = yield* Hooks.Hooks
      const context = ctx()
      const decision = yield* hooks.runPreToolUse(context)
      assert.deepStrictEqual(decision, { allow: true, args: context.args })
      const outcome = success("x")
      assert.strictEqual(yield* hooks.runPostToolUse(context, outcome), outcome)
    }).pipe(Effect.provide(Hooks.layerNoop)))

  it.effect("runs Pre and Post hooks by priority, equal priorities in registration order", () => {
    const log: Array<string> = []
    const hooks = [
      recordingPre(log, "p5a", 5),
      recordingPost(log, "q2", 2),
      recordingPre(log, "p1a", 1),
      recordingPre(log, "p5b", 5),
      recordingPost(log, "q-1", -1),
      recordingPre(log, "p-3", -3),
      recordingPre(log, "p1b", 1),
      recordingPost(log, "q2b", 2)
    ]
    return withHooks(hooks, (h) =>
      Effect.gen(function*() {
        yield* h.runPreToolUse(ctx())
        assert.deepStrictEqual(log.splice(0), ["p-3", "p1a", "p1b", "p5a", "p5b"])
        yield* h.runPostToolUse(ctx(), success("ok"))
        assert.deepStrictEqual(log.splice(0), ["q-1", "q2", "q2b"])
      }))
  })

  it.effect("the glob filter selects the tools a hook applies to", () => {
    const log: Array<string> = []
    const hooks = [
      recordingPre(log, "fs", 0, "fs__*"),
      recordingPre(log, "write", 0, "write_?"),
      recordingPre(log, "all", 0, "*"),
      recordingPre(log, "dot", 0, "a.b"),
      Hooks.pre({ name: "list", matcher: ["x", "web_*"], run: () => Effect.sync(() => void log.push("list")) })
    ]
    return withHooks(hooks, (h) =>
      Effect.gen(function*() {
        const seen = (tool: string) => Effect.map(h.runPreToolUse(ctx(tool)), () => log.splice(0))
        assert.deepStrictEqual(yield* seen("fs__read"), ["fs", "all"])
        assert.deepStrictEqual(yield* seen("write_a"), ["write", "all"])
        assert.deepStrictEqual(yield* seen("write_ab"), ["all"])
        assert.deepStrictEqual(yield* seen("axb"), ["all"])
        assert.deepStrictEqual(yield* seen("a.b"), ["all", "dot"])
        assert.deepStrictEqual(yield* seen("web_fetch"), ["all", "list"])
        assert.deepStrictEqual(yield* seen("my_fs__read"), ["all"])
      }))
  })

  it("matches() exposes the glob semantics", () => {
    assert.isTrue(matches(undefined, "anything"))
    assert.isTrue(matches("fs__*", "fs__"))
    assert.isFalse(matches("fs__*", "fs_"))
    assert.isTrue(matches("?", "a"))
    assert.isFalse(matches("?", "ab"))
    assert.isTrue(matches("a+(b)", "a+(b)"))
    assert.isFalse(matches("a+", "aa"))
  })

  it.effect("a block stops the chain and carries the reason and the hook's name", () => {
    const log: Array<string> = []
    const hooks = [
      recordingPre(log, "first", 0),
      Hooks.pre({
        name: "gate",
        priority: 1,
        run: () => Effect.succeed({ allow: false, reason: "Waiting for approval" })
      }),
      recordingPre(log, "after", 2)
    ]
    return withHooks(hooks, (h) =>
      Effect.gen(function*() {
        const decision = yield* h.runPreToolUse(ctx())
        assert.deepStrictEqual(decision, { allow: false, reason: "Waiting for approval", hook: "gate" })
        assert.deepStrictEqual(log, ["first"])
      }))
  })

  it.effect("replaced arguments are seen by later hooks and returned", () => {
    const seen: Array<Record<string, unknown>> = []
    const hooks = [
      Hooks.pre({
        name: "normalise",
        priority: 0,
        run: (c) => Effect.succeed({ allow: true, args: { ...c.args, path: "/safe/a" } })
      }),
      Hooks.pre({ name: "observe", priority: 1, run: (c) => Effect.sync(() => void seen.push(c.args)) }),
      Hooks.pre({
        name: "limit",
        priority: 2,
        run: (c) => Effect.succeed({ allow: true, args: { ...c.args, limit: 10 } })
      })
    ]
    return withHooks(hooks, (h) =>
      Effect.gen(function*() {
        const decision = yield* h.runPreToolUse(ctx("fs__read", { path: "/a" }))
        assert.deepStrictEqual(seen, [{ path: "/safe/a" }])
        assert.deepStrictEqual(decision, { allow: true, args: { path: "/safe/a", limit: 10 } })
      }))
  })

  it.effect("Post hooks chain replacement outcomes; void keeps the current one", () => {
    const received: Array<ToolOutcome> = []
    const hooks = [
      Hooks.post({
        name: "upper",
        priority: 0,
        run: (_, o) => Effect.succeed(o._tag === "Success" ? success(String(o.output).toUpperCase()) : o)
      }),
      Hooks.post({ name: "noop", priority: 1, run: (_, o) => Effect.sync(() => void received.push(o)) }),
      Hooks.post({
        name: "suffix",
        priority: 2,
        run: (_, o) => Effect.succeed(o._tag === "Success" ? success(`${o.output}!`) : o)
      })
    ]
    return withHooks(hooks, (h) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* h.runPostToolUse(ctx(), success("done")), success("DONE!"))
        assert.deepStrictEqual(received, [success("DONE")])
        const failure: ToolOutcome = { _tag: "Failure", message: "boom" }
        assert.deepStrictEqual(yield* h.runPostToolUse(ctx(), failure), failure)
      }))
  })

  it.effect("a failing Pre hook blocks the call (fail closed), naming the hook and the error", () => {
    const log: Array<string> = []
    const { layer, warnings } = captureWarnings()
    const hooks = [
      Hooks.pre({ name: "policy", run: () => Effect.fail(new Error("policy service unreachable")) }),
      recordingPre(log, "after", 1)
    ]
    return withHooks(hooks, (h) =>
      Effect.gen(function*() {
        const decision = yield* h.runPreToolUse(ctx("fs__write"))
        assertBlocked(decision, "policy", "policy", "policy service unreachable", "fs__write")
        assert.deepStrictEqual(log, [])
        assert.strictEqual(warnings.length, 1)
        assert.include(warnings[0], "fail closed")
      })).pipe(Effect.provide(layer))
  })

  it.effect("a failOpen Pre hook's failure lets the chain go on with the current arguments", () => {
    const seen: Array<Record<string, unknown>> = []
    const hooks = [
      Hooks.pre({ name: "rewrite", priority: 0, run: () => Effect.succeed({ allow: true, args: { path: "/b" } }) }),
      Hooks.pre({ name: "metrics", priority: 1, failOpen: true, run: () => Effect.fail("metrics down") }),
      Hooks.pre({ name: "observe", priority: 2, run: (c) => Effect.sync(() => void seen.push(c.args)) })
    ]
    return withHooks(hooks, (h) =>
      Effect.gen(function*() {
        const decision = yield* h.runPreToolUse(ctx())
        assert.deepStrictEqual(decision, { allow: true, args: { path: "/b" } })
        assert.deepStrictEqual(seen, [{ path: "/b" }])
      }))
  })

  it.effect("defects, throwing run functions and non-Effect returns are handled like failures", () => {
    const hooks = (run: () => any, failOpen = false) => [Hooks.pre({ name: "bad", failOpen, run })]
    const decide = (run: () => any, failOpen = false) => withHooks(hooks(run, failOpen), (h) => h.runPreToolUse(ctx()))
    return Effect.gen(function*() {
      assertBlocked(yield* decide(() => Effect.die(new TypeError("x is undefined"))), "bad", "defect", "x is undefined")
      assertBlocked(
        yield* decide(() => {
          throw new Error("thrown synchronously")
        }),
        "bad",
        "thrown synchronously"
      )
      assertBlocked(yield* decide(() => Promise.resolve(undefined)), "bad", "not an Effect")
      assert.isTrue((yield* decide(() => Effect.dieMessage("oops"), true)).allow)
    })
  })

  it.effect("malformed Pre results block; malformed Post results are ignored", () =>
    Effect.gen(function*() {
      const decide = (result: unknown) =>
        withHooks([Hooks.pre({ name: "odd", run: () => Effect.succeed(result as any) })], (h) => h.runPreToolUse(ctx()))
      assertBlocked(yield* decide({ allow: "yes" }), "odd", "allow")
      assertBlocked(yield* decide({ allow: true, args: ["not", "an", "object"] }), "odd", "not an object")
      assertBlocked(yield* decide(42), "odd", "number")
      assertBlocked(yield* decide({ allow: false }), "odd", "Blocked by hook \"odd\"")
      assert.isTrue((yield* decide(null)).allow)
      const keep = yield* withHooks(
        [Hooks.post({ name: "odd", run: () => Effect.succeed({ _tag: "Success", output: 42 } as any) })],
        (h) => h.runPostToolUse(ctx(), success("kept"))
      )
      assert.deepStrictEqual(keep, success("kept"))
    }))

  it.effect("a failing Post hook keeps the outcome it received and the chain goes on", () => {
    const { layer, warnings } = captureWarnings()
    const hooks = [
      Hooks.post({ name: "tag", priority: 0, run: () => Effect.succeed(success("tagged")) }),
      Hooks.post({ name: "broken", priority: 1, run: () => Effect.fail({ _tag: "SinkError", message: "disk full" }) }),
      Hooks.post({ name: "dies", priority: 2, run: () => Effect.die("bug") }),
      Hooks.post({ name: "suffix", priority: 3, run: (_, o) => Effect.succeed(success(`${(o as any).output}+`)) })
    ]
    return withHooks(hooks, (h) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* h.runPostToolUse(ctx(), success("raw")), success("tagged+"))
        assert.strictEqual(warnings.length, 2)
        assert.include(warnings[0], "broken")
        assert.include(warnings[0], "SinkError: disk full")
        assert.include(warnings[1], "dies")
      })).pipe(Effect.provide(layer))
  })

  it.effect("interruption inside a hook propagates instead of blocking or allowing", () =>
    Effect.gen(function*() {
      const pre = yield* withHooks([Hooks.pre({ name: "stop", failOpen: true, run: () => Effect.interrupt })], (h) =>
        h.runPreToolUse(ctx())).pipe(Effect.exit)
      assert.isTrue(Exit.isInterrupted(pre))
      const post = yield* withHooks([Hooks.post({
        name: "stop",
        run: () =>
          Effect.interrupt
      })], (h) => h.runPostToolUse(ctx(), success("x"))).pipe(Effect.exit)
      assert.isTrue(Exit.isInterrupted(post))
    }))

  it.effect("interrupting a run interrupts a slow hook", () =>
    Effect.gen(function*() {
      const released = yield* Ref.make(false)
      const started = yield* Effect.makeLatch(false)
      const slow = Hooks.pre({
        name: "approval",
        run: () => started.open.pipe(Effect.zipRight(Effect.never), Effect.onInterrupt(() => Ref.set(released, true)))
      })
      const fiber = yield* withHooks([slow], (h) => h.runPreToolUse(ctx())).pipe(Effect.fork)
      yield* started.await
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.isTrue(yield* Ref.get(released))
    }))

  it.effect("hooks may require services, taken from the layer's context", () => {
    class Policy extends Context.Tag("test/Policy")<Policy, { readonly denied: ReadonlyArray<string> }>() {}
    const hook = Hooks.pre({
      name: "policy",
      run: (c) =>
        Effect.map(
          Policy,
          (p) => (p.denied.includes(c.toolName) ? { allow: false as const, reason: "denied" } : undefined)
        )
    })
    const layer = Hooks.layer([hook]).pipe(Layer.provide(Layer.succeed(Policy, { denied: ["rm"] })))
    return Effect.gen(function*() {
      const h = yield* Hooks.Hooks
      assertBlocked(yield* h.runPreToolUse(ctx("rm")), "policy", "denied")
      assert.isTrue((yield* h.runPreToolUse(ctx("ls"))).allow)
    }).pipe(Effect.provide(layer))
  })

  it("bad definitions are rejected with a clear InvalidHook", () => {
    const run = () => Effect.void
    const rejects = rejectsInvalidHook
    rejects(() => Hooks.pre({ name: "", run }), "non-empty name")
    rejects(() => Hooks.pre({ name: "p", priority: Number.NaN, run }), "priority")
    rejects(() => Hooks.post({ name: "p", matcher: "", run }), "matcher")
    rejects(() => Hooks.post({ name: "p", matcher: [], run }), "matcher")
    rejects(() => Hooks.pre({ name: "p", run: undefined as any }), "run function")
    rejects(() => Hooks.makeUnsafe([{ name: "x" } as any]), "Hooks.pre / Hooks.post")
    rejects(() => Hooks.makeUnsafe(null as any), "array")
  })

  it.effect.prop(
    "the execution order is the priority-stable sort of the registered hooks",
    { priorities: fc.array(fc.integer({ min: -3, max: 3 }), { maxLength: 12 }) },
    ({ priorities }) => {
      const log: Array<string> = []
      const hooks = priorities.map((priority, i) => recordingPre(log, `h${i}`, priority))
      return withHooks(hooks, (h) =>
        Effect.map(h.runPreToolUse(ctx()), () => {
          // every hook ran exactly once …
          assert.deepStrictEqual([...log].sort(), hooks.map((hook) => hook.name).sort())
          // … in non-decreasing priority, ties in registration order
          const order = log.map((name) => Number(name.slice(1)))
          for (let k = 1; k < order.length; k++) {
            const [a, b] = [order[k - 1], order[k]]
            assert.isTrue(
              priorities[a] < priorities[b] || (priorities[a] === priorities[b] && a < b),
              `h${a} before h${b}`
            )
          }
        }))
    }
  )
})

describe("Hooks: applies", () => {
  const names = fc.constantFrom("fs__read", "fs__write", "web_search", "add", "mcp__x__y")
  const matchers = fc.option(fc.constantFrom("fs__*", "add", "web_*", "mcp__*", "*"), { nil: undefined })

  it.effect.prop(
    "running an event's hooks for a tool runs one exactly when one's matcher takes the tool",
    { pre: fc.array(matchers, { maxLength: 4 }), post: fc.array(matchers, { maxLength: 4 }), tool: names },
    ({ pre, post, tool }) => {
      const log: Array<string> = []
      const hooks = [
        ...pre.map((m, i) => recordingPre(log, `pre${i}`, 0, m)),
        ...post.map((m, i) =>
          Hooks.post({
            name: `post${i}`,
            ...(m ? { matcher: m } : {}),
            run: () => Effect.sync(() => void log.push(`post${i}`))
          })
        )
      ]
      return withHooks(hooks, (h) =>
        Effect.gen(function*() {
          yield* h.runPreToolUse(ctx(tool))
          const preRan = log.length > 0
          log.length = 0
          yield* h.runPostToolUse(ctx(tool), success("x"))
          const postRan = log.length > 0
          const takes = (ms: ReadonlyArray<string | undefined>) => ms.some((m) => Hooks.compile(m)(tool))
          assert.strictEqual(preRan, takes(pre))
          assert.strictEqual(postRan, takes(post))
        }))
    }
  )
})
