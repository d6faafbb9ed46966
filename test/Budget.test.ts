/**
 * Budgets (SPEC §21): every model call reserves its worst case before it is
 * made and settles with the billed usage; the loop stops when the budget
 * cannot pay for one more loop call and the answer, and the run still answers.
 *
 * The fake provider bills honestly: the prompt at the engine's token estimate
 * (the estimate is the contract the reservation is made on) and at most the
 * `max_tokens` the request asked for, cutting the reply as a provider would.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fc from "effect/FastCheck"
import * as Stream from "effect/Stream"
import * as Budget from "../src/Budget.js"
import type { ChatRequest } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import * as OpenAiLlm from "../src/OpenAiLlm.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunResult } from "../src/RunEvent.js"
import type { ScriptStep } from "../src/ScriptedLlm.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { echoTool, makeAgent } from "./utils/agentLayers.js"
import * as FakeOpenAi from "./utils/fakeOpenAiServer.js"

/** What the fakes of one run billed, over every model call of every agent. */
interface Bill {
  tokens: number
  calls: number
}

/** A reply billed honestly: prompt = the estimate, output cut at the request's `maxTokens`. */
const billed = (bill: Bill, request: ChatRequest, step: ScriptStep): ScriptStep => {
  if (step._tag !== "Reply") return step
  const cap = request.maxTokens ?? Infinity
  const content = step.content ?? ""
  const args = (step.toolCalls ?? []).reduce((n, c) => n + JSON.stringify(c.arguments ?? {}).length, 0)
  const wanted = Math.ceil((content.length + args) / 4) + 1
  const completion = Math.min(wanted, cap)
  const prompt = Budget.estimateInput(request)
  bill.tokens += prompt + completion
  bill.calls++
  const cut = completion < wanted
  return {
    ...step,
    content: cut ? content.slice(0, Math.max(0, completion - 1) * 4) : content,
    ...(cut && step.toolCalls !== undefined ? { toolCalls: [] } : {}),
    usage: { prompt, completion }
  }
}

/**
 * A billing responder over a list of steps (the last repeats). A request that
 * offers no tools (synthesis) gets the last step, the answer: a model cannot
 * call a tool it was not offered.
 */
const responder = (bill: Bill, steps: ReadonlyArray<ScriptStep>): ScriptedLlm.Responder => (request, i) =>
  billed(
    bill,
    request,
    request.tools === undefined || request.tools.length === 0
      ? steps[steps.length - 1]
      : steps[Math.min(i, steps.length - 1)]
  )

const pairedToolCalls = (result: RunResult): boolean => {
  const answered = new Set(
    result.messages.filter((m) => m.role === "tool").map((m) => (m as { tool_call_id: string }).tool_call_id)
  )
  return result.messages.every((m) => m.role !== "assistant" || (m.tool_calls ?? []).every((c) => answered.has(c.id)))
}

/** Runs the agent; its events and its result. */
const runOf = (agent: ReturnType<typeof makeAgent>, query = "work") =>
  Effect.flatMap(ReactAgent.ReactAgent, (a) =>
    Effect.flatMap(Stream.runCollect(a.run({ query })), (chunk) => {
      const events = Chunk.toReadonlyArray(chunk)
      return Effect.map(ReactAgent.collect(Stream.fromIterable(events)), (result) => ({ events, result }))
    })).pipe(Effect.provide(agent.layer))

const echo = (n: number) => ScriptedLlm.toolCall("echo", { text: `step ${n} ${"lorem ipsum ".repeat(10)}` })

describe("Budget", () => {
  it.effect("a token budget stops the loop before it cannot pay for the answer; the run still answers", () =>
    Effect.gen(function*() {
      const bill: Bill = { tokens: 0, calls: 0 }
      const steps = [
        echo(1),
        echo(2),
        echo(3),
        echo(4),
        echo(5),
        echo(6),
        echo(7),
        echo(8),
        ScriptedLlm.text("The final answer.")
      ]
      const agent = makeAgent(responder(bill, steps), {
        tools: [echoTool],
        agent: { completionCheck: false, budget: { tokens: 2500, reserveOutputTokens: 64 } }
      })
      const { events, result } = yield* runOf(agent)
      const exhausted = events.filter((e) => e._tag === "BudgetExhausted")
      assert.strictEqual(exhausted.length, 1)
      assert.strictEqual(exhausted[0]._tag === "BudgetExhausted" && exhausted[0].limit_tokens, 2500)
      assert.isUndefined(result.error)
      assert.isTrue(result.answer.length > 0)
      assert.isTrue(bill.tokens <= 2500, `billed ${bill.tokens}`)
      // it stopped early: fewer than the eight tool rounds the model wanted
      assert.isTrue(result.steps.length < 8, `steps ${result.steps.length}`)
      assert.isTrue(pairedToolCalls(result))
    }))

  it.effect("phase budget_exhausted carries the spent tokens and the limit; done.usage has cost_usd with prices", () =>
    Effect.gen(function*() {
      const bill: Bill = { tokens: 0, calls: 0 }
      const steps = [echo(1), echo(2), echo(3), echo(4), echo(5), echo(6), ScriptedLlm.text("Done.")]
      const agent = makeAgent(responder(bill, steps), {
        tools: [echoTool],
        agent: {
          completionCheck: false,
          budget: { usd: 0.002, prices: { scripted: { input: 1, output: 2 } }, reserveOutputTokens: 64 }
        }
      })
      const { events, result } = yield* runOf(agent)
      assert.isTrue(result.answer.length > 0)
      const cost = result.usage.cost_usd
      assert.isNumber(cost)
      // done's cost is the usage at the prices (input $1/M, output $2/M), within the limit
      const expected = (result.usage.prompt_tokens * 1 + result.usage.completion_tokens * 2) / 1e6
      assert.approximately(cost!, expected, 1e-9)
      assert.isTrue(cost! <= 0.002, `cost ${cost}`)
      assert.isTrue(result.steps.length < 6)
      const exhausted = events.find((e) => e._tag === "BudgetExhausted")
      assert.isDefined(exhausted)
      assert.strictEqual(exhausted!._tag === "BudgetExhausted" && exhausted!.limit_usd, 0.002)
      // the wire form is the phase channel
      const { toWire } = yield* Effect.promise(() => import("../src/server/EventWire.js"))
      assert.strictEqual(toWire(exhausted!).channel, "phase")
      assert.strictEqual(toWire(exhausted!).data.phase, "budget_exhausted")
    }))

  it.effect("the ledger: every call reserved before it was made, settled with what was billed, never above its reservation", () =>
    Effect.gen(function*() {
      const bill: Bill = { tokens: 0, calls: 0 }
      const steps = [echo(1), echo(2), echo(3), echo(4), echo(5), echo(6), ScriptedLlm.text("The final answer.")]
      // an account made outside the run: the run (no budget of its own) draws from its ledger, as a sub-agent does
      const account = Budget.makeAccount({
        tokens: 2200,
        reserveOutputTokens: 64,
        prices: { scripted: { input: 1, output: 2 } }
      }, undefined)!
      const agent = makeAgent(responder(bill, steps), { tools: [echoTool], agent: { completionCheck: false } })
      const { result } = yield* Effect.locally(runOf(agent), Budget.currentAccount, account)
      const entries = Budget.entries(account.ledger!)
      if (process.env.BUDGET_LEDGER_PRINT) console.log(JSON.stringify(entries, null, 1))
      assert.isTrue(result.answer.length > 0)
      const made = entries.filter((e) => e.outcome !== "refused")
      assert.strictEqual(made.length, bill.calls)
      for (const e of made) assert.isTrue(e.settled_tokens! <= e.reserved_tokens, JSON.stringify(e))
      assert.strictEqual(made.reduce((n, e) => n + e.settled_tokens!, 0), bill.tokens)
      assert.isTrue(bill.tokens <= 2200)
    }))

  it.effect("a money budget without a price for the model in use is a start-up error naming the model", () =>
    Effect.gen(function*() {
      const agent = makeAgent([ScriptedLlm.text("hi")], {
        agent: { budget: { usd: 1, prices: { other: { input: 1, output: 1 } } } }
      })
      const exit = yield* Effect.exit(Effect.provide(ReactAgent.ReactAgent, agent.layer))
      assert.isTrue(Exit.isFailure(exit))
      assert.match(String(Exit.isFailure(exit) ? exit.cause : ""), /price for model scripted/)
    }))
})

// ---------------------------------------------------------------------------
// properties over generated runs with sub-agents and parallel rounds

const callArb = fc.oneof(
  fc.string({ maxLength: 60 }).map((text) => ({ name: "echo", arguments: { text } })),
  fc.string({ maxLength: 30 }).map((query) => ({ name: "research", arguments: { query: `find ${query}` } }))
)
const roundArb = fc.array(callArb, { minLength: 1, maxLength: 3 }).map((calls) => ScriptedLlm.toolCalls(calls))
/** Text replies of any length: a long one wants more output than a call may be granted. */
const longText = (prefix: string) =>
  fc.integer({ min: 0, max: 4000 }).map((n) => ScriptedLlm.text(`${prefix} ${"word ".repeat(n / 5)}`))
const subStepArb = fc.oneof(
  fc.string({ maxLength: 60 }).map((text) => ScriptedLlm.toolCall("echo", { text })),
  longText("sub answer")
)

describe("Budget properties", () => {
  it.effect(
    "billed tokens never exceed the token budget, the answer always arrives, every tool call stays paired",
    () =>
      Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            fc.array(roundArb, { maxLength: 6 }),
            fc.array(subStepArb, { minLength: 1, maxLength: 4 }),
            longText("The answer."),
            fc.integer({ min: 300, max: 8000 }),
            fc.integer({ min: 16, max: 300 }),
            fc.constantFrom<"auto" | "always">("auto", "always"),
            (rounds, subSteps, final, tokens, reserve, synthesis) =>
              Effect.runPromise(Effect.gen(function*() {
                const bill: Bill = { tokens: 0, calls: 0 }
                const sub = makeAgent(responder(bill, [...subSteps, ScriptedLlm.text("sub done")]), {
                  tools: [echoTool],
                  agent: { completionCheck: false }
                })
                const subAgent = yield* Effect.provide(ReactAgent.ReactAgent, sub.layer)
                const research = ReactAgent.asTool(subAgent, { name: "research", description: "Researches" })
                const parent = makeAgent(responder(bill, [...rounds, final]), {
                  tools: [echoTool, research],
                  agent: { completionCheck: false, synthesis, budget: { tokens, reserveOutputTokens: reserve } }
                })
                const { events, result } = yield* runOf(parent)
                assert.isUndefined(result.error, JSON.stringify(result.error))
                assert.isTrue(result.answer.trim().length > 0, "an answer")
                assert.isTrue(bill.tokens <= tokens, `billed ${bill.tokens} > budget ${tokens}`)
                assert.isTrue(pairedToolCalls(result), "tool calls paired")
                assert.strictEqual(events[events.length - 1]._tag, "Done")
                // what the run reports is what was billed
                assert.strictEqual(result.usage.total_tokens, bill.tokens)
              }))
          ),
          { numRuns: Number(process.env.BUDGET_PROPERTY_RUNS ?? 60) }
        )
      ),
    60_000
  )
})

describe("Budget: what a run can spend", () => {
  // The same generated run twice: without a budget it bills X tokens; under a budget of 1.5 × X it
  // must do the same work (no BudgetExhausted, the same steps and answer) and bill no more than 1.5 × X.
  // Each call's max_tokens is capped to what is left, so the budget never needs the whole
  // output allowance (default 1024 per call) of every call at once.
  it.effect(
    "a run whose unbudgeted cost is X completes under a budget of 1.5 × X, never above it",
    () =>
      Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            fc.array(roundArb, { maxLength: 5 }),
            fc.array(subStepArb, { minLength: 1, maxLength: 3 }),
            longText("The answer."),
            // no reply is longer than the output a call may ask for (default 1024): a smaller
            // reserveOutputTokens cuts replies by choice, under any budget
            fc.option(fc.integer({ min: 1024, max: 4096 }), { nil: undefined }),
            fc.constantFrom<"auto" | "always">("auto", "always"),
            (rounds, subSteps, final, reserve, synthesis) =>
              Effect.runPromise(Effect.gen(function*() {
                const once = (budget: number | undefined) =>
                  Effect.gen(function*() {
                    const bill: Bill = { tokens: 0, calls: 0 }
                    const sub = makeAgent(responder(bill, [...subSteps, ScriptedLlm.text("sub done")]), {
                      tools: [echoTool],
                      agent: { completionCheck: false }
                    })
                    const subAgent = yield* Effect.provide(ReactAgent.ReactAgent, sub.layer)
                    const research = ReactAgent.asTool(subAgent, { name: "research", description: "Researches" })
                    const parent = makeAgent(responder(bill, [...rounds, final]), {
                      tools: [echoTool, research],
                      agent: {
                        completionCheck: false,
                        synthesis,
                        ...(budget !== undefined
                          ? {
                            budget: {
                              tokens: budget,
                              ...(reserve !== undefined ? { reserveOutputTokens: reserve } : {})
                            }
                          }
                          : {})
                      }
                    })
                    return { bill, ...(yield* runOf(parent)) }
                  })
                const free = yield* once(undefined)
                const limit = Math.floor(1.5 * free.bill.tokens)
                const budgeted = yield* once(limit)
                const exhausted = budgeted.events.find((e) => e._tag === "BudgetExhausted")
                assert.isUndefined(exhausted, `X = ${free.bill.tokens}, budget ${limit}: ${JSON.stringify(exhausted)}`)
                assert.isTrue(budgeted.bill.tokens <= limit, `billed ${budgeted.bill.tokens} > budget ${limit}`)
                assert.strictEqual(budgeted.result.answer, free.result.answer)
                assert.deepStrictEqual(
                  budgeted.result.steps.map((s) => s.tool_name),
                  free.result.steps.map((s) => s.tool_name)
                )
                assert.strictEqual(budgeted.bill.tokens, free.bill.tokens)
              }))
          ),
          { numRuns: Number(process.env.BUDGET_PROPERTY_RUNS ?? 60) }
        )
      ),
    120_000
  )
})

describe("Budget refusals say what the call needed and what was spent", () => {
  it("a call is capped to what is left; only one that cannot have 16 output tokens is refused", () => {
    const account = Budget.makeAccount({ tokens: 2500 }, undefined)!
    const ledger = account.ledger!
    const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("x")])
    const request = { messages: [Message.user("x".repeat(3581))] }
    assert.strictEqual(Budget.estimateInput(request), 900)
    const call = Budget.chat(llm.service, request).pipe(Effect.locally(Budget.currentAccount, account))
    // 900 input + up to 1024 output does not fit in the 1100 left: the call is made with max_tokens 200
    ledger.spentTokens = 1400
    Effect.runSync(call)
    assert.strictEqual(llm.requests[0]?.request.maxTokens, 200)
    ledger.spentTokens = 2310
    const refused = Effect.runSync(Effect.flip(call))
    assert.strictEqual(llm.requests.length, 1, "the refused call was not made")
    assert.strictEqual(refused.reason, "Budget")
    assert.strictEqual(
      refused.message,
      "budget exhausted: a call on scripted needs ≈ 916 tokens (900 input + 16 output at least); 2310 of 2500 tokens spent, 190 left"
    )
  })
})

describe("Budget policy ask", () => {
  it.live("the run waits for a person: extend continues the loop with the added USD, stop answers from what it has", () =>
    Effect.gen(function*() {
      const bill: Bill = { tokens: 0, calls: 0 }
      // more tool rounds than $0.0025 pays for; each call's output (a few tokens) fits in the least
      // output a call is made with, so the loop stops at its check, never on a reply cut at max_tokens
      const steps = [
        ...Array.from({ length: 40 }, (_, i) => ScriptedLlm.toolCall("echo", { text: `step ${i + 1}` })),
        ScriptedLlm.text("Done.")
      ]
      // the limit is on an account made outside (its ledger can be printed); the run's own option sets the policy
      const account = Budget.makeAccount({
        usd: 0.0015,
        reserveOutputTokens: 64,
        prices: { scripted: { input: 1, output: 2 } }
      }, undefined)!
      const agent = makeAgent(responder(bill, steps), {
        tools: [echoTool],
        agent: { completionCheck: false, budget: { policy: "ask" } }
      })
      const decisions: Array<string> = []
      const program = Effect.gen(function*() {
        const react = yield* ReactAgent.ReactAgent
        // the person: extends once by $0.001, then stops
        const person = Effect.gen(function*() {
          for (const decision of ["extend", "stop"] as const) {
            let waiting = yield* react.approvals.pending("ask1")
            while (!waiting.some((p) => p.toolName === Budget.WAIT_TOOL)) {
              yield* Effect.sleep("5 millis")
              waiting = yield* react.approvals.pending("ask1")
            }
            const wait = waiting.find((p) => p.toolName === Budget.WAIT_TOOL)!
            decisions.push(`${decision} at wait ${(wait.args as { budget_wait: number }).budget_wait}`)
            yield* react.approve({
              conversationId: "ask1",
              approvalId: wait.approvalId,
              decision: decision === "extend" ? "approve" : "deny",
              ...(decision === "extend" ? { reason: "0.001" } : {})
            })
          }
        })
        const fiber = yield* Effect.fork(person)
        const events = Chunk.toReadonlyArray(
          yield* Stream.runCollect(react.run({ query: "work", conversationId: "ask1" }))
        )
        yield* Effect.ignore(Effect.timeout(fiber.await, "1 second"))
        return events
      })
      const events = yield* Effect.provide(program, agent.layer).pipe(Effect.locally(Budget.currentAccount, account))
      if (process.env.BUDGET_LEDGER_PRINT) console.log(JSON.stringify(Budget.entries(account.ledger!)), decisions)
      const statuses = events.flatMap((e) => (e._tag === "BudgetStatus" ? [e.status] : []))
      assert.deepStrictEqual(statuses, ["exhausted", "extended", "exhausted", "stopped"], decisions.join("; "))
      const extended = events.find((e) => e._tag === "BudgetStatus" && e.status === "extended")
      assert.strictEqual(extended!._tag === "BudgetStatus" && extended!.limit_usd, 0.0025)
      const done = events[events.length - 1]
      assert.strictEqual(done._tag, "Done")
      assert.isTrue(done._tag === "Done" && done.answer.length > 0)
      // the run spent past the first limit (it was extended), never past the extended one
      const cost = done._tag === "Done" ? done.usage.cost_usd! : 0
      assert.isTrue(cost > 0.0015 && cost <= 0.0025, `cost ${cost}`)
      // tool rounds after the extension happened
      const toolsBefore = events.findIndex((e) => e._tag === "BudgetStatus" && e.status === "extended")
      assert.isTrue(events.slice(toolsBefore).some((e) => e._tag === "ToolStart"))
    }))
})

describe("Budget and retries", () => {
  it.scopedLive("a retried call is charged its failed attempt's input; the retry is made with the reserved max_tokens", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(500, "overloaded"),
        FakeOpenAi.completion({ content: "hello", usage: { prompt: 40, completion: 3 } })
      ])
      const llm = OpenAiLlm.makeUnsafe({
        baseURL: fake.url,
        apiKey: "k",
        model: "fake-model",
        maxRetries: 2,
        retryBaseDelay: "5 millis"
      })
      const account = Budget.makeAccount({ tokens: 100_000, reserveOutputTokens: 50 }, undefined)!
      const request = { messages: [Message.user("hi there")] }
      const reply = yield* Budget.chat(llm, request).pipe(Effect.locally(Budget.currentAccount, account))
      assert.strictEqual(reply.content, "hello")
      assert.strictEqual(fake.requests.length, 2)
      assert.isTrue(fake.requests.every((r) => r.body.max_tokens === 50))
      const input = Budget.estimateInput(request)
      // the failed attempt (its input) + what the provider billed for the one that answered
      assert.strictEqual(account.ledger!.spentTokens, input + 43)
      assert.strictEqual(account.ledger!.reservedTokens, 0)
    }))
})
