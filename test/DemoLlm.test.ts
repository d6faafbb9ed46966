import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import type { AgentOptions } from "../src/AgentConfig.js"
import * as BuiltinTools from "../src/BuiltinTools.js"
import * as ContextGuard from "../src/ContextGuard.js"
import * as DagAgent from "../src/DagAgent.js"
import * as DemoLlm from "../src/DemoLlm.js"
import * as Hooks from "../src/Hooks.js"
import * as Interrupts from "../src/Interrupts.js"
import { type ChatRequest, Llm } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import * as ModelRegistry from "../src/ModelRegistry.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import { structuredCall } from "../src/StructuredCall.js"
import * as Tool from "../src/Tool.js"
import * as Toolkit from "../src/Toolkit.js"

const fast = DemoLlm.makeUnsafe({ chunkDelay: 0, thinkDelay: 0 })
const definitions = BuiltinTools.tools.map(Tool.toDefinition)

/** The real agent over the demo model and the built-in tools. */
const agentLayer = (options?: Partial<AgentOptions>) =>
  ReactAgent.layer(options).pipe(
    Layer.provide([
      DemoLlm.layer({ chunkDelay: 0, thinkDelay: 0 }),
      Toolkit.layer(BuiltinTools.tools),
      Hooks.layerNoop,
      Interrupts.layerMemory
    ]),
    Layer.provide(ContextGuard.layer())
  )

const ask = (query: string, options?: Partial<AgentOptions>) =>
  Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query })).pipe(
    Effect.provide(agentLayer(options))
  )

const INSTANT = Date.UTC(2026, 11, 2, 11, 27, 5)

/** The DAG agent as the app builds it (default options), over the demo model and the built-in tools. */
const dagLayer = (llm: Layer.Layer<Llm> = DemoLlm.layer({ chunkDelay: 0, thinkDelay: 0 })) =>
  DagAgent.layer().pipe(
    Layer.provide([
      ModelRegistry.layerFromLlm.pipe(Layer.provideMerge(llm)),
      Toolkit.layer(BuiltinTools.tools),
      Hooks.layerNoop,
      Interrupts.layerMemory,
      ContextGuard.layer()
    ]),
    Layer.orDie
  )

const dagRun = (query: string, llm?: Layer.Layer<Llm>) =>
  Effect.flatMap(DagAgent.DagAgent, (agent) => Stream.runCollect(agent.run({ query }))).pipe(
    Effect.map(Chunk.toReadonlyArray),
    Effect.provide(dagLayer(llm))
  )

const planOf = (events: ReadonlyArray<RunEvent>) =>
  events.flatMap((
    e
  ) => (e._tag === "DagPlan" ? [e.steps.map((s) => ({ id: s.id, deps: s.dependencies, tool: s.tool_hint }))] : []))
const fellBack = (events: ReadonlyArray<RunEvent>) =>
  events.some((e) => e._tag === "DagPhase" && e.phase === "react_fallback")
const answerOf = (events: ReadonlyArray<RunEvent>) => {
  const done = events[events.length - 1]
  if (done?._tag !== "Done") throw new Error("the run did not end with Done")
  return done
}

describe("DemoLlm", () => {
  it("identifies itself", () => {
    assert.strictEqual(fast.model, "offline-demo")
    assert.isTrue(fast.abilities.toolCall)
  })

  it.effect("end to end (native tools): arithmetic goes through the calculator", () =>
    Effect.gen(function*() {
      const result = yield* ask("what is 2+3*4")
      assert.isUndefined(result.error)
      assert.strictEqual(result.steps.length, 1)
      assert.strictEqual(result.steps[0].tool_name, "calculator")
      assert.deepStrictEqual(result.steps[0].tool_args, { expression: "2+3*4" })
      assert.strictEqual(result.steps[0].observation, "2+3*4 = 14")
      assert.include(result.answer, "14")
      assert.isAbove(result.usage.llm_calls, 1)
      assert.isAbove(result.usage.total_tokens, 0)
    }))

  it.effect("end to end (JSON protocol): same answer through tool_call / final_answer replies", () =>
    Effect.gen(function*() {
      const result = yield* ask("Please calculate (17 + 25) * 3", { useNativeTools: false })
      assert.isUndefined(result.error)
      assert.deepStrictEqual(result.steps.map((s) => s.observation), ["(17 + 25) * 3 = 126"])
      assert.include(result.answer, "126")
    }))

  it.effect("end to end: a time question in a city uses current_time with its IANA zone", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(INSTANT)
      const result = yield* ask("What time is it in Tokyo?")
      assert.strictEqual(result.steps[0].tool_name, "current_time")
      assert.deepStrictEqual(result.steps[0].tool_args, { timezone: "Asia/Tokyo" })
      assert.include(result.answer, "Asia/Tokyo")
      assert.include(result.answer, "8:27:05 PM")
    }))

  it.effect("end to end: arithmetic and time together are two parallel calls", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(INSTANT)
      const result = yield* ask("What is 6*7 and what time is it in Paris?")
      assert.deepStrictEqual(result.steps.map((s) => s.tool_name).sort(), ["calculator", "current_time"])
      assert.strictEqual(result.iterations, 2)
      assert.include(result.answer, "42")
      assert.include(result.answer, "Europe/Paris")
    }))

  it.effect("end to end: anything else gets the offline explanation, in the user's language", () =>
    Effect.gen(function*() {
      const en = yield* ask("Who wrote Hamlet?")
      assert.strictEqual(en.steps.length, 0)
      assert.include(en.answer, "offline demo model")
      for (const name of ["LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL"]) assert.include(en.answer, name)
      const zh = yield* ask("你好，你是谁？")
      assert.include(zh.answer, "离线演示模型")
      assert.include(zh.answer, "LLM_BASE_URL")
      const zhMath = yield* ask("计算 3乘以4加2")
      assert.strictEqual(zhMath.steps[0].observation, "3*4+2 = 14")
      assert.include(zhMath.answer, "计算结果")
    }))

  it.effect("asked what it can do, it names every tool the agent has, also those tool selection left unloaded", () => {
    const mcpTool = (name: string) =>
      Tool.make({
        name,
        description: `MCP tool ${name}`,
        parameters: Schema.Struct({}),
        handler: () => Effect.succeed("ok")
      })
    const extra = [
      ...Array.from({ length: 12 }, (_, i) => mcpTool(`fs__op_${i}`)),
      mcpTool("everything__echo"),
      mcpTool("lookup")
    ]
    const layer = (options?: Partial<AgentOptions>) =>
      ReactAgent.layer(options).pipe(
        Layer.provide([
          DemoLlm.layer({ chunkDelay: 0, thinkDelay: 0 }),
          Toolkit.layer([...BuiltinTools.tools, ...extra]),
          Hooks.layerNoop,
          Interrupts.layerMemory
        ]),
        Layer.provide(ContextGuard.layer())
      )
    const whatCanYouDo = (options?: Partial<AgentOptions>) =>
      Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query: "What can you do?" })).pipe(
        Effect.provide(layer(options))
      )
    return Effect.gen(function*() {
      for (const options of [{}, { useNativeTools: false }]) {
        const result = yield* whatCanYouDo(options)
        assert.strictEqual(result.steps.length, 0)
        assert.include(result.answer, "The agent has 16 tools")
        assert.include(result.answer, "- `calculator`, `current_time`, `lookup`")
        assert.include(result.answer, "from the MCP server `fs` (12): `op_0`, `op_1`")
        assert.include(result.answer, "`op_11`")
        assert.include(result.answer, "from the MCP server `everything` (1): `echo`")
        assert.include(result.answer, "LLM_BASE_URL")
      }
      // with only the built-ins, it names those two
      const plain = yield* ask("What can you do?")
      assert.include(plain.answer, "The agent has 2 tools, all usable by a real model:\n- `calculator`, `current_time`")
    })
  })

  it.effect("a tool error is explained, not hidden", () =>
    Effect.gen(function*() {
      const result = yield* ask("what is 1/0")
      assert.strictEqual(result.steps[0].error, "Division by zero at 2")
      assert.include(result.answer, "Division by zero")
    }))

  it("extracts expressions and zones from natural questions", () => {
    const callFor = (q: string) => {
      const response = DemoLlm.respond({ messages: [Message.user(q)], tools: definitions })
      return response.toolCalls.map((c) => `${c.name} ${c.arguments}`)
    }
    assert.deepStrictEqual(callFor("How much is 15% of 80?"), ["calculator {\"expression\":\"15/100*80\"}"])
    assert.deepStrictEqual(callFor("what's 3 times 4 plus 2?"), ["calculator {\"expression\":\"3 * 4 + 2\"}"])
    assert.deepStrictEqual(callFor("sqrt(144) + 2^3 please"), ["calculator {\"expression\":\"sqrt(144) + 2^3\"}"])
    assert.deepStrictEqual(callFor("what is the date today?"), ["current_time {\"timezone\":\"UTC\"}"])
    assert.deepStrictEqual(callFor("time in America/Chicago now"), ["current_time {\"timezone\":\"America/Chicago\"}"])
    assert.deepStrictEqual(callFor("东京现在几点？"), ["current_time {\"timezone\":\"Asia/Tokyo\"}"])
    assert.deepStrictEqual(callFor("I was born on 1990-05-12, tell me a story"), [])
    // without the tool, arithmetic is answered directly
    const direct = DemoLlm.respond({ messages: [Message.user("what is 2+2")] })
    assert.strictEqual(direct.toolCalls.length, 0)
    assert.include(direct.content, "2+2 = **4**")
  })

  it.effect("end to end: with many tools, tool selection keeps the tools the question needs", () => {
    const extra = Array.from({ length: 12 }, (_, i) =>
      Tool.make({
        name: `noise_${i}`,
        description: `Unrelated tool number ${i}`,
        parameters: Schema.Struct({}),
        handler: () => Effect.succeed("noise")
      }))
    const requests: Array<ChatRequest> = []
    const recording = Layer.succeed(Llm, {
      ...fast,
      chat: (r) => Effect.zipRight(Effect.sync(() => requests.push(r)), fast.chat(r)),
      // the loop calls stream under the default synthesis policy (auto)
      streamChat: (r) =>
        Stream.concat(
          Stream.fromEffect(Effect.sync(() => void requests.push(r))).pipe(Stream.drain),
          fast.streamChat(r)
        )
    })
    return Effect.gen(function*() {
      const events = yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (agent) => Stream.runCollect(agent.run({ query: "what is 7*6" }))
      )
      const list = Chunk.toReadonlyArray(events)
      assert.isTrue(list.some((e) => e._tag === "PhaseChange" && e.total_tools === 14))
      const done = list[list.length - 1]
      assert.isTrue(done._tag === "Done" && done.answer.includes("42"))
      // the loop advertised the selected calculator, not the noise
      const loopCall = requests.find((r) => r.toolChoice === undefined || r.toolChoice === "auto")!
      const advertised = (loopCall.tools ?? []).map((t) => t.function.name)
      assert.include(advertised, "calculator")
      assert.notInclude(advertised, "noise_0")
    }).pipe(Effect.provide(
      ReactAgent.layer().pipe(
        Layer.provide([
          recording,
          Toolkit.layer([...BuiltinTools.tools, ...extra]),
          Hooks.layerNoop,
          Interrupts.layerMemory
        ]),
        Layer.provide(ContextGuard.layer())
      )
    ))
  })

  it.live("end to end: a message injected mid-run is acknowledged and answered", () =>
    Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      const interrupts = yield* Interrupts.Interrupts
      const events: Array<RunEvent> = []
      yield* agent.run({ query: "what is 2+2", conversationId: "demo-int" }).pipe(
        Stream.runForEach((event) =>
          Effect.gen(function*() {
            events.push(event)
            // while the first tool runs, the user sends a follow-up
            if (event._tag === "ToolStart" && event.iteration === 1) {
              yield* interrupts.inject("demo-int", "also what is 10*10")
            }
          })
        )
      )
      const done = events[events.length - 1]
      assert.strictEqual(done._tag, "Done")
      assert.isTrue(events.some((e) => e._tag === "Inject" && e.content === "also what is 10*10"))
      const observations = events.flatMap((e) => (e._tag === "ToolDone" ? [e.observation] : []))
      assert.deepStrictEqual(observations, ["2+2 = 4", "10*10 = 100"])
      if (done._tag === "Done") {
        assert.include(done.answer, "also what is 10*10")
        assert.include(done.answer, "**4**")
        assert.include(done.answer, "**100**")
      }
    }).pipe(
      Effect.provide(
        ReactAgent.layer().pipe(
          Layer.provideMerge(Layer.mergeAll(
            DemoLlm.layer({ chunkDelay: 0, thinkDelay: "20 millis" }),
            Toolkit.layer(BuiltinTools.tools),
            Hooks.layerNoop,
            Interrupts.layerMemory
          )),
          Layer.provideMerge(ContextGuard.layer())
        )
      )
    ))

  it("acknowledges a [USER INTERRUPT] and answers its question", () => {
    const call = Message.toolCall("c1", "calculator", "{\"expression\":\"2+2\"}")
    const base: Array<Message.ChatMessage> = [
      Message.system("You are a capable assistant."),
      Message.user("what is 2+2"),
      Message.assistant(null, { toolCalls: [call] }),
      Message.tool("c1", "2+2 = 4", "calculator"),
      Message.user(
        "[USER INTERRUPT] The user sent a new message while you were working:\nalso what is 10*10\nTake it into account before continuing.",
        { pinned: true }
      )
    ]
    const next = DemoLlm.respond({ messages: base, tools: definitions })
    assert.deepStrictEqual(next.toolCalls.map((c) => c.arguments), ["{\"expression\":\"10*10\"}"])
    const call2 = Message.toolCall("c2", "calculator", "{\"expression\":\"10*10\"}")
    const final = DemoLlm.respond({
      messages: [...base, Message.assistant(null, { toolCalls: [call2] }), Message.tool("c2", "10*10 = 100")],
      tools: definitions
    })
    assert.strictEqual(final.toolCalls.length, 0)
    assert.include(final.content, "Noted your new message: \"also what is 10*10\"")
    assert.include(final.content, "**4**")
    assert.include(final.content, "**100**")
  })

  it.effect("structured calls: a forced function gets arguments that decode", () =>
    Effect.gen(function*() {
      const schema = Schema.Struct({
        plan: Schema.Array(Schema.String),
        confidence: Schema.Number,
        mode: Schema.Literal("fast", "slow"),
        note: Schema.optional(Schema.String)
      })
      const result = yield* structuredCall({ messages: [Message.user("plan it")], schema, functionName: "make_plan" })
      assert.strictEqual(result.level, "native")
      assert.deepStrictEqual(result.value, { plan: [], confidence: 0, mode: "fast" })
      // JSON Schema in the system prompt (a model without native tool choice) → a JSON reply that decodes too
      const jsonOnly = Layer.succeed(Llm, {
        ...fast,
        abilities: { ...fast.abilities, toolCall: false, toolChoice: false }
      })
      const viaJson = yield* structuredCall({ messages: [Message.user("plan it")], schema, functionName: "make_plan" })
        .pipe(
          Effect.provide(jsonOnly)
        )
      assert.strictEqual(viaJson.level, "json")
      assert.deepStrictEqual(viaJson.value, { plan: [], confidence: 0, mode: "fast" })
    }).pipe(Effect.provide(DemoLlm.layer({ thinkDelay: 0 }))))

  it("compaction calls get a short summary of the conversation", () => {
    const response = DemoLlm.respond({
      messages: [
        Message.system("You summarise a conversation between a user and an assistant."),
        Message.user("Summarise this conversation:\n\n<conversation>\nuser: what is 2+2\nassistant: 4\n</conversation>")
      ]
    })
    assert.strictEqual(response.toolCalls.length, 0)
    assert.strictEqual(response.content, "Summary (offline demo model, abridged): user: what is 2+2 assistant: 4")
  })

  it.live("streamChat streams the synthesised answer word by word, paced", () =>
    Effect.gen(function*() {
      const llm = DemoLlm.makeUnsafe({ chunkDelay: "15 millis", thinkDelay: 0 })
      const request: ChatRequest = {
        messages: [
          Message.system("You write the final answer to the user's question from the execution trace."),
          Message.user(
            "Question:\nwhat is 2+3*4\n\nExecution trace:\nStep 1: calculator\nArguments: {\"expression\":\"2+3*4\"}\n" +
              "Result: 2+3*4 = 14\n\nDraft answer:\n14\n\nWrite the final answer to the question."
          )
        ]
      }
      const started = Date.now()
      const deltas = Chunk.toReadonlyArray(yield* Stream.runCollect(llm.streamChat(request)))
      const elapsed = Date.now() - started
      const content = deltas.flatMap((d) => (d._tag === "Content" ? [d.text] : []))
      assert.strictEqual(content.join(""), "2+3*4 = **14**")
      assert.isAtLeast(content.length, 3)
      assert.isAtLeast(elapsed, 15 * (content.length - 1))
      assert.strictEqual(deltas[deltas.length - 1]._tag, "Finish")
      assert.isTrue(deltas.some((d) => d._tag === "Usage" && d.usage.completion_tokens > 0))
    }))

  it.effect("DAG mode: arithmetic and time are two parallel steps, each runs its tool, the answer has both results", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(INSTANT)
      const events = yield* dagRun("What is 6*7 and what time is it in Paris?")
      assert.isFalse(fellBack(events), "no fallback to ReAct")
      assert.deepStrictEqual(planOf(events), [[
        { id: "calc", deps: [], tool: "calculator" },
        { id: "time", deps: [], tool: "current_time" }
      ]])
      const trail = events.flatMap((e) => (e._tag === "DagStep" ? [`${e.status}:${e.step_id}`] : []))
      assert.sameMembers(trail, ["start:calc", "start:time", "done:calc", "done:time"])
      const tools = events.flatMap((
        e
      ) => (e._tag === "ToolDone" ? [`${e.step_id}:${e.tool_name}:${e.observation.split("\n")[0]}`] : []))
      assert.sameMembers(tools, ["calc:calculator:6*7 = 42", "time:current_time:Time zone: Europe/Paris"])
      const done = answerOf(events)
      assert.include(done.answer, "6*7 = **42**")
      assert.include(done.answer, "The current time in Europe/Paris is **")
      assert.include(done.answer, "12:27:05 PM")
      // one plan and one analysis, no re-plan
      assert.strictEqual(done.usage.by_phase.planning?.llm_calls, 1)
      assert.strictEqual(done.usage.by_phase.analysis?.llm_calls, 1)
      assert.isFalse(events.some((e) => e._tag === "DagPhase" && e.phase === "replanning"))
    }))

  it.effect("DAG mode: a single-part question is one step; a question the rules do not know is one step with the goal as its task", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(INSTANT)
      const time = yield* dagRun("What time is it in Tokyo?")
      assert.deepStrictEqual(planOf(time), [[{ id: "time", deps: [], tool: "current_time" }]])
      assert.include(answerOf(time).answer, "8:27:05 PM")
      const other = yield* dagRun("Who wrote Hamlet?")
      assert.isFalse(fellBack(other))
      assert.deepStrictEqual(planOf(other), [[{ id: "answer", deps: [], tool: undefined }]])
      assert.include(answerOf(other).answer, "offline demo model")
      // Chinese: tasks in Chinese, read back by the steps as the same calls
      const zh = yield* dagRun("计算 3乘以4加2，东京现在几点？")
      assert.deepStrictEqual(planOf(zh)[0].map((s) => s.id), ["calc", "time"])
      const tasks = zh.flatMap((e) => (e._tag === "DagPlan" ? e.steps.map((s) => s.task) : []))
      assert.deepStrictEqual(tasks, ["计算 3*4+2", "查询 Asia/Tokyo 的当前时间"])
      assert.include(answerOf(zh).answer, "计算结果：3*4+2 = **14**")
      assert.include(answerOf(zh).answer, "Asia/Tokyo 的当前时间是")
    }))

  it.effect("DAG mode without native tool choice: the planner and analyzer replies decode at the JSON-mode and plain-text levels", () =>
    Effect.gen(function*() {
      for (const jsonMode of [true, false]) {
        const weaker = Layer.succeed(Llm, { ...fast, abilities: { ...fast.abilities, toolChoice: false, jsonMode } })
        const events = yield* dagRun("What is 6*7 and what time is it in Paris?", weaker)
        assert.isFalse(fellBack(events))
        assert.deepStrictEqual(planOf(events)[0].map((s) => s.id), ["calc", "time"])
        assert.strictEqual(answerOf(events).usage.by_phase.planning?.llm_calls, 1)
        assert.include(answerOf(events).answer, "6*7 = **42**")
      }
    }))

  it.effect("auto mode: the router picks dag for a question with two parts, react for one", () =>
    Effect.gen(function*() {
      const agent = yield* DagAgent.DagAgent
      assert.strictEqual((yield* agent.route("What is 6*7 and what time is it in Paris?")).mode, "dag")
      assert.strictEqual((yield* agent.route("What is 6*7?")).mode, "react")
      assert.strictEqual((yield* agent.route("Who wrote Hamlet?")).mode, "react")
    }).pipe(Effect.provide(dagLayer())))
})
