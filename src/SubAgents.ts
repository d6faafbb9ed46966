/**
 * Sub-agents declared in a file (`REACT_SUBAGENTS_FILE`, SPEC §27): each entry
 * is a ReAct agent of its own — its system prompt, some of the app's tools, a
 * model of the registry — offered to the main agent as a tool (`asTool`), whose
 * calls run it as a child run of the calling run.
 *
 * ```json
 * [
 *   {
 *     "name": "researcher",
 *     "description": "Finds facts with the search tools and reports them with sources",
 *     "system_prompt": "You are a careful researcher. Cite where each fact comes from.",
 *     "tools": ["web_search", "fetch_url"],
 *     "model": "fast",
 *     "history": "summary"
 *   }
 * ]
 * ```
 *
 * - `name`: the tool's name (`^[a-zA-Z0-9_-]{1,64}$`, unique among the tools);
 *   `description`: what the main agent's model reads to decide when to
 *   delegate; `system_prompt`: the sub-agent's own instructions.
 * - `tools` (optional): names of the app's tools it may use (default: all of
 *   them; `[]`: none); another sub-agent is not one of them.
 * - `model` (optional): a model of the registry (`main`, `fast`, or a name
 *   `LLM_MODELS` declares; default `main`).
 * - `history` (optional): the hand-off, `none` (default), `summary` or
 *   `thread` (`AgentTool.Options.history`); `max_iterations` (optional).
 *
 * The file is read and checked when the server starts: an unreadable file, a
 * bad entry, an unknown tool or model is a start-up error naming the file and
 * the entry. The sub-agents share the app's hooks, context guard, interrupt
 * queues and approvals; the other `REACT_*` settings are the main agent's
 * (without its budget and guardrails: the calling run's budget pays for the
 * child, and the guardrails screen the user's input, not the model's).
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AgentConfig from "./AgentConfig.js"
import * as AgentTool from "./AgentTool.js"
import * as Approvals from "./Approvals.js"
import type * as ContextGuard from "./ContextGuard.js"
import type * as Hooks from "./Hooks.js"
import * as Interrupts from "./Interrupts.js"
import { Llm } from "./Llm.js"
import * as ModelRegistry from "./ModelRegistry.js"
import * as ReactAgent from "./ReactAgent.js"
import * as Recorder from "./Recorder.js"
import * as Replay from "./Replay.js"
import type { Tool } from "./Tool.js"
import * as Toolkit from "./Toolkit.js"

/**
 * The variable naming the file.
 *
 * @since 0.1.0
 * @category constants
 */
export const ENV = "REACT_SUBAGENTS_FILE"

const NonEmpty = Schema.String.pipe(Schema.filter((s) => s.trim() !== "", { message: () => "must not be empty" }))

/**
 * One sub-agent of the file.
 *
 * @since 0.1.0
 * @category models
 */
export const Entry = Schema.Struct({
  name: Schema.String.pipe(Schema.pattern(/^[a-zA-Z0-9_-]{1,64}$/, { message: () => "must be 1-64 of [a-zA-Z0-9_-]" })),
  description: NonEmpty,
  system_prompt: NonEmpty,
  tools: Schema.optional(Schema.Array(Schema.String)),
  model: Schema.optional(NonEmpty),
  history: Schema.optional(Schema.Literal("none", "summary", "thread")),
  max_iterations: Schema.optional(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)))
})
/**
 * @since 0.1.0
 * @category models
 */
export type Entry = typeof Entry.Type

/** What is wrong with the file, naming it (and the entry, when one is at fault). */
const invalid = (path: string, detail: string) => ConfigError.InvalidData([ENV], `${ENV} ${path}: ${detail}`)

const entryName = (raw: unknown): string => {
  const name = typeof raw === "object" && raw !== null ? (raw as { name?: unknown }).name : undefined
  return typeof name === "string" ? ` ("${name}")` : ""
}

/**
 * The entries of the file's text, or what is wrong with it (naming the file
 * and the entry: `REACT_SUBAGENTS_FILE agents.json: entry 2 ("writer"): …`).
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = (path: string, text: string): Either.Either<ReadonlyArray<Entry>, ConfigError.ConfigError> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    return Either.left(invalid(path, `not JSON: ${e instanceof Error ? e.message : String(e)}`))
  }
  if (!Array.isArray(json)) return Either.left(invalid(path, "expected a JSON array of sub-agents"))
  const entries: Array<Entry> = []
  const names = new Set<string>()
  for (const [i, raw] of json.entries()) {
    const where = `entry ${i + 1}${entryName(raw)}`
    const decoded = Schema.decodeUnknownEither(Entry, { onExcessProperty: "error" })(raw)
    if (Either.isLeft(decoded)) {
      return Either.left(
        invalid(
          path,
          `${where}: ${
            ParseResult.ArrayFormatter.formatErrorSync(decoded.left).map((issue) =>
              `${issue.path.length > 0 ? `${issue.path.join(".")}: ` : ""}${issue.message}`
            ).join("; ")
          }`
        )
      )
    }
    if (names.has(decoded.right.name)) return Either.left(invalid(path, `${where}: the name is used by another entry`))
    names.add(decoded.right.name)
    entries.push(decoded.right)
  }
  return Either.right(entries)
}

/**
 * Reads and checks the file.
 *
 * @since 0.1.0
 * @category decoding
 */
export const loadFile = (
  path: string
): Effect.Effect<ReadonlyArray<Entry>, ConfigError.ConfigError, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(path)).pipe(
    Effect.mapError((e) => invalid(path, `cannot read it: ${e.message}`)),
    Effect.flatMap((text) => Either.match(decode(path, text), { onLeft: Effect.fail, onRight: Effect.succeed }))
  )

/**
 * The sub-agents of `entries` as tools over the app's `tools` (each a ReAct
 * agent built with the services in context). An unknown tool or model fails,
 * naming the entry.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolsOf = (
  path: string,
  entries: ReadonlyArray<Entry>,
  tools: Toolkit.ToolkitService
): Effect.Effect<
  ReadonlyArray<Tool>,
  ConfigError.ConfigError,
  | ModelRegistry.ModelRegistry
  | Hooks.Hooks
  | ContextGuard.ContextGuard
  | Interrupts.Interrupts
  | Approvals.Approvals
  | FileSystem.FileSystem
> =>
  Effect.gen(function*() {
    const registry = yield* ModelRegistry.ModelRegistry
    // a fork's child takes the stored decisions of its calls that waited for a person
    const approvals = yield* Effect.provide(Approvals.Approvals, Replay.layerPrefixApprovals)
    const interrupts = yield* Interrupts.Interrupts
    // the main agent's settings, without what belongs to the calling run (its budget, its input's guardrails)
    const { budget: _budget, guardrails: _guardrails, ...settings } = yield* AgentConfig.load()
    return yield* Effect.forEach(entries, (entry, i) =>
      Effect.gen(function*() {
        const where = `entry ${i + 1} ("${entry.name}")`
        if (tools.has(entry.name)) {
          return yield* Effect.fail(invalid(path, `${where}: a tool is already named ${entry.name}`))
        }
        const unknown = (entry.tools ?? []).filter((name) => !tools.has(name))
        if (unknown.length > 0) {
          const known = tools.tools.map((t) => t.name).join(", ") || "(none)"
          return yield* Effect.fail(
            invalid(path, `${where}: unknown tool ${unknown.map((n) => `"${n}"`).join(", ")} (tools: ${known})`)
          )
        }
        const model = entry.model
        if (model !== undefined && model !== "main" && model !== "fast" && !registry.names.includes(model)) {
          return yield* Effect.fail(
            invalid(
              path,
              `${where}: unknown model "${model}" (models: ${["main", "fast", ...registry.names].join(", ")})`
            )
          )
        }
        // its model, tools and interrupt queue under the same wrappers as the main agent's: the run's
        // recording (its cassette) holds the child's steps, and a fork takes them from storage
        const own = Layer.mergeAll(
          Layer.succeed(Llm, registry.resolve(model)),
          Layer.succeed(Toolkit.Toolkit, entry.tools === undefined ? tools : tools.filter(entry.tools)),
          Layer.succeed(Interrupts.Interrupts, interrupts)
        )
        const agent = yield* ReactAgent.make({
          ...settings,
          systemPrompt: entry.system_prompt,
          ...(entry.max_iterations !== undefined ? { maxIterations: entry.max_iterations } : {}),
          approvals
        }).pipe(Effect.provide(Recorder.layer.pipe(Layer.provide(Replay.layerPrefix), Layer.provide(own))))
        return AgentTool.make(agent, {
          name: entry.name,
          description: entry.description,
          ...(entry.history !== undefined ? { history: entry.history } : {})
        })
      }))
  })

/**
 * The `Toolkit` in context plus the sub-agents of `REACT_SUBAGENTS_FILE` (the
 * same toolkit when the variable is unset).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<
  Toolkit.Toolkit,
  ConfigError.ConfigError,
  | Toolkit.Toolkit
  | ModelRegistry.ModelRegistry
  | Hooks.Hooks
  | ContextGuard.ContextGuard
  | Interrupts.Interrupts
  | Approvals.Approvals
  | FileSystem.FileSystem
> = Layer.effect(
  Toolkit.Toolkit,
  Effect.gen(function*() {
    const tools = yield* Toolkit.Toolkit
    const path = Option.map(yield* Config.option(Config.string(ENV)), (p) => p.trim())
    if (Option.isNone(path) || path.value === "") return tools
    const entries = yield* loadFile(path.value)
    const agents = yield* toolsOf(path.value, entries, tools)
    yield* Effect.logInfo(`sub-agents from ${path.value}: ${agents.map((t) => t.name).join(", ")}`)
    return tools.add(...agents)
  })
)
