/**
 * How the offline demo model reads a request: which kind of call it is (tool
 * loop, JSON protocol, forced function, JSON Schema, synthesis, compaction), the
 * question being worked on, and the tool calls already made with their results.
 *
 * @internal
 */
import { extractJson } from "../../ExtractJson.js"
import type { ChatRequest, JsonSchemaObject } from "../../Llm.js"
import type { ChatMessage } from "../../Message.js"
import { textOf } from "../../Message.js"
import { focus } from "./dag.js"
import type { Observed, PlannedCall } from "./rules.js"
import { plan } from "./rules.js"

/** @internal */
export type Kind =
  | { readonly _tag: "Forced"; readonly name: string; readonly schema: JsonSchemaObject }
  | { readonly _tag: "JsonSchema"; readonly schema: JsonSchemaObject }
  | { readonly _tag: "Synthesis" }
  | { readonly _tag: "Compaction" }
  | { readonly _tag: "Loop"; readonly json: boolean }

const systemText = (messages: ReadonlyArray<ChatMessage>): string =>
  messages.filter((m) => m.role === "system").map((m) => textOf(m.content)).join("\n\n")

/** The last user message's text. @internal */
export const lastUserText = (messages: ReadonlyArray<ChatMessage>): string => {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === "user") return textOf(messages[i].content)
  return ""
}

/** @internal */
export const classify = (request: ChatRequest): Kind => {
  const choice = request.toolChoice
  if (typeof choice === "object" && choice.type === "function") {
    const def = request.tools?.find((t) => t.function.name === choice.function.name)
    return { _tag: "Forced", name: choice.function.name, schema: def?.function.parameters ?? { type: "object" } }
  }
  const system = systemText(request.messages)
  const last = lastUserText(request.messages)
  if (system.includes("\"type\":\"tool_call\"") && system.includes("final_answer")) return { _tag: "Loop", json: true }
  if (/^Question:/.test(last) && /Execution trace/.test(last) || /execution trace/i.test(system)) {
    return { _tag: "Synthesis" }
  }
  const schemaAt = system.search(/JSON Schema:/)
  if (schemaAt >= 0) {
    const schema = extractJson(system.slice(schemaAt))
    if (schema._tag === "Some") return { _tag: "JsonSchema", schema: schema.value as JsonSchemaObject }
  }
  if (
    /^Summari[sz]e this conversation/i.test(last) ||
    /\bsummar(?:y|ise|ize)\b/i.test(system) && /conversation/i.test(system)
  ) {
    return { _tag: "Compaction" }
  }
  return { _tag: "Loop", json: false }
}

// ---- the tool loop -----------------------------------------------------------------

const HARNESS = [
  /^Observation:/,
  /^\[Conversation summary\]/,
  /^Pause and reflect/,
  /^Before you finish, verify/,
  /^You have called `/,
  /^Your previous (?:reply|response) could not be parsed/
]

/** The content of a `[USER INTERRUPT]` message (the numbered items joined). @internal */
export const interruptContent = (text: string): string => {
  const lines = text.split("\n").slice(1).filter((l) => !/^Take (?:it|them) into account/.test(l.trim()))
  return lines.map((l) => l.replace(/^\d+\.\s+/, "").trim()).filter((l) => l !== "").join(" ")
}

/** What the loop has done so far for the current question. @internal */
export interface LoopView {
  readonly question: string
  readonly interrupt?: string
  readonly observed: ReadonlyArray<Observed>
  /** Calls made (with or without a result yet): tool + canonical args. */
  readonly made: ReadonlyArray<string>
}

const canonical = (value: unknown): string =>
  JSON.stringify(value, (_k, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : v)

/** @internal */
export const callKey = (tool: string, args: unknown): string => `${tool} ${canonical(args ?? {})}`

const parseArgs = (raw: string): Record<string, unknown> => {
  try {
    const v = JSON.parse(raw) as unknown
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

/** Reads the loop messages (native or JSON protocol). @internal */
export const readLoop = (messages: ReadonlyArray<ChatMessage>): LoopView => {
  let queryAt = -1
  for (let i = messages.length - 1; i >= 0 && queryAt < 0; i--) {
    const m = messages[i]
    if (m.role !== "user") continue
    const text = textOf(m.content)
    if (text.startsWith("[USER INTERRUPT]") || HARNESS.some((re) => re.test(text))) continue
    queryAt = i
  }
  // a DAG step's query: the step's task is the question
  const question = queryAt >= 0 ? focus(textOf(messages[queryAt].content)) : ""
  const interrupts: Array<string> = []
  const observed: Array<Observed> = []
  const made: Array<string> = []
  const pending = new Map<string, { tool: string; args: Record<string, unknown> }>()
  let jsonPending: { tool: string; args: Record<string, unknown> } | undefined
  for (let i = queryAt + 1; i < messages.length; i++) {
    const m = messages[i]
    if (m.role === "assistant") {
      for (const call of m.tool_calls ?? []) {
        const args = parseArgs(call.function.arguments)
        pending.set(call.id, { tool: call.function.name, args })
        made.push(callKey(call.function.name, args))
      }
      const json = m.content ? extractJson(m.content) : undefined
      if (json?._tag === "Some" && json.value.type === "tool_call" && typeof json.value.tool_name === "string") {
        const args = (json.value.tool_args ?? {}) as Record<string, unknown>
        jsonPending = { tool: json.value.tool_name, args }
        made.push(callKey(json.value.tool_name, args))
      }
    } else if (m.role === "tool") {
      const call = pending.get(m.tool_call_id)
      if (call) {
        observed.push({ ...call, text: m.content, error: m.content.startsWith("Error:") })
        pending.delete(m.tool_call_id)
      }
    } else if (m.role === "user") {
      const text = textOf(m.content)
      if (text.startsWith("[USER INTERRUPT]")) interrupts.push(interruptContent(text))
      else if (text.startsWith("Observation:") && jsonPending) {
        const body = text.replace(/^Observation:\s*/, "")
        observed.push({ ...jsonPending, text: body, error: body.startsWith("Error:") })
        jsonPending = undefined
      }
    }
  }
  return {
    question,
    ...(interrupts.length > 0 ? { interrupt: interrupts.join(" ") } : {}),
    observed,
    made
  }
}

/**
 * The calls still to make: the plan for the question (and for any interrupt),
 * minus the calls already made and the tools that are not available.
 *
 * @internal
 */
export const remaining = (view: LoopView, available: (tool: string) => boolean): Array<PlannedCall> => {
  if (view.made.length >= 6) return []
  const wanted = [...plan(view.question), ...(view.interrupt ? plan(view.interrupt) : [])]
  const done = new Set(view.made)
  const seen = new Set<string>()
  return wanted.filter((c) => {
    const key = callKey(c.tool, c.args)
    if (done.has(key) || seen.has(key) || !available(c.tool)) return false
    seen.add(key)
    return true
  })
}

/** Which tools the request offers (native `tools`, or the JSON-mode tool list). @internal */
export const availability = (request: ChatRequest, json: boolean): (tool: string) => boolean => {
  if (!json) {
    const names = new Set((request.tools ?? []).map((t) => t.function.name))
    return (tool) => names.has(tool)
  }
  const system = systemText(request.messages)
  return (tool) => system.includes(`\n- ${tool}:`)
}

/**
 * Every tool the request offers or can load, by name, in order: the advertised
 * ones (native `tools`, or the JSON-mode list in the system prompt) and those the
 * `request_tools` meta-tool says are not loaded yet (after tool selection).
 *
 * @internal
 */
export const toolNames = (request: ChatRequest, json: boolean): Array<string> => {
  const offered: ReadonlyArray<{ readonly name: string; readonly description: string }> = json
    ? [...systemText(request.messages).matchAll(/^- ([A-Za-z0-9_-]+): (.*)$/gm)].map((m) => ({
      name: m[1],
      description: m[2]
    }))
    : (request.tools ?? []).map((t) => ({ name: t.function.name, description: t.function.description }))
  const names: Array<string> = []
  for (const tool of offered) {
    const unloaded = /Not loaded yet: (.+?)\.?$/.exec(tool.description)
    for (const name of unloaded ? unloaded[1].split(/,\s*/) : [tool.name]) names.push(name)
  }
  return [...new Set(names.map((n) => n.trim()).filter((n) => n !== ""))]
}

// ---- answer synthesis ---------------------------------------------------------------

/** @internal */
export interface TraceView {
  readonly question: string
  readonly observed: ReadonlyArray<Observed>
  readonly interrupt?: string
  /** The loop's own answer, when the prompt carries it. */
  readonly draft?: string
}

/** Reads the synthesis prompt: the question, the steps and the user's mid-run messages. @internal */
export const readTrace = (text: string): TraceView => {
  const q = /Question:\s*\n([\s\S]*?)\n\s*\n?Execution trace/.exec(text)
  const question = focus(q ? q[1].trim() : text)
  const observed: Array<Observed> = []
  const step =
    /Step \d+: (\S+)\nArguments: (.*)\n(Result|Error): ([\s\S]*?)(?=\n\nStep \d+: |\n\n+Messages the user sent|\n\n+Draft answer:|\n\n+Write the final answer|$)/g
  for (const m of text.matchAll(step)) {
    observed.push({ tool: m[1], args: parseArgs(m[2]), text: m[4].trim(), error: m[3] === "Error" })
  }
  const block = /Messages the user sent during the work:\n((?:- .*\n?)+)/.exec(text)
  const items = block ? block[1].split("\n").filter((l) => l.startsWith("- ")).map((l) => l.slice(2).trim()) : []
  const draft = /\n\nDraft answer:\n([\s\S]*?)\n\nWrite the final answer/.exec(text)?.[1]
  return {
    question,
    observed,
    ...(items.length > 0 ? { interrupt: items.join(" ") } : {}),
    ...(draft !== undefined && draft.trim() !== "" ? { draft } : {})
  }
}

// ---- structured calls ----------------------------------------------------------------

/**
 * A valid value for a JSON Schema (the simplest one), with two pieces of sense:
 * an array of strings named `tools` (tool selection) gets the tool names the
 * demo would use that the prompt mentions; a string named `reason` (a verdict's:
 * an eval judge, a guardrail classifier) says that nothing was judged, rather than
 * an empty reason that reads like a real verdict with nothing to say.
 *
 * @internal
 */
export const sampleFromSchema = (root: JsonSchemaObject, prompt: string): unknown => {
  const defs = (root.$defs ?? root.definitions ?? {}) as Record<string, JsonSchemaObject>
  const go = (schema: JsonSchemaObject, key: string | undefined, depth: number): unknown => {
    if (depth > 8) return null
    if (typeof schema.$ref === "string") {
      const target = defs[schema.$ref.split("/").pop() ?? ""]
      return target ? go(target, key, depth + 1) : {}
    }
    if ("const" in schema) return schema.const
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
    const alts = (schema.anyOf ?? schema.oneOf) as ReadonlyArray<JsonSchemaObject> | undefined
    if (Array.isArray(alts) && alts.length > 0) {
      return go(alts.find((a) => a.type !== "null") ?? alts[0], key, depth + 1)
    }
    const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type
    switch (type) {
      case "object": {
        const props = (schema.properties ?? {}) as Record<string, JsonSchemaObject>
        const required = new Set((schema.required ?? Object.keys(props)) as ReadonlyArray<string>)
        const out: Record<string, unknown> = {}
        for (const [k, v] of Object.entries(props)) if (required.has(k)) out[k] = go(v, k, depth + 1)
        return out
      }
      case "array": {
        if (key === "tools") {
          // the tools the question needs; else every tool the demo can use (never an empty selection)
          const offered = (tools: ReadonlyArray<string>) => tools.filter((t) => prompt.includes(`- ${t}:`))
          const wanted = offered(plan(lastLine(prompt)).map((c) => c.tool))
          return [...new Set(wanted.length > 0 ? wanted : offered(["calculator", "current_time"]))]
        }
        const min = typeof schema.minItems === "number" ? schema.minItems : 0
        const items = (schema.items ?? {}) as JsonSchemaObject
        return Array.from({ length: min }, () => go(items, undefined, depth + 1))
      }
      case "string":
        if (key === "reason" && fits(schema, DEMO_REASON)) return DEMO_REASON
        return typeof schema.minLength === "number" && schema.minLength > 0 ? "x".repeat(schema.minLength) : ""
      case "number":
      case "integer":
        return typeof schema.minimum === "number" ? schema.minimum : 0
      case "boolean":
        return false
      case "null":
        return null
      default:
        return {}
    }
  }
  return go(root, undefined, 0)
}

/** The demo's `reason` in a structured reply: it is rule-based and judges nothing. @internal */
export const DEMO_REASON =
  "the offline demo model does not judge: this is its placeholder verdict (the schema's simplest value); configure a real model (LLM_*, FAST_LLM_*) for a real one"

const fits = (schema: JsonSchemaObject, text: string): boolean =>
  !(typeof schema.maxLength === "number" && text.length > schema.maxLength) &&
  !(typeof schema.minLength === "number" && text.length < schema.minLength) &&
  !(typeof schema.pattern === "string" && !new RegExp(schema.pattern, "u").test(text))

const lastLine = (prompt: string): string => {
  const q = /(?:User request|Question|Query):[ \t]*\n?([\s\S]+)$/i.exec(prompt)
  return q ? q[1] : prompt
}
