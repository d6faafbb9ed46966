/**
 * DAG mode, phase 1: the planner. One `structuredCall` on the main
 * model returns `{steps: [{id, task, dependencies, tool_hint?, model_hint?}]}`
 * (1–6 steps; a single step object instead of the wrapper is accepted too, and
 * a bare JSON array of steps in a plain-text reply), then the graph is checked
 * with a topological sort: dependency ids that name no step are dropped (and
 * logged), duplicate ids and cycles make the plan invalid. An invalid or
 * unparseable plan is retried once with the problem spelled out; a second
 * failure is a planning failure (the caller decides what follows).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as JsonSchema from "../../JsonSchema.js"
import type { LlmService } from "../../Llm.js"
import type { ChatMessage } from "../../Message.js"
import * as Message from "../../Message.js"
import { DagPlanStep } from "../../RunEvent.js"
import { structuredCallWith } from "../../StructuredCall.js"
import * as Usage from "../../Usage.js"

/** At most this many steps per plan. */
export const MAX_STEPS = 6

// ---------------------------------------------------------------------------
// schema

/** Ids come as strings or numbers; both become trimmed strings. */
const Id = Schema.Union(Schema.String, Schema.Number).pipe(
  Schema.transform(Schema.String, { strict: true, decode: (v) => String(v).trim(), encode: (s) => s })
)

/** `null`, `""` and absent hints are all "no hint". */
const Hint = Schema.optional(Schema.NullOr(Schema.String))

const RawStep = Schema.Struct({
  id: Id.annotations({ description: "Short unique id, e.g. \"1\"" }),
  task: Schema.String.annotations({ description: "A self-contained instruction, in the language of the goal" }),
  dependencies: Schema.optionalWith(Schema.Array(Id), { default: () => [], nullable: true }).annotations({
    description: "Ids of the steps whose results this step needs"
  }),
  tool_hint: Hint.annotations({ description: "The tool this step most likely needs, or null" }),
  model_hint: Hint.annotations({ description: "\"fast\" for simple lookups or conversions, null otherwise" })
})
type RawStep = typeof RawStep.Type

const RawPlan = Schema.Struct({
  steps: Schema.Array(RawStep).pipe(Schema.minItems(1), Schema.maxItems(MAX_STEPS))
})
type RawPlan = typeof RawPlan.Type

/** What the model is asked for: the `{steps}` object. */
const planJsonSchema = JsonSchema.make(RawPlan)

/**
 * Decodes `{steps}`, or one step object as a one-step plan; the model is shown
 * the `{steps}` shape only.
 */
export const PlanSchema: Schema.Schema<RawPlan, unknown> = Schema.Union(
  RawPlan,
  Schema.transform(RawStep, RawPlan, {
    strict: false,
    decode: (step) => ({ steps: [step] }),
    encode: (plan) => plan.steps[0]
  })
).annotations({ jsonSchema: planJsonSchema as object }) as unknown as Schema.Schema<RawPlan, unknown>

/** Plain-text replies: a bare JSON array of steps. */
const arrayOfSteps = (text: string): unknown => {
  const start = text.indexOf("[")
  const end = text.lastIndexOf("]")
  if (start < 0 || end <= start) return undefined
  try {
    const value: unknown = JSON.parse(text.slice(start, end + 1))
    return Array.isArray(value) ? { steps: value } : undefined
  } catch {
    return undefined
  }
}

// ---------------------------------------------------------------------------
// validation

/** A checked plan: steps in the model's order, `order` = ids in launch (id) order. */
export interface Plan {
  readonly steps: ReadonlyArray<DagPlanStep>
  readonly order: ReadonlyArray<string>
}

/** Ids in "natural" order: `2` before `10`, then by text. */
export const compareIds = (a: string, b: string): number => a.localeCompare(b, "en", { numeric: true })

/** The outcome of checking a raw plan. */
export type Checked =
  | {
    readonly _tag: "Valid"
    readonly plan: Plan
    readonly dropped: ReadonlyArray<{ readonly step: string; readonly dependency: string }>
  }
  | { readonly _tag: "Invalid"; readonly problem: string }

const hint = (value: string | null | undefined): string | undefined => {
  const text = value?.trim()
  return text ? text : undefined
}

/**
 * Checks the graph: unique non-empty ids and tasks, dangling dependency ids
 * dropped (returned in `dropped`), no cycle (Kahn's algorithm).
 */
export const check = (raw: ReadonlyArray<RawStep>): Checked => {
  const ids = new Set<string>()
  for (const step of raw) {
    if (step.id === "") return { _tag: "Invalid", problem: "a step has an empty id" }
    if (ids.has(step.id)) return { _tag: "Invalid", problem: `two steps have the id "${step.id}"` }
    if (step.task.trim() === "") return { _tag: "Invalid", problem: `step "${step.id}" has an empty task` }
    ids.add(step.id)
  }
  const dropped: Array<{ readonly step: string; readonly dependency: string }> = []
  const steps: Array<DagPlanStep> = raw.map((step) => {
    const dependencies: Array<string> = []
    for (const dependency of step.dependencies) {
      if (!ids.has(dependency)) dropped.push({ step: step.id, dependency })
      else if (!dependencies.includes(dependency)) dependencies.push(dependency)
    }
    const tool = hint(step.tool_hint)
    const model = hint(step.model_hint)
    return {
      id: step.id,
      task: step.task.trim(),
      dependencies,
      ...(tool !== undefined ? { tool_hint: tool } : {}),
      ...(model !== undefined ? { model_hint: model } : {})
    }
  })
  // Kahn: repeatedly take the steps whose dependencies are all taken
  const remaining = new Map(steps.map((s) => [s.id, s.dependencies.length]))
  const dependents = new Map<string, Array<string>>()
  for (const s of steps) for (const d of s.dependencies) dependents.set(d, [...(dependents.get(d) ?? []), s.id])
  const ready = steps.filter((s) => s.dependencies.length === 0).map((s) => s.id)
  let visited = 0
  while (ready.length > 0) {
    const id = ready.pop()!
    visited++
    for (const next of dependents.get(id) ?? []) {
      const left = remaining.get(next)! - 1
      remaining.set(next, left)
      if (left === 0) ready.push(next)
    }
  }
  if (visited < steps.length) {
    const cyclic = steps.filter((s) => remaining.get(s.id)! > 0).map((s) => s.id).sort(compareIds)
    return { _tag: "Invalid", problem: `the dependencies form a cycle (steps ${cyclic.join(", ")})` }
  }
  return { _tag: "Valid", plan: { steps, order: steps.map((s) => s.id).sort(compareIds) }, dropped }
}

// ---------------------------------------------------------------------------
// prompt

/** What the planner is told. */
export interface PlanRequest {
  readonly goal: string
  /** Earlier turns (user/assistant text). */
  readonly history: ReadonlyArray<ChatMessage>
  readonly now: Date
  /** The tool catalogue (`- name: description` lines). */
  readonly tools: string
  /** Model names the registry resolves (besides the default). */
  readonly models: ReadonlyArray<string>
  /** Re-planning: what happened in the previous round. */
  readonly previous?: string
  /** Messages the user sent during the run, oldest first. */
  readonly followUps: ReadonlyArray<string>
}

const HISTORY_MAX_CHARS = 8000

const historyText = (history: ReadonlyArray<ChatMessage>): string => {
  const lines = history.flatMap((m) =>
    m.role === "user" || m.role === "assistant"
      ? [`${m.role === "user" ? "User" : "Assistant"}: ${Message.textOf(m.content)}`]
      : []
  )
  const text = lines.join("\n")
  return text.length <= HISTORY_MAX_CHARS ? text : `[…]${text.slice(text.length - HISTORY_MAX_CHARS)}`
}

/** The planner conversation. */
export const planMessages = (request: PlanRequest, problem?: string): Array<ChatMessage> => {
  const date = request.now.toISOString().slice(0, 10)
  const others = request.models.filter((m) => m !== "main" && m !== "fast").map((m) => `"${m}"`)
  const system = [
    `You are the planner of an AI agent. Today is ${date} (the year is ${request.now.getUTCFullYear()}).`,
    `Break the user's goal into a plan of 1 to ${MAX_STEPS} steps that together achieve it. Each step is done by an agent that can use tools but sees only its own task and the results of the steps it depends on.`,
    "Steps that do not depend on each other run in parallel: give a step a dependency only when it needs that step's result.",
    "Merge trivially related work into ONE step (if several checks can be done by one tool call or one script, that is one step). Use a single step when the goal is simple.",
    "Write each task as a self-contained instruction in the same language as the user's goal.",
    "Fields: id (short and unique, e.g. \"1\"), task, dependencies (ids), tool_hint (the tool the step most likely needs, or null), " +
    `model_hint ("fast" for simple lookups or format conversions${
      others.length > 0 ? `, ${others.join(" or ")} when the step needs that model` : ""
    }, null when unsure).`,
    "The dependencies must not form a cycle."
  ].join("\n")
  const parts: Array<string> = []
  if (request.history.length > 0) parts.push(`Previous conversation:\n${historyText(request.history)}`, "")
  parts.push(`Goal:\n${request.goal}`)
  for (const followUp of request.followUps) parts.push("", `[User follow-up]: ${followUp}`)
  parts.push("", `Available tools:\n${request.tools === "" ? "(none)" : request.tools}`)
  if (request.previous !== undefined) {
    parts.push(
      "",
      request.previous,
      "",
      "Make a new plan that achieves the goal, taking into account what happened and any follow-up from the user. Results above that are good can be restated in a task instead of being fetched again."
    )
  }
  if (problem !== undefined) parts.push("", `Your previous plan was rejected: ${problem}. Return a corrected plan.`)
  return [Message.system(system), Message.user(parts.join("\n"))]
}

// ---------------------------------------------------------------------------
// planning

/** @internal */
export const FUNCTION_NAME = "create_plan"

/** The outcome of planning (never a failure of the effect). */
export type Planned =
  | { readonly _tag: "Planned"; readonly plan: Plan; readonly usage: Usage.Usage }
  | { readonly _tag: "Failed"; readonly reason: string; readonly usage: Usage.Usage }

/** The outcome of planning as a durable run stores it (`dag/<round>/plan`). */
export const PlannedSchema = Schema.Union(
  Schema.TaggedStruct("Planned", {
    plan: Schema.Struct({ steps: Schema.Array(DagPlanStep), order: Schema.Array(Schema.String) }),
    usage: Usage.Usage
  }),
  Schema.TaggedStruct("Failed", { reason: Schema.String, usage: Usage.Usage })
)

const attempt = (llm: LlmService, request: PlanRequest, problem: string | undefined) =>
  structuredCallWith(llm, {
    messages: planMessages(request, problem),
    schema: PlanSchema,
    functionName: FUNCTION_NAME,
    functionDescription: "Return the plan: the steps and their dependencies.",
    regexFallback: arrayOfSteps,
    phase: "planning"
  }).pipe(
    Effect.map((result) => ({ checked: check(result.value.steps), usage: result.usage })),
    Effect.catchTag("StructuredOutputError", (error) =>
      Effect.succeed({
        checked: { _tag: "Invalid", problem: `no usable plan (${error.message})` } as Checked,
        usage: error.usage ?? Usage.empty
      }))
  )

/** Plans, retrying once with the problem when the first plan is unusable. */
export const plan = (llm: LlmService, request: PlanRequest): Effect.Effect<Planned> =>
  Effect.gen(function*() {
    let usage = Usage.empty
    let problem: string | undefined
    for (let i = 0; i < 2; i++) {
      const result = yield* attempt(llm, request, problem)
      usage = Usage.add(usage, result.usage)
      if (result.checked._tag === "Valid") {
        for (const d of result.checked.dropped) {
          yield* Effect.logWarning(
            `DAG plan: step "${d.step}" depends on unknown step "${d.dependency}"; dependency dropped`
          )
        }
        return { _tag: "Planned", plan: result.checked.plan, usage } as const
      }
      problem = result.checked.problem
      yield* Effect.logWarning(`DAG plan rejected (attempt ${i + 1} of 2): ${problem}`)
    }
    return { _tag: "Failed", reason: problem ?? "no usable plan", usage } as const
  })
