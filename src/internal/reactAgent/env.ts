/**
 * What one run of the ReAct loop works with: the services the agent was built
 * with, the run's settings and its journal (see `RunJournal`).
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import type { AgentOptions } from "../../AgentConfig.js"
import type { Account } from "../../Budget.js"
import type { ContextGuardService } from "../../ContextGuard.js"
import type { HooksService } from "../../Hooks.js"
import type { InterruptsService } from "../../Interrupts.js"
import type { LlmService } from "../../Llm.js"
import type { ChatMessage } from "../../Message.js"
import type { RunJournal } from "../../RunJournal.js"
import type { ActiveToolSet } from "../../ToolSelection.js"
import type { ApprovalGate } from "./approval.js"
import type { RunState } from "./state.js"

/** Services and settings of one run. */
export interface LoopEnv {
  readonly llm: LlmService
  readonly hooks: HooksService
  readonly guard: ContextGuardService
  readonly interrupts: InterruptsService
  readonly options: AgentOptions
  readonly maxIterations: number
  readonly tools: ActiveToolSet
  readonly conversationId: string
  /** The conversation whose user answers this run's approvals (`RunInput.approvalConversationId`, else its own). */
  readonly approverConversationId: string
  /** The query as text (quoted by self-reflection). */
  readonly goal: string
  readonly native: boolean
  readonly journal: RunJournal
  /** Which calls a person approves, and asking them. */
  readonly approval: ApprovalGate
  /** The run's budget account (none without a budget or prices). */
  readonly account: Account | undefined
  /** The key under which this run holds room for its answer in the ledger. */
  readonly holdKey: string
  /** Builds the synthesis prompt of the run as it stands (what the answer call would read). */
  readonly answerMessages: (state: RunState) => ReadonlyArray<ChatMessage>
  /** Checks an injected message against the input guardrails (a trip ends the run: it never returns). */
  readonly screen: (text: string) => Effect.Effect<void>
  /** The run's messages so far (its trace): what a sub-agent's history hand-off reads. */
  readonly thread: Effect.Effect<ReadonlyArray<ChatMessage>>
}
