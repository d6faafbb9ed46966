/**
 * Memory in a run (docs/memory.md), for a run with a user id on an agent built with
 * a `Memory`: the stored `memory` step at its start (working memory and
 * recall, into the system prompt), `update_memory` added to its tools and run
 * as the user's, `MemoryUpdated` after each update that succeeded, and the
 * stored `memory/index` step once it answered. A run without a user id, or an
 * agent without memory, gets none of it: nothing is read or written.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Memory from "../../Memory.js"
import type { MemoryService, Recalled } from "../../Memory.js"
import * as Message from "../../Message.js"
import type { RunInput } from "../../ReactAgent.js"
import type { RunEvent } from "../../RunEvent.js"
import type { EmitOptions, RunJournal } from "../../RunJournal.js"
import * as Toolkit from "../../Toolkit.js"
import * as Usage from "../../Usage.js"
import type { AgentServices } from "./run.js"

/** The memory of one run. */
export interface RunMemory {
  /** The journal with `MemoryUpdated` after each `update_memory` call that succeeded. */
  readonly observe: (journal: RunJournal) => RunJournal
  /**
   * The `memory` step and its events; `run` runs the rest of the run on the
   * services it gives (the tool added, the memory in the system prompt) as the
   * user's.
   */
  readonly begin: <A, E, R>(
    services: AgentServices,
    journal: RunJournal,
    run: (services: AgentServices) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  /** Indexes the run's turn (the `memory/index` step) once it answered `answer`. */
  readonly finish: (journal: RunJournal, answer: string) => Effect.Effect<void>
  /** The embedding usage of the run's memory steps (none when nothing was embedded). */
  readonly usage: () => Usage.Usage | undefined
}

const keysOf = (args: unknown): ReadonlyArray<string> => {
  if (typeof args !== "object" || args === null) return []
  const { remove, set } = args as { readonly set?: unknown; readonly remove?: unknown }
  const setKeys = typeof set === "object" && set !== null ? Object.keys(set) : []
  const removed = Array.isArray(remove) ? remove.filter((k): k is string => typeof k === "string") : []
  return [...new Set([...setKeys, ...removed])]
}

/** A run without a user: `update_memory` (which a toolkit may hold) is not its tool; nothing else changes. */
const nobody: RunMemory = {
  observe: (journal) => journal,
  begin: (services, _journal, run) => {
    const { toolkit } = services
    if (!toolkit.tools.some((t) => t.name === Memory.UPDATE_TOOL)) return run(services)
    return run({ ...services, toolkit: Toolkit.makeUnsafe(toolkit.tools.filter((t) => t.name !== Memory.UPDATE_TOOL)) })
  },
  finish: () => Effect.void,
  usage: () => undefined
}

/** The run's memory, or undefined when the agent has none. */
export const makeUnsafe = (
  memory: MemoryService | undefined,
  input: RunInput,
  conversationId: string
): RunMemory | undefined => {
  const userId = input.userId
  if (memory === undefined) return undefined
  if (userId === undefined) return nobody
  const query = Message.textOf(input.query)
  let recalled: Recalled | undefined
  let usage: Usage.Usage | undefined
  const spent = (more: Usage.Usage | undefined) => {
    if (more !== undefined) usage = usage === undefined ? more : Usage.add(usage, more)
  }
  return {
    observe: (journal) => {
      // the arguments of each update_memory call of the run's own (its ToolDone says which succeeded)
      const started = new Map<string, unknown>()
      const callKey = (e: { readonly iteration: number; readonly tool_call_id?: string | undefined }) =>
        `${e.iteration}/${e.tool_call_id ?? ""}`
      const after = (event: RunEvent, options: EmitOptions | undefined): Effect.Effect<void> => {
        if (event._tag !== "ToolStart" && event._tag !== "ToolDone") return Effect.void
        if (event.tool_name !== Memory.UPDATE_TOOL || event.agent !== undefined || event.step_id !== undefined) {
          return Effect.void
        }
        if (event._tag === "ToolStart") {
          started.set(callKey(event), event.tool_args)
          return Effect.void
        }
        const args = event.tool_args ?? started.get(callKey(event))
        started.delete(callKey(event))
        if (event.error !== null) return Effect.void
        const updated: RunEvent = { _tag: "MemoryUpdated", keys: keysOf(args) }
        return journal.emit(updated, options?.key === undefined ? undefined : { key: `${options.key}/memory` })
      }
      return {
        ...journal,
        emit: (event, options) => Effect.zipRight(journal.emit(event, options), after(event, options))
      }
    },
    begin: (services, journal, run) =>
      Effect.gen(function*() {
        const result = yield* journal.activity({
          name: "memory",
          success: Memory.Recalled,
          execute: () => memory.recall({ userId, conversationId, query })
        })
        recalled = result
        spent(result.usage)
        if (memory.settings.recall && result.unavailable === undefined) {
          yield* journal.emit({
            _tag: "MemoryRecalled",
            items: result.items.map((item) => ({ conversation_id: item.conversation_id, score: item.score }))
          })
        }
        if (result.unavailable !== undefined) {
          yield* journal.emit({ _tag: "MemoryUnavailable", reason: result.unavailable })
        }
        const { options, toolkit } = services
        // a tool of the toolkit named update_memory wins (the name is the memory's: see docs/memory.md)
        const tools = toolkit.tools.some((t) => t.name === Memory.UPDATE_TOOL)
          ? toolkit
          : Toolkit.makeUnsafe([...toolkit.tools, memory.tool])
        const prompt = Memory.promptOf(result)
        const systemPrompt = options.systemPrompt === undefined || options.systemPrompt === ""
          ? prompt
          : `${options.systemPrompt}\n\n${prompt}`
        return yield* run({ ...services, toolkit: tools, options: { ...options, systemPrompt } }).pipe(
          Effect.locally(Memory.currentUser, Option.some({ userId, epoch: result.epoch }))
        )
      }),
    finish: (journal, answer) =>
      Effect.gen(function*() {
        if (recalled === undefined || answer.trim() === "") return
        const epoch = recalled.epoch
        const indexed = yield* journal.activity({
          name: "memory/index",
          success: Memory.Indexed,
          execute: () =>
            memory.index({
              userId,
              conversationId,
              runId: journal.runId ?? `run_${crypto.randomUUID()}`,
              query,
              answer,
              epoch
            })
        })
        spent(indexed.usage)
        if (indexed.unavailable !== undefined) {
          yield* journal.emit({ _tag: "MemoryUnavailable", reason: indexed.unavailable })
        }
      }),
    usage: () => usage
  }
}
