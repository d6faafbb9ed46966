/**
 * What OpenAI's chat completions endpoint refuses in a `response_format`, as
 * its documentation states it ("Structured Outputs: supported schemas"), for
 * fakes that must refuse what the real endpoint refuses. Written from the
 * documentation, not from the engine's own strictness check, so that a wrong
 * `strict: true` from the engine meets a 400 here as it would there:
 *
 * - `json_schema.name`: `^[a-zA-Z0-9_-]{1,64}$`; `schema` an object;
 * - `strict: true`: the root is an object (not `anyOf`); every object has
 *   `additionalProperties: false` and lists every property in `required`; none
 *   of the keywords strict mode does not support (`minLength`, `maxLength`,
 *   `allOf`, `oneOf`, `not`, `if`/`then`/`else`, `patternProperties`,
 *   `uniqueItems`, …); at most 10 levels of nesting; `format` only from its list;
 * - `json_object`: some message must contain the word "json".
 */
import type { FakeReply } from "./fakeOpenAiServer.js"

const NAME = /^[a-zA-Z0-9_-]{1,64}$/

const UNSUPPORTED_IN_STRICT = [
  "minLength",
  "maxLength",
  "allOf",
  "oneOf",
  "not",
  "if",
  "then",
  "else",
  "patternProperties",
  "unevaluatedProperties",
  "propertyNames",
  "minProperties",
  "maxProperties",
  "unevaluatedItems",
  "contains",
  "minContains",
  "maxContains",
  "uniqueItems",
  "dependentRequired",
  "dependentSchemas",
  "default"
]

const FORMATS = ["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"]

const isObject = (u: unknown): u is Record<string, any> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The first strict-mode violation of `node` (a path and what is wrong), if any. */
const strictProblem = (node: unknown, path: string, depth: number): string | undefined => {
  if (!isObject(node)) return undefined
  if (depth > 10) return `${path}: nesting deeper than 10 levels`
  for (const keyword of UNSUPPORTED_IN_STRICT) {
    if (keyword in node) return `${path}: '${keyword}' is not permitted`
  }
  if (typeof node.format === "string" && !FORMATS.includes(node.format)) {
    return `${path}: format '${node.format}' is not supported`
  }
  if (node.type === "object" || isObject(node.properties)) {
    if (node.additionalProperties !== false) {
      return `${path}: 'additionalProperties' is required to be supplied and to be false`
    }
    const keys = Object.keys(node.properties ?? {})
    const required: Array<string> = Array.isArray(node.required) ? node.required : []
    const missing = keys.filter((k) => !required.includes(k))
    if (missing.length > 0) {
      return `${path}: 'required' is required to be supplied and to be an array including every key in properties. Missing '${
        missing[0]
      }'`
    }
    for (const key of keys) {
      const p = strictProblem(node.properties[key], `${path}.properties.${key}`, depth + 1)
      if (p) return p
    }
  }
  if (node.items !== undefined) {
    const p = strictProblem(node.items, `${path}.items`, depth + 1)
    if (p) return p
  }
  for (const list of ["anyOf"]) {
    if (Array.isArray(node[list])) {
      for (const [i, member] of node[list].entries()) {
        const p = strictProblem(member, `${path}.${list}[${i}]`, depth)
        if (p) return p
      }
    }
  }
  for (const defs of ["$defs", "definitions"]) {
    if (isObject(node[defs])) {
      for (const [name, def] of Object.entries(node[defs])) {
        const p = strictProblem(def, `${path}.${defs}.${name}`, 0)
        if (p) return p
      }
    }
  }
  return undefined
}

const text = (messages: ReadonlyArray<any>): string =>
  messages.map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? ""))).join("\n")

/** Why OpenAI would answer 400 to this request body's `response_format` (undefined: it would take it). */
export const responseFormatProblem = (body: any): string | undefined => {
  const format = body?.response_format
  if (format === undefined || format === null) return undefined
  if (format.type === "json_object") {
    return /json/i.test(text(body.messages ?? []))
      ? undefined
      : "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
  }
  if (format.type !== "json_schema") return format.type === "text" ? undefined : `Invalid value: '${format.type}'`
  const spec = format.json_schema
  if (!isObject(spec) || typeof spec.name !== "string" || !NAME.test(spec.name)) {
    return "Invalid 'response_format.json_schema.name'"
  }
  if (!isObject(spec.schema)) return "Invalid 'response_format.json_schema.schema': expected an object"
  if (spec.strict !== true) return undefined
  if (spec.schema.type !== "object" || "anyOf" in spec.schema) {
    return `Invalid schema for response_format '${spec.name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${spec.schema.type}"'.`
  }
  const problem = strictProblem(spec.schema, "context=()", 0)
  return problem === undefined ? undefined : `Invalid schema for response_format '${spec.name}': In ${problem}.`
}

/**
 * A fake's responder that answers 400 (OpenAI's body) to a `response_format`
 * OpenAI would refuse, recording the refusal, and `responder` otherwise.
 */
export const refusing = (
  responder: (body: any, index: number) => FakeReply,
  refusals: Array<string>
) =>
(body: any, index: number): FakeReply => {
  const problem = responseFormatProblem(body)
  if (problem === undefined) return responder(body, index)
  refusals.push(problem)
  return {
    _tag: "Json",
    status: 400,
    body: { error: { message: problem, type: "invalid_request_error", param: "response_format", code: null } }
  }
}
