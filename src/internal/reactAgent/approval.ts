/**
 * Tool approval in the loop: whether a call needs a person's
 * approval, and asking for it through the run's journal.
 *
 * A call needs approval when its tool was made with `needsApproval` (`true`, or
 * a check of the arguments that says so; a check that fails asks) or its name
 * matches one of the agent's `approvalTools` globs. The check runs after the
 * PreToolUse hooks, on the arguments that would run.
 *
 * Asking: the `approval` `requested` event, then the wait — a journal activity
 * (`approval/<iteration>/<call id>`), so a durable host stores the decision and
 * a replay does not ask again —, then the `approved` / `denied` event. The
 * approval id is derived from the conversation, a key unique to the run (one
 * more activity, `approval/run`, the first time the run asks), the iteration,
 * the call id and the arguments hash. The tool runs only when the decision is
 * an approval for exactly that id and those arguments.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { AgentOptions } from "../../AgentConfig.js"
import * as AgentRun from "../../AgentRun.js"
import * as Approvals from "../../Approvals.js"
import * as Budget from "../../Budget.js"
import * as Hooks from "../../Hooks.js"
import type { ToolUseContext } from "../../Hooks.js"
import type { RunJournal } from "../../RunJournal.js"
import type { Tool } from "../../Tool.js"

/** What asking came to. */
export type Verdict =
  | { readonly approved: true }
  | { readonly approved: false; readonly reason?: string }

/** The approval side of a run. */
export interface ApprovalGate {
  /**
   * True when the call must be approved before it runs: by the tool's name or
   * its static rule (an `Effect.succeed`), or by the tool's check of the
   * arguments.
   */
  readonly required: (tool: Tool, context: ToolUseContext) => Effect.Effect<boolean>
  /** Asks a person about the call (events, the journaled wait) and checks the answer. */
  readonly ask: (call: {
    readonly name: string
    readonly id?: string
    readonly args: Record<string, unknown>
    readonly iteration: number
  }) => Effect.Effect<Verdict>
  /**
   * Budget policy `ask`: waits, like an approval (journaled, stored by a durable
   * approvals service), for a person to extend the money budget (`extend`, USD
   * added) or stop the run. `n` numbers the waits of the run.
   */
  readonly askBudget: (
    wait: { readonly n: number; readonly spentUsd: number; readonly limitUsd: number }
  ) => Effect.Effect<
    { readonly extend: number } | { readonly stop: true }
  >
}

const yes = Effect.succeed(true)
const no = Effect.succeed(false)

/** The reason of a decision that names another approval or other arguments. */
export const MISMATCH = "the approval does not match this call"

/** The tool message of a denied call. */
export const deniedMessage = (reason: string | undefined): string =>
  `the user denied this call${reason !== undefined && reason !== "" ? `: ${reason}` : ""}`

/** The gate of one run. */
export const makeGate = (options: {
  readonly approvals: Approvals.ApprovalsService
  readonly settings: AgentOptions
  readonly journal: RunJournal
  /** The run's own conversation (part of the approval id). */
  readonly conversationId: string
  /** The conversation whose user answers. */
  readonly approverConversationId: string
}): Effect.Effect<ApprovalGate> =>
  Effect.gen(function*() {
    const { approvals, journal, settings } = options
    const byName = settings.approvalTools.length > 0 ? Hooks.compile(settings.approvalTools) : () => false
    // created at most once per run, the first time a call needs approval
    const runKey = yield* Effect.cached(journal.activity({
      name: "approval/run",
      success: Schema.String,
      execute: () => Effect.sync(() => crypto.randomUUID())
    }))

    const required = (tool: Tool, context: ToolUseContext): Effect.Effect<boolean> => {
      if (byName(tool.name)) return yes
      const rule = tool.needsApproval
      if (rule === undefined) return no
      if (rule === true) return yes
      // fail closed: a check that fails or dies asks the person (interruption propagates)
      return Effect.suspend(() => rule(context.args, context)).pipe(
        Effect.map((needed) => needed !== false),
        Effect.catchAll(() => Effect.succeed(true)),
        Effect.catchAllDefect(() => Effect.succeed(true))
      )
    }

    const ask: ApprovalGate["ask"] = (call) =>
      Effect.gen(function*() {
        const key = yield* runKey
        const argsHash = Approvals.hashArgs(call.args)
        const toolCallId = call.id ?? `json_${call.iteration}`
        const approvalId = Approvals.makeId({
          conversationId: options.conversationId,
          runKey: key,
          iteration: call.iteration,
          toolCallId,
          argsHash
        })
        const id = call.id !== undefined ? { tool_call_id: call.id } : {}
        // announced once the request is stored (decidable), from inside the wait's step: the calls of
        // a round ask concurrently, and a restarted wait announces again, so the event is keyed by the
        // approval (stored once), not by its position
        const requested = journal.emit({
          _tag: "ApprovalRequested",
          approval_id: approvalId,
          ...id,
          tool_name: call.name,
          tool_args: call.args,
          args_hash: argsHash,
          iteration: call.iteration
        }, { key: `approval/${approvalId}/requested` })
        // the run's deadline counts working time: its clock stops while a person is asked
        const decision = yield* AgentRun.waitingForPerson(journal.activity({
          name: `approval/${call.iteration}/${call.id ?? "json"}`,
          success: Approvals.Decision,
          execute: () =>
            approvals.request({
              approvalId,
              conversationId: options.approverConversationId,
              toolCallId,
              toolName: call.name,
              args: call.args,
              argsHash,
              iteration: call.iteration,
              onStored: requested,
              ...(settings.approvalTimeout !== undefined ? { timeout: settings.approvalTimeout } : {})
            })
        }))
        const bound = decision.approvalId === approvalId && decision.argsHash === argsHash
        const verdict: Verdict = bound && decision.decision === "approve"
          ? { approved: true }
          : {
            approved: false,
            ...(bound ? decision.reason !== undefined ? { reason: decision.reason } : {} : { reason: MISMATCH })
          }
        yield* journal.emit({
          _tag: "ApprovalDecided",
          approval_id: approvalId,
          status: verdict.approved ? "approved" : "denied",
          ...(!verdict.approved && verdict.reason !== undefined ? { reason: verdict.reason } : {}),
          ...id
        }, { key: `approval/${approvalId}/decided` })
        return verdict
      })

    const askBudget: ApprovalGate["askBudget"] = (wait) =>
      Effect.gen(function*() {
        const key = yield* runKey
        // the wait's id must not depend on the amounts: a restarted run (its spending rebuilt from the
        // stored usage) asks again under the same id; the amounts go out in the events
        const args = { budget_wait: wait.n }
        const argsHash = Approvals.hashArgs(args)
        const toolCallId = `budget_${wait.n}`
        const approvalId = Approvals.makeId({
          conversationId: options.conversationId,
          runKey: key,
          iteration: wait.n,
          toolCallId,
          argsHash
        })
        const status = { spent_usd: wait.spentUsd, limit_usd: wait.limitUsd }
        // announced once the wait is stored, so that an answer sent right away finds it (see `ask`)
        const exhausted = journal.emit({ _tag: "BudgetStatus", status: "exhausted", ...status }, {
          key: `budget/${wait.n}/exhausted`
        })
        const decision = yield* AgentRun.waitingForPerson(journal.activity({
          name: `budget/${wait.n}`,
          success: Approvals.Decision,
          execute: () =>
            approvals.request({
              approvalId,
              conversationId: options.approverConversationId,
              toolCallId,
              toolName: Budget.WAIT_TOOL,
              args,
              argsHash,
              iteration: wait.n,
              onStored: exhausted
            })
        }))
        // approve = extend by the USD in `reason`; anything else stops
        const add = decision.decision === "approve" ? Number(decision.reason) : NaN
        const extend = Number.isFinite(add) && add > 0 ? add : undefined
        yield* journal.emit({
          _tag: "BudgetStatus",
          status: extend !== undefined ? "extended" : "stopped",
          spent_usd: wait.spentUsd,
          // in USD to the 1e-8 (0.008 + 0.001 showed as 0.009000000000000001)
          limit_usd: extend !== undefined ? Math.round((wait.limitUsd + extend) * 1e8) / 1e8 : wait.limitUsd
        }, { key: `budget/${wait.n}/decided` })
        return extend !== undefined ? { extend } : { stop: true as const }
      })

    return { required, ask, askBudget }
  })
