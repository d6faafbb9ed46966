/**
 * Tool approval at the terminal for `npm run ask`: with
 * `--approve-all` every call is approved; otherwise, when stdin is a terminal,
 * the CLI asks (`y` approves; anything else denies, a text other than `n` /
 * `no` being the reason); with no terminal to ask, calls are denied with reason
 * `no approver`.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import { createInterface } from "node:readline"
import type { DecisionKind } from "../Approvals.js"
import type { RunEvent } from "../RunEvent.js"

/** @internal */
export type ApprovalMode = "all" | "ask" | "none"

/** The reason of calls denied because nobody can answer. @internal */
export const NO_APPROVER = "no approver"

/** How the CLI answers approvals. @internal */
export const approvalMode = (approveAll: boolean, stdinIsTTY: boolean): ApprovalMode =>
  approveAll ? "all" : stdinIsTTY ? "ask" : "none"

/** @internal */
export interface Answer {
  readonly decision: DecisionKind
  readonly reason?: string
}

/** A typed answer: `y` / `yes` approve; empty, `n`, `no` deny; any other text denies with itself as the reason. @internal */
export const parseAnswer = (text: string): Answer => {
  const t = text.trim()
  if (/^(y|yes)$/i.test(t)) return { decision: "approve" }
  if (t === "" || /^(n|no)$/i.test(t)) return { decision: "deny" }
  return { decision: "deny", reason: t }
}

const showArgs = (args: unknown): string => {
  const text = JSON.stringify(args) ?? ""
  return text.length > 300 ? `${text.slice(0, 300)}…` : text
}

/** The question asked for a call. @internal */
export const question = (event: Extract<RunEvent, { _tag: "ApprovalRequested" }>): string =>
  `Approve ${event.step_id !== undefined ? `[step ${event.step_id}] ` : ""}${event.tool_name}(${
    showArgs(event.tool_args)
  })? ` +
  `[y/N, or a reason to deny] `

/**
 * Asks one question on the terminal (prompt on stderr, so stdout stays the
 * answer) and reads one line; end of input reads as an empty answer.
 *
 * @internal
 */
export const askTerminal = (prompt: string): Effect.Effect<string> =>
  Effect.async<string>((resume) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true })
    let answered = false
    const settle = (text: string) => {
      if (answered) return
      answered = true
      rl.close()
      resume(Effect.succeed(text))
    }
    rl.question(prompt, settle)
    rl.once("close", () => settle(""))
    // Ctrl-C while asking stops the CLI as it does elsewhere (readline would swallow it)
    rl.once("SIGINT", () => {
      rl.close()
      process.kill(process.pid, "SIGINT")
    })
    return Effect.sync(() => {
      answered = true
      rl.close()
    })
  })

/**
 * The answer to an approval request: approve (`all`), ask (`ask`), or deny
 * with `no approver` (`none`).
 *
 * @internal
 */
export const answerFor = (
  mode: ApprovalMode,
  event: Extract<RunEvent, { _tag: "ApprovalRequested" }>,
  ask: (prompt: string) => Effect.Effect<string> = askTerminal
): Effect.Effect<Answer> => {
  if (mode === "all") return Effect.succeed({ decision: "approve" })
  if (mode === "none") return Effect.succeed({ decision: "deny", reason: NO_APPROVER })
  return Effect.map(ask(question(event)), parseAnswer)
}

/** The question asked when a run of budget policy `ask` waits. @internal */
export const budgetQuestion = (event: Extract<RunEvent, { _tag: "BudgetStatus" }>): string =>
  `The run's budget is spent ($${event.spent_usd} of $${event.limit_usd}). Add how many USD? [an amount, or empty to stop] `

/** A typed amount extends the budget by it; anything else stops the run. @internal */
export const parseBudgetAnswer = (text: string): Answer => {
  const t = text.trim()
  const usd = Number(t)
  return t !== "" && Number.isFinite(usd) && usd > 0
    ? { decision: "approve", reason: String(usd) }
    : { decision: "deny" }
}

/**
 * How the CLI answers a budget wait: asks on the terminal (`ask`); without a
 * terminal (or with `--yes`, which approves tool calls, never spending) it stops.
 *
 * @internal
 */
export const budgetAnswerFor = (
  mode: ApprovalMode,
  event: Extract<RunEvent, { _tag: "BudgetStatus" }>,
  ask: (prompt: string) => Effect.Effect<string> = askTerminal
): Effect.Effect<Answer> =>
  mode === "ask"
    ? Effect.map(ask(budgetQuestion(event)), parseBudgetAnswer)
    : Effect.succeed({ decision: "deny", reason: NO_APPROVER })
