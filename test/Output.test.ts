/**
 * Typed answers (`RunInput.output`, SPEC §26) through the real agent over a
 * scripted model that records every request: the answer call asks for the
 * schema the best way the model can (json_schema, a forced tool, JSON mode,
 * plain text), a value that does not validate is asked again with the
 * validation message, then the run fails with `output_invalid`; the answer
 * text is the JSON text, `Done.output` the value; partial objects stream.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as DagAgent from "../src/DagAgent.js"
import type { ChatRequest } from "../src/Llm.js"
import * as Output from "../src/Output.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { addTool, makeAgent } from "./utils/agentLayers.js"
import {
  dagEvents,
  doneOf,
  journalSink,
  makeDag,
  memoryJournal,
  memoryStore,
  planReply,
  requestsOf
} from "./utils/dagLayers.js"

const Weather = Schema.Struct({
  city: Schema.String,
  celsius: Schema.Number.pipe(Schema.between(-90, 60)),
  sky: Schema.Literal("clear", "cloudy", "rain")
})

const isAnswerCall = (request: ChatRequest) =>
  request.tools === undefined || request.tools.length === 0 ||
  (typeof request.toolChoice === "object" && request.toolChoice.function.name === "answer")

const runEvents = (input: ReactAgent.RunInput) =>
  Effect.flatMap(ReactAgent.ReactAgent, (agent) => Effect.map(Stream.runCollect(agent.run(input)), Chunk.toArray))

const kinds = (events: ReadonlyArray<RunEvent>) => events.map((e) => e._tag)

describe("typed answers", () => {
  it.effect("json_schema (strict): one answer call after the loop; the value in runCollect, Done.output and the answer text", () => {
    const h = makeAgent((request, _i, method) => {
      if (method === "chat") {
        return request.messages.some((m) => m.role === "tool")
          ? ScriptedLlm.text("It is 21 °C and clear in Paris.")
          : ScriptedLlm.toolCall("add", { a: 20, b: 1 }, { id: "call_1" })
      }
      return ScriptedLlm.text(`{"city": "Paris", "celsius": 21, "sky": "clear"}`, {
        chunks: ["{\"city\": \"Pa", "ris\", \"celsius\": 21", ", \"sky\": \"clear\"}"]
      })
    }, { tools: [addTool], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      const result = yield* agent.runCollect({ query: "Weather in Paris?", output: Weather })
      const celsius: number = result.output.celsius
      assert.strictEqual(celsius, 21)
      assert.deepStrictEqual(result.output, { city: "Paris", celsius: 21, sky: "clear" })
      assert.strictEqual(result.answer, `{"city": "Paris", "celsius": 21, "sky": "clear"}`)
      const answerCalls = h.requests().filter((r) => r.request.responseFormat?.type === "json_schema")
      assert.strictEqual(answerCalls.length, 1)
      const format = answerCalls[0].request.responseFormat as {
        json_schema: { name: string; strict: boolean; schema: any }
      }
      assert.strictEqual(format.json_schema.name, "answer")
      assert.isTrue(format.json_schema.strict, "every property required, no extra keys: strict")
      assert.deepStrictEqual(format.json_schema.schema.required, ["city", "celsius", "sky"])
      // the answer call reads the run: the tool's result is in its prompt
      assert.include(JSON.stringify(answerCalls[0].request.messages), "Result: 21")
      assert.strictEqual(result.usage.by_phase.synthesis?.llm_calls, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("events: answer start, the JSON as deltas, a partial object, done; Done.output encoded", () => {
    const Dated = Schema.Struct({ day: Schema.DateFromString, note: Schema.String })
    const h = makeAgent((_request, _i, method) =>
      method === "chat"
        ? ScriptedLlm.text("noted")
        : ScriptedLlm.text(`{"day":"2026-12-06T00:00:00.000Z","note":"ok"}`, {
          chunks: ["{\"day\":\"2026-12-06T00:00:00.000Z\",", "\"note\":\"ok\"}"]
        })
    )
    return Effect.gen(function*() {
      const events = yield* runEvents({ query: "When?", output: Dated })
      const answerEvents = events.filter((e) => e._tag.startsWith("Answer") || e._tag === "OutputPartial")
      assert.deepStrictEqual(kinds(answerEvents), [
        "AnswerSignal",
        "AnswerStart",
        "AnswerDelta",
        "OutputPartial",
        "AnswerDelta",
        "AnswerDone"
      ])
      const partial = events.find((e) => e._tag === "OutputPartial")
      assert.deepStrictEqual(partial?._tag === "OutputPartial" ? partial.value : undefined, {
        day: "2026-12-06T00:00:00.000Z"
      })
      const done = events.at(-1)!
      assert.strictEqual(done._tag, "Done")
      // encoded: the wire form of the value (a Date is its string)
      assert.deepStrictEqual(done._tag === "Done" ? done.output : undefined, {
        day: "2026-12-06T00:00:00.000Z",
        note: "ok"
      })
      const typed = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "When?", output: Dated }))
      assert.instanceOf(typed.output.day, Date)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a value that does not validate is asked again once with the validation message, the shown answer reset", () => {
    let answers = 0
    const h = makeAgent((_request, _i, method) => {
      if (method === "chat") return ScriptedLlm.text("done")
      answers++
      return answers === 1
        ? ScriptedLlm.text(`{"city": "Paris", "celsius": 210, "sky": "clear"}`)
        : ScriptedLlm.text(`{"city": "Paris", "celsius": 21, "sky": "clear"}`)
    })
    return Effect.gen(function*() {
      const events = yield* runEvents({ query: "Weather?", output: Weather })
      assert.strictEqual(answers, 2)
      const retry = h.requests().filter((r) => r.method === "stream")[1].request
      const last = retry.messages.at(-1)!
      assert.strictEqual(last.role, "user")
      assert.include(String(last.content), "celsius: Expected a number between -90 and 60, actual 210")
      assert.include(String(last.content), "210")
      assert.strictEqual(retry.messages.at(-2)?.content, `{"city": "Paris", "celsius": 210, "sky": "clear"}`)
      const answerKinds = kinds(events.filter((e) => e._tag.startsWith("Answer") && e._tag !== "AnswerDelta"))
      assert.deepStrictEqual(answerKinds, ["AnswerSignal", "AnswerStart", "AnswerReset", "AnswerStart", "AnswerDone"])
      const done = events.at(-1)!
      assert.deepStrictEqual(done._tag === "Done" ? [done.answer, done.output] : [], [
        `{"city": "Paris", "celsius": 21, "sky": "clear"}`,
        { city: "Paris", celsius: 21, sky: "clear" }
      ])
      assert.isFalse(events.some((e) => e._tag === "RunFailed"))
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("still invalid after the retry: RunFailed output_invalid with the message, then Done; OutputInvalid with the last value", () => {
    let answers = 0
    const h = makeAgent((_request, _i, method) => {
      if (method === "chat") return ScriptedLlm.text("done")
      answers++
      return ScriptedLlm.text(`{"city": "Paris", "celsius": ${200 + answers}, "sky": "clear"}`)
    })
    return Effect.gen(function*() {
      const events = yield* runEvents({ query: "Weather?", output: Weather })
      assert.strictEqual(answers, 2, "one retry (REACT_OUTPUT_RETRIES default 1), no downgrade after an invalid value")
      const failed = events.find((e) => e._tag === "RunFailed")
      assert.strictEqual(failed?._tag === "RunFailed" ? failed.code : undefined, "output_invalid")
      assert.include(failed?._tag === "RunFailed" ? failed.message : "", "202")
      assert.deepStrictEqual(kinds(events.slice(-2)), ["RunFailed", "Done"])
      const done = events.at(-1)!
      assert.deepStrictEqual(done._tag === "Done" ? [done.answer, done.output] : [], ["", undefined])
      const error = yield* Effect.flip(
        Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "Weather?", output: Weather }))
      )
      assert.strictEqual(error._tag, "OutputInvalid")
      assert.deepStrictEqual(error._tag === "OutputInvalid" ? error.value : undefined, {
        city: "Paris",
        celsius: 204,
        sky: "clear"
      })
      assert.include(error.message, "celsius: Expected a number between -90 and 60, actual 204")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("outputRetries: 0 fails at the first invalid value; 2 asks three times", () =>
    Effect.gen(function*() {
      for (const retries of [0, 2]) {
        let answers = 0
        const h = makeAgent((_request, _i, method) => {
          if (method === "chat") return ScriptedLlm.text("done")
          answers++
          return ScriptedLlm.text(`{"city": "Paris", "celsius": 500, "sky": "clear"}`)
        }, { agent: { outputRetries: retries } })
        const error = yield* Effect.flip(
          Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "q", output: Weather })).pipe(
            Effect.provide(h.layer)
          )
        )
        assert.strictEqual(error._tag, "OutputInvalid")
        assert.strictEqual(answers, retries + 1)
      }
    }))

  it.effect("no json_schema: a forced tool (Anthropic's way, @effect/ai's); its arguments are the answer", () => {
    const h = makeAgent((_request, _i, method) =>
      method === "chat"
        ? ScriptedLlm.text("done")
        : ScriptedLlm.toolCall("answer", { city: "Oslo", celsius: -3, sky: "cloudy" }), {
      llm: { abilities: { jsonSchema: false } }
    })
    return Effect.gen(function*() {
      const result = yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => a.runCollect({ query: "Weather in Oslo?", output: Weather })
      )
      assert.deepStrictEqual(result.output, { city: "Oslo", celsius: -3, sky: "cloudy" })
      assert.deepStrictEqual(JSON.parse(result.answer), { city: "Oslo", celsius: -3, sky: "cloudy" })
      const answer = h.requests().filter((r) => r.method === "stream")[0].request
      assert.deepStrictEqual(answer.toolChoice, { type: "function", function: { name: "answer" } })
      assert.isUndefined(answer.responseFormat)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a plain model: the schema in the prompt, the JSON found in a fenced reply; the answer text is the JSON", () => {
    const h = makeAgent((request, _i, method) =>
      method === "chat" && !isAnswerCall(request)
        ? ScriptedLlm.jsonFinal("done")
        : ScriptedLlm.text("Here you go:\n```json\n{\"city\": \"Rome\", \"celsius\": 30, \"sky\": \"clear\"}\n```"), {
      llm: { abilities: { toolCall: false, toolChoice: false, jsonMode: false, jsonSchema: false } }
    })
    return Effect.gen(function*() {
      const events = yield* runEvents({ query: "Weather in Rome?", output: Weather })
      const done = events.at(-1)!
      assert.deepStrictEqual(done._tag === "Done" ? done.output : undefined, {
        city: "Rome",
        celsius: 30,
        sky: "clear"
      })
      const answer = done._tag === "Done" ? done.answer : ""
      assert.deepStrictEqual(JSON.parse(answer), { city: "Rome", celsius: 30, sky: "clear" })
      // the prose shown while it streamed was taken back for the JSON itself
      const afterReset = events.slice(events.map((e) => e._tag).lastIndexOf("AnswerReset") + 1)
      assert.strictEqual(
        afterReset.filter((e) => e._tag === "AnswerDelta").map((e) => (e._tag === "AnswerDelta" ? e.content : "")).join(
          ""
        ),
        answer
      )
      const prompt = h.requests().filter((r) => r.method === "stream")[0].request.messages[0].content
      assert.include(String(prompt), "must match this JSON Schema")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("synthesis auto: a final reply that already is the value is the answer, without another call", () => {
    const h = makeAgent([ScriptedLlm.text(`{"city": "Lima", "celsius": 18, "sky": "cloudy"}`)], {
      agent: { synthesis: "auto" }
    })
    return Effect.gen(function*() {
      const result = yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => a.runCollect({ query: "Weather in Lima?", output: Weather })
      )
      assert.deepStrictEqual(result.output, { city: "Lima", celsius: 18, sky: "cloudy" })
      assert.strictEqual(h.requests().length, 1)
      // the loop call was not streamed as the answer (prose would not be the typed answer)
      assert.strictEqual(h.requests()[0].method, "chat")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("synthesis always: even a final reply that already is the value gets the answer call, whose value is the answer", () => {
    const h = makeAgent((_request, _i, method) =>
      method === "chat"
        ? ScriptedLlm.text(`{"city": "Lima", "celsius": 18, "sky": "cloudy"}`)
        : ScriptedLlm.text(`{"city": "Lima", "celsius": 19, "sky": "clear"}`), { agent: { synthesis: "always" } })
    return Effect.gen(function*() {
      const result = yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => a.runCollect({ query: "Weather in Lima?", output: Weather })
      )
      assert.deepStrictEqual(h.requests().map((r) => r.method), ["chat", "stream"])
      assert.deepStrictEqual(
        result.output,
        { city: "Lima", celsius: 19, sky: "clear" },
        "the answer call's value, not the loop's"
      )
      assert.strictEqual(result.answer, `{"city": "Lima", "celsius": 19, "sky": "clear"}`)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("synthesis auto: a prose final reply gets the typed answer call", () => {
    const h = makeAgent(
      (_request, _i, method) =>
        method === "chat"
          ? ScriptedLlm.text("Lima is 18 degrees and cloudy.")
          : ScriptedLlm.text(`{"city": "Lima", "celsius": 18, "sky": "cloudy"}`),
      {
        agent: { synthesis: "auto" }
      }
    )
    return Effect.gen(function*() {
      const result = yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => a.runCollect({ query: "Weather in Lima?", output: Weather })
      )
      assert.deepStrictEqual(result.output, { city: "Lima", celsius: 18, sky: "cloudy" })
      assert.deepStrictEqual(h.requests().map((r) => r.method), ["chat", "stream"])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("the answer call failing on every level: the run fails (retryable), no output_invalid", () => {
    const h = makeAgent((
      _request,
      _i,
      method
    ) => (method === "chat" ? ScriptedLlm.text("done") : ScriptedLlm.fail("Server", "down")))
    return Effect.gen(function*() {
      const events = yield* runEvents({ query: "q", output: Weather })
      const failed = events.find((e) => e._tag === "RunFailed")
      assert.isTrue(failed?._tag === "RunFailed" && failed.code === undefined && failed.retryable)
      const error = yield* Effect.flip(
        Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "q", output: Weather }))
      )
      assert.strictEqual(error._tag, "OutputUnavailable")
    }).pipe(Effect.provide(h.layer))
  })

  it.live("partial objects stream at most every 50 ms while the value is written", () => {
    const Report = Schema.Struct({ title: Schema.String, items: Schema.Array(Schema.String) })
    const chunks = ["{\"title\": \"Pla", "nets\", \"items\": [\"Mer", "cury\", \"Ven", "us\", \"Ea", "rth\"]}"]
    const h = makeAgent((_request, _i, method) =>
      method === "chat"
        ? ScriptedLlm.text("done")
        : ScriptedLlm.text(chunks.join(""), { chunks, chunkDelay: "70 millis" })
    )
    return Effect.gen(function*() {
      const events = yield* runEvents({ query: "Planets?", output: Report })
      const partials = events.flatMap((e) => (e._tag === "OutputPartial" ? [e.value] : []))
      assert.deepStrictEqual(partials[0], { title: "Pla" })
      assert.deepStrictEqual(partials.at(-1), { title: "Planets", items: ["Mercury", "Venus", "Earth"] })
      assert.isAtLeast(partials.length, 4)
      const done = events.at(-1)!
      assert.deepStrictEqual(done._tag === "Done" ? done.output : undefined, {
        title: "Planets",
        items: ["Mercury", "Venus", "Earth"]
      })
    }).pipe(Effect.provide(h.layer))
  })

  it.live("a partial object never shows a number still being written (2 of 21)", () => {
    const chunks = ["{\"city\": \"Paris\", \"celsius\": 2", "1, \"sky\": \"cl", "ear\"}"]
    const h = makeAgent((_request, _i, method) =>
      method === "chat"
        ? ScriptedLlm.text("done")
        : ScriptedLlm.text(chunks.join(""), { chunks, chunkDelay: "70 millis" })
    )
    return Effect.gen(function*() {
      const events = yield* runEvents({ query: "Weather in Paris?", output: Weather })
      const partials = events.flatMap((e) => (e._tag === "OutputPartial" ? [e.value] : []))
      assert.deepStrictEqual(partials[0], { city: "Paris" }, "celsius left out while it may go on")
      assert.deepStrictEqual(partials[1], { city: "Paris", celsius: 21, sky: "cl" })
      assert.isFalse(partials.some((p: any) => p.celsius === 2), JSON.stringify(partials))
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a typed answer a durable host re-runs retracts what an earlier start showed, and only then", () =>
    Effect.gen(function*() {
      for (const shown of [true, false]) {
        const h = makeAgent((_request, _i, method) =>
          method === "chat"
            ? ScriptedLlm.text("done")
            : ScriptedLlm.text(`{"city": "Oslo", "celsius": 2, "sky": "rain"}`)
        )
        const events: Array<RunEvent> = []
        const journal: RunJournal.RunJournal = {
          // the answer's activity as a durable host re-runs it: restarted, with or without stored events
          activity: (o) => o.execute({ restarted: o.name === "output", shown: o.name === "output" && shown }),
          emit: (event) => Effect.sync(() => void events.push(event))
        }
        yield* Effect.flatMap(
          ReactAgent.ReactAgent,
          (a) => a.execute({ query: "Weather in Oslo?", output: Weather }, journal)
        ).pipe(
          Effect.provide(h.layer)
        )
        const t = kinds(events)
        assert.strictEqual(t.filter((x) => x === "AnswerReset").length, shown ? 1 : 0, `shown ${shown}: ${t.join(" ")}`)
        if (shown) assert.isBelow(t.indexOf("AnswerReset"), t.indexOf("AnswerDelta"))
        const done = events.at(-1)!
        assert.deepStrictEqual(done._tag === "Done" ? done.output : undefined, {
          city: "Oslo",
          celsius: 2,
          sky: "rain"
        })
      }
    }))
})

describe("Output.fromJsonSchema", () => {
  it("converts the subset and validates like the JSON Schema", () => {
    const schema = Either.getOrThrow(Output.fromJsonSchema({
      type: "object",
      properties: {
        name: { type: "string", minLength: 1 },
        age: { type: "integer", minimum: 0 },
        kind: { enum: ["a", "b"] },
        tags: { type: "array", items: { type: "string" }, maxItems: 2 },
        note: { type: ["string", "null"] },
        ref: { $ref: "#/$defs/Point" }
      },
      required: ["name", "kind"],
      additionalProperties: false,
      $defs: { Point: { type: "object", properties: { x: { type: "number" } }, required: ["x"] } }
    }))
    const decode = Schema.decodeUnknownEither(schema)
    assert.isTrue(Either.isRight(decode({ name: "n", kind: "a", age: 3, tags: ["x"], note: null, ref: { x: 1 } })))
    for (
      const bad of [
        { name: "", kind: "a" },
        { name: "n", kind: "c" },
        { name: "n", kind: "a", age: 1.5 },
        { name: "n", kind: "a", tags: ["1", "2", "3"] },
        { kind: "a" },
        { name: "n", kind: "a", ref: { x: "1" } }
      ]
    ) {
      assert.isTrue(Either.isLeft(decode(bad)), JSON.stringify(bad))
    }
  })

  it("refuses what it cannot honour, naming the keyword and where", () => {
    const refused = (s: unknown) =>
      Either.getOrThrowWith(Either.flip(Output.fromJsonSchema(s)), () => new Error("accepted"))
    assert.deepStrictEqual(refused({ type: "object", properties: { a: { type: "string", not: { const: "x" } } } }), {
      keyword: "not",
      path: "/properties/a/not",
      message: "the keyword not is not supported"
    })
    assert.strictEqual(refused({ type: "object", allOf: [] }).keyword, "allOf")
    assert.strictEqual(refused({ type: "array", items: {} }).keyword, "type")
    assert.strictEqual(
      refused({ type: "object", properties: { d: { type: "string", format: "hostname" } } }).keyword,
      "format"
    )
    assert.strictEqual(
      refused({ type: "object", properties: { r: { $ref: "https://example.com/s.json" } } }).keyword,
      "$ref"
    )
  })
})

describe("typed answers in DAG mode", () => {
  it.effect("the synthesis writes the value: json_schema on the synthesis prompt (with the step results); Done.output; typed runCollect", () => {
    const Summary = Schema.Struct({ facts: Schema.Array(Schema.String), count: Schema.Number })
    const h = makeDag({
      plan: () => planReply([{ id: "1", task: "find fact A" }, { id: "2", task: "find fact B" }]),
      answer: () => ScriptedLlm.text(`{"facts": ["result of 1", "result of 2"], "count": 2}`)
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "Two facts", output: Summary })
      const done = doneOf(events)
      assert.deepStrictEqual(done.output, { facts: ["result of 1", "result of 2"], count: 2 })
      assert.strictEqual(done.answer, `{"facts": ["result of 1", "result of 2"], "count": 2}`)
      const answer = requestsOf(h).filter((r) => r.kind._tag === "Answer")
      assert.strictEqual(answer.length, 1)
      assert.strictEqual(answer[0].request.responseFormat?.type, "json_schema")
      assert.include(JSON.stringify(answer[0].request.messages), "result of 2")
      const typed = yield* Effect.flatMap(
        DagAgent.DagAgent,
        (a) => a.runCollect({ query: "Two facts", output: Summary })
      )
      assert.strictEqual(typed.output.count, 2)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a typed synthesis a durable host re-runs retracts what an earlier start showed, and only then", () =>
    Effect.gen(function*() {
      const Summary = Schema.Struct({ count: Schema.Number })
      for (const shown of [true, false]) {
        const h = makeDag({
          plan: () => planReply([{ id: "1", task: "count" }]),
          answer: () => ScriptedLlm.text(`{"count": 3}`)
        })
        const sink = journalSink()
        const base = memoryJournal(memoryStore(), sink)
        const journal: typeof base = {
          ...base,
          activity: (o) => (o.name === "dag/output" ? o.execute({ restarted: true, shown }) : base.activity(o))
        }
        yield* Effect.flatMap(DagAgent.DagAgent, (a) => a.execute({ query: "Count", output: Summary }, journal)).pipe(
          Effect.provide(h.layer)
        )
        const t = kinds(sink.events)
        assert.strictEqual(t.filter((x) => x === "AnswerReset").length, shown ? 1 : 0, `shown ${shown}: ${t.join(" ")}`)
        assert.deepStrictEqual(doneOf(sink.events).output, { count: 3 })
      }
    }))

  it.effect("an invalid value twice: output_invalid, then Done", () => {
    const Summary = Schema.Struct({ count: Schema.Number.pipe(Schema.positive()) })
    const h = makeDag({
      plan: () => planReply([{ id: "1", task: "count" }]),
      answer: () => ScriptedLlm.text(`{"count": -1}`)
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "Count", output: Summary })
      const failed = events.find((e) => e._tag === "RunFailed")
      assert.strictEqual(failed?._tag === "RunFailed" ? failed.code : undefined, "output_invalid")
      assert.strictEqual(requestsOf(h).filter((r) => r.kind._tag === "Answer").length, 2)
      assert.isUndefined(doneOf(events).output)
    }).pipe(Effect.provide(h.layer))
  })
})
