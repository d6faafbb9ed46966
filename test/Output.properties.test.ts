/**
 * Typed answers, for any schema and any model behaviour: generated schemas
 * (objects, arrays, enums, optional fields, nesting) and models that answer
 * validly, invalidly once, invalidly always, without json_schema (a forced
 * tool), or without any native way (plain text in a fence). The run always
 * ends with the decoded value or `OutputInvalid` — never a defect, never
 * `OutputUnavailable` — and the answer calls stay within `1 + outputRetries`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fc from "effect/FastCheck"
import * as Schema from "effect/Schema"
import type { ChatRequest } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as StructuredCall from "../src/StructuredCall.js"
import { makeAgent } from "./utils/agentLayers.js"
import { responseFormatProblem } from "./utils/openAiFormats.js"

type Shape =
  | { readonly kind: "string" }
  | { readonly kind: "number"; readonly min: number; readonly max: number }
  | { readonly kind: "boolean" }
  | { readonly kind: "enum"; readonly values: ReadonlyArray<string> }
  | { readonly kind: "array"; readonly of: Shape }
  | {
    readonly kind: "object"
    readonly fields: ReadonlyArray<{ readonly name: string; readonly shape: Shape; readonly optional: boolean }>
  }

const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/)

const { shape } = fc.letrec<{ shape: Shape }>((tie) => ({
  shape: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant<Shape>({ kind: "string" }),
    fc.integer({ min: -50, max: 50 }).chain((min) =>
      fc.integer({ min, max: min + 100 }).map((max): Shape => ({ kind: "number", min, max }))
    ),
    fc.constant<Shape>({ kind: "boolean" }),
    fc.uniqueArray(name, { minLength: 1, maxLength: 4 }).map((values): Shape => ({ kind: "enum", values })),
    tie("shape").map((of): Shape => ({ kind: "array", of })),
    fc.uniqueArray(fc.record({ name, shape: tie("shape"), optional: fc.boolean() }), {
      selector: (f) => f.name,
      maxLength: 4
    })
      .map((fields): Shape => ({ kind: "object", fields }))
  )
}))

/** The root: an object with a required `id` (0..100) beside generated fields. */
const root = fc.uniqueArray(fc.record({ name, shape, optional: fc.boolean() }), {
  selector: (f) => f.name,
  maxLength: 5
})
  .map((fields): Shape => ({
    kind: "object",
    fields: [
      { name: "id", shape: { kind: "number", min: 0, max: 100 }, optional: false },
      ...fields.filter((f) => f.name !== "id")
    ]
  }))

const toSchema = (s: Shape): Schema.Schema<any, any, never> => {
  switch (s.kind) {
    case "string":
      return Schema.String
    case "number":
      return Schema.Number.pipe(Schema.between(s.min, s.max))
    case "boolean":
      return Schema.Boolean
    case "enum":
      return Schema.Literal(...s.values)
    case "array":
      return Schema.Array(toSchema(s.of))
    case "object":
      return Schema.Struct(
        Object.fromEntries(
          s.fields.map((f) => [f.name, f.optional ? Schema.optional(toSchema(f.shape)) : toSchema(f.shape)])
        )
      )
  }
}

const valueOf = (s: Shape): fc.Arbitrary<unknown> => {
  switch (s.kind) {
    case "string":
      return fc.string({ maxLength: 8 })
    case "number":
      return fc.integer({ min: s.min, max: s.max })
    case "boolean":
      return fc.boolean()
    case "enum":
      return fc.constantFrom(...s.values)
    case "array":
      return fc.array(valueOf(s.of), { maxLength: 3 })
    case "object":
      return fc.tuple(
        ...s.fields.map((f) => (f.optional ? fc.option(valueOf(f.shape), { nil: undefined }) : valueOf(f.shape)))
      ).map((values) =>
        Object.fromEntries(s.fields.flatMap((f, i) => (values[i] === undefined ? [] : [[f.name, values[i]]])))
      )
  }
}

type Behaviour = "valid" | "invalidOnce" | "invalidAlways" | "noJsonSchema" | "plainOnly"

const behaviour = fc.constantFrom<Behaviour>("valid", "invalidOnce", "invalidAlways", "noJsonSchema", "plainOnly")

const forced = (request: ChatRequest) => typeof request.toolChoice === "object"

const abilitiesOf = (b: Behaviour) =>
  b === "plainOnly"
    ? { toolCall: false, toolChoice: false, jsonMode: false, jsonSchema: false }
    : b === "noJsonSchema"
    ? { jsonSchema: false }
    : {}

const valueAndShape = root.chain((s) =>
  valueOf(s).map((value) => ({ shape: s, value: value as Record<string, unknown> }))
)

describe("typed answers: any schema, any model behaviour", () => {
  it.effect.prop(
    "the value or OutputInvalid, never a defect, answer calls within 1 + retries",
    [valueAndShape, behaviour, fc.integer({ min: 0, max: 2 })],
    ([{ shape: s, value }, b, retries]) => {
      const schema = toSchema(s)
      const invalid = { ...value, id: 1000 }
      let answers = 0
      const h = makeAgent((request, _i, method) => {
        // the loop (a plain model's loop speaks the JSON protocol)
        if (method === "chat" && !forced(request)) {
          return b === "plainOnly"
            ? ScriptedLlm.jsonFinal("done")
            : ScriptedLlm.text("done")
        }
        answers++
        const bad = b === "invalidAlways" || (b === "invalidOnce" && answers === 1)
        const answer = bad ? invalid : value
        if (forced(request)) return ScriptedLlm.toolCall("answer", answer)
        const json = JSON.stringify(answer)
        return ScriptedLlm.text(b === "plainOnly" ? `Here it is:\n\`\`\`json\n${json}\n\`\`\`` : json)
      }, { llm: { abilities: abilitiesOf(b) }, agent: { outputRetries: retries } })
      return Effect.gen(function*() {
        const exit = yield* Effect.exit(
          Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query: "q", output: schema }))
        )
        assert.isAtMost(answers, 1 + retries)
        if (Exit.isSuccess(exit)) {
          assert.isTrue(b !== "invalidAlways" && !(b === "invalidOnce" && retries === 0), `succeeded as ${b}`)
          assert.deepStrictEqual(exit.value.output, Schema.decodeUnknownSync(schema)(value))
          assert.strictEqual(answers, b === "invalidOnce" ? 2 : 1)
          return
        }
        assert.isFalse(Cause.isDie(exit.cause), Cause.pretty(exit.cause))
        const error = Cause.failureOption(exit.cause)
        assert.isTrue(error._tag === "Some" && error.value._tag === "OutputInvalid", Cause.pretty(exit.cause))
        assert.isTrue(b === "invalidAlways" || (b === "invalidOnce" && retries === 0), `failed as ${b}`)
        assert.strictEqual(answers, 1 + retries)
        if (error._tag === "Some" && error.value._tag === "OutputInvalid") {
          assert.deepStrictEqual(error.value.value, invalid)
        }
      }).pipe(Effect.provide(h.layer))
    },
    // 80 whole agent runs (9–12 s on a quiet machine; more under load)
    { timeout: 120_000, fastCheck: { numRuns: 80 } }
  )

  it.effect.prop(
    "json_schema: strict exactly when every object lists its properties, all required, and then what OpenAI takes",
    [root],
    ([s]) => {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("{}")])
      // an optional property, or an empty object (`Schema.Struct({})` is any object or array: no `additionalProperties: false`)
      const hasOptional = (x: Shape): boolean =>
        x.kind === "object"
          ? x.fields.length === 0 || x.fields.some((f) => f.optional || hasOptional(f.shape))
          : x.kind === "array"
          ? hasOptional(x.of)
          : false
      return Effect.gen(function*() {
        yield* Effect.either(StructuredCall.structuredCallWith(llm.service, {
          messages: [Message.user("q")],
          schema: toSchema(s),
          functionName: "answer",
          responseSchema: true
        }))
        const format = llm.requests[0].request.responseFormat as { type: string; json_schema: { strict: boolean } }
        assert.strictEqual(format.type, "json_schema")
        assert.strictEqual(format.json_schema.strict, !hasOptional(s))
        assert.isUndefined(responseFormatProblem({ messages: [], response_format: format }))
      })
    },
    { timeout: 60_000, fastCheck: { numRuns: 100 } }
  )
})
