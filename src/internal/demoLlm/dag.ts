/**
 * The offline demo model in DAG mode: how it answers the DAG agent's calls.
 *
 * - The planner (`create_plan`): one step per part of the goal its rules know
 *   (arithmetic → step `calc` with the calculator; the time → step `time` with
 *   current_time), independent of each other so they run in parallel; follow-ups
 *   the user sent add their parts. A goal with no such part (or whose tools the
 *   agent lacks) is one step, `answer`, whose task is the goal.
 * - The mode router (`choose_mode`): `dag` when the query has two or more such
 *   parts, else `react`.
 * - The analyzer (`report_analysis`): achieved when every step is done (its
 *   final answer: the results joined); otherwise not achieved, with a confidence
 *   high enough not to re-plan (the rules would plan the same steps again).
 * - The DAG answer (the streamed synthesis): the steps' results, in order.
 *
 * The structured calls are recognised whatever the level `StructuredCall`
 * uses: the forced function (native), or the function named in the schema
 * instruction of the JSON-mode and plain-text levels.
 *
 * @internal
 */
import { functionNames } from "../../DagAgent.js"
import type { ChatRequest } from "../../Llm.js"
import { textOf } from "../../Message.js"
import { detectLanguage, type Lang, plan, type PlannedCall } from "./rules.js"

/** What the demo answers to a DAG-mode call. @internal */
export type DagCall =
  | { readonly _tag: "Structured"; readonly name: string; readonly value: unknown }
  | { readonly _tag: "Answer"; readonly text: string }

/** A step as the demo plans it (the planner's `{steps}` item). @internal */
export interface DemoStep {
  readonly id: string
  readonly task: string
  readonly dependencies: ReadonlyArray<string>
  readonly tool_hint: string | null
}

const textsOf = (request: ChatRequest, role: "system" | "user"): string =>
  request.messages.filter((m) => m.role === role).map((m) => textOf(m.content)).join("\n\n")

/** The structured function the request asks for: forced (native level) or named in the schema instruction. */
const functionOf = (request: ChatRequest): string | undefined => {
  const choice = request.toolChoice
  if (typeof choice === "object" && choice.type === "function") return choice.function.name
  const system = textsOf(request, "system")
  return [functionNames.plan, functionNames.analysis, functionNames.route].find((name) =>
    system.includes(`the result of \`${name}\``)
  )
}

// ---- the planner -------------------------------------------------------------------

/** The task a step gets for one planned call; the demo's rules read it back as the same call. @internal */
export const taskFor = (call: PlannedCall, lang: Lang): string => {
  if (call.tool === "calculator") {
    const expression = String(call.args.expression)
    return lang === "zh" ? `计算 ${expression}` : `Calculate ${expression}`
  }
  const zone = String(call.args.timezone)
  return lang === "zh" ? `查询 ${zone} 的当前时间` : `What time is it in ${zone}?`
}

const ID_OF: Record<PlannedCall["tool"], string> = { calculator: "calc", current_time: "time" }

/**
 * The demo's plan for a goal (and the user's follow-ups): one independent step
 * per tool call its rules make for them (tools the agent has: `available`),
 * else one step whose task is the goal.
 *
 * @internal
 */
export const planSteps = (
  goal: string,
  followUps: ReadonlyArray<string>,
  available: (tool: string) => boolean
): Array<DemoStep> => {
  const lang = detectLanguage(goal)
  const seen = new Set<string>()
  const calls = [...plan(goal), ...followUps.flatMap((f) => plan(f))].filter((c) => {
    const key = `${c.tool} ${JSON.stringify(c.args)}`
    if (seen.has(key) || !available(c.tool)) return false
    seen.add(key)
    return true
  })
  if (calls.length === 0) {
    const task = [goal, ...followUps].join("\n").trim()
    return [{ id: "answer", task: task === "" ? "Answer the user." : task, dependencies: [], tool_hint: null }]
  }
  const counts = new Map<string, number>()
  return calls.map((call) => {
    const base = ID_OF[call.tool]
    const n = (counts.get(base) ?? 0) + 1
    counts.set(base, n)
    return { id: n === 1 ? base : `${base}${n}`, task: taskFor(call, lang), dependencies: [], tool_hint: call.tool }
  })
}

/** Reads the planner's prompt: the goal, the follow-ups, the tool catalogue. */
const readPlanPrompt = (text: string) => {
  const goal = /(?:^|\n)Goal:\n([\s\S]*?)(?=\n\n\[User follow-up\]: |\n\nAvailable tools:\n|$)/.exec(text)?.[1] ?? ""
  const followUps = [...text.matchAll(/^\[User follow-up\]: (.*)$/gm)].map((m) => m[1].trim())
  const catalogue = /\n\nAvailable tools:\n([\s\S]*?)(?=\n\n|$)/.exec(text)?.[1] ?? ""
  return { goal: goal.trim(), followUps, available: (tool: string) => catalogue.includes(`- ${tool}:`) }
}

// ---- the analyzer and the answer ---------------------------------------------------

/** A step result as the analysis and synthesis prompts show it. @internal */
export interface ShownResult {
  readonly id: string
  readonly status: string
  readonly task: string
  readonly body: string
}

/** The `### Step <id> [<status>]: <task>` sections of a prompt. @internal */
export const readResults = (text: string): Array<ShownResult> => {
  const block =
    /\nStep results:\n([\s\S]*?)(?=\n\nAssessment of the results:\n|\n\nWrite the final answer to the goal\.|$)/.exec(
      `\n${text}`
    )
  if (block === null) return []
  const headers = [...block[1].matchAll(/^### Step (.+?) \[(done|failed|skipped)\]: (.*)$/gm)]
  return headers.map((h, i) => {
    const start = h.index! + h[0].length + 1
    const end = i + 1 < headers.length ? headers[i + 1].index! : block[1].length
    return { id: h[1], status: h[2], task: h[3], body: block[1].slice(start, end).trim() }
  })
}

const goalOf = (text: string): string =>
  /(?:^|\n)Goal:\n([\s\S]*?)(?=\n\n|\n\[User follow-up\]: |$)/.exec(text)?.[1]?.trim() ?? ""

const problem = (r: ShownResult, lang: Lang): string => {
  const why = r.body.replace(/^\((?:failed|skipped)\)\s*/, "")
  return lang === "zh" ? `步骤 ${r.id}（${r.task}）未完成：${why}` : `Step ${r.id} (${r.task}) did not finish: ${why}`
}

/** The answer from the steps' results: the results in order, then what did not finish. @internal */
export const answerFrom = (results: ReadonlyArray<ShownResult>, lang: Lang): string => {
  const done = results.filter((r) => r.status === "done" && r.body !== "").map((r) => r.body)
  const failed = results.filter((r) => r.status !== "done").map((r) => problem(r, lang))
  if (done.length === 0 && failed.length === 0) {
    return lang === "zh" ? "没有可用的结果。" : "No step produced a result."
  }
  return [...done, ...failed].join("\n\n")
}

/** The analyzer's verdict on the prompt's step results. @internal */
export const analysisFor = (text: string): Record<string, unknown> => {
  const lang = detectLanguage(goalOf(text))
  const results = readResults(text)
  const done = results.filter((r) => r.status === "done")
  const achieved = results.length > 0 && done.length === results.length
  const ids = (rs: ReadonlyArray<ShownResult>) => rs.map((r) => r.id).join(", ")
  const reasoning = achieved
    ? lang === "zh"
      ? `全部 ${results.length} 个步骤（${ids(results)}）都已完成，结果回答了目标。`
      : `All ${results.length} step(s) (${ids(results)}) finished and their results answer the goal.`
    : lang === "zh"
    ? `${results.length} 个步骤中完成了 ${done.length} 个；${
      results.filter((r) => r.status !== "done").map((r) => problem(r, lang)).join("；")
    }。离线演示模型重新规划也只会得到同样的步骤。`
    : `${done.length} of ${results.length} step(s) finished. ${
      results.filter((r) => r.status !== "done").map((r) => problem(r, lang)).join(" ")
    } ` +
      "The offline demo model would plan the same steps again, so it answers with what is known."
  return {
    achieved,
    // sure of its verdict either way: a re-plan on the demo's fixed rules would change nothing
    confidence: achieved ? 0.95 : 0.9,
    reasoning,
    final_answer: achieved ? answerFrom(results, lang) : null
  }
}

// ---- recognition -------------------------------------------------------------------

/** True for the DAG agent's answer synthesis (goal, step results, "Write the final answer to the goal."). */
const isDagAnswer = (request: ChatRequest): boolean => {
  const last = [...request.messages].reverse().find((m) => m.role === "user")
  const text = last ? textOf(last.content) : ""
  return /results of the steps/i.test(textsOf(request, "system")) && /(?:^|\n)Goal:\n/.test(text) &&
    text.includes("\nStep results:\n") && /Write the final answer to the goal\.\s*$/.test(text)
}

/**
 * The demo's reply to a call of the DAG agent (planner, analyzer, router, answer
 * synthesis); `undefined` for any other request.
 *
 * @internal
 */
export const dagCall = (request: ChatRequest): DagCall | undefined => {
  const name = functionOf(request)
  const user = textsOf(request, "user")
  switch (name) {
    case functionNames.plan: {
      const prompt = readPlanPrompt(user)
      return { _tag: "Structured", name, value: { steps: planSteps(prompt.goal, prompt.followUps, prompt.available) } }
    }
    case functionNames.analysis:
      return { _tag: "Structured", name, value: analysisFor(user) }
    case functionNames.route: {
      // the router sees the query alone (the first user message; a retry appends the re-format request)
      const first = request.messages.find((m) => m.role === "user")
      const parts = plan(first ? textOf(first.content) : "")
      return {
        _tag: "Structured",
        name,
        value: parts.length >= 2
          ? { mode: "dag", reason: `${parts.length} independent parts (${parts.map((p) => p.tool).join(", ")})` }
          : {
            mode: "react",
            reason: parts.length === 1 ? "a single task" : "no part the demo's tools can work on in parallel"
          }
      }
    }
  }
  if (isDagAnswer(request)) {
    const last = [...request.messages].reverse().find((m) => m.role === "user")
    const text = last ? textOf(last.content) : ""
    return { _tag: "Answer", text: answerFrom(readResults(text), detectLanguage(goalOf(text))) }
  }
  return undefined
}

/**
 * The task of a DAG step's query (`Overall goal: …\n\nYour task (step <id>): <task>…`),
 * which is what the step's loop works on; any other text as it is.
 *
 * @internal
 */
export const focus = (query: string): string => {
  if (!query.startsWith("Overall goal: ")) return query
  const task =
    /\nYour task \(step [^)\n]*\): ([\s\S]*?)(?=\nSuggested tool: |\n\nResults of the steps this task depends on:|\n\nDo this task only|$)/
      .exec(query)
  return task ? task[1].trim() : query
}
