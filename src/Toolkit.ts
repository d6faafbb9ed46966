/**
 * A registry of tools: insertion order kept, duplicate names rejected, filtering by
 * names. The `Toolkit` service provides the agent's tools.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { ToolDefinition } from "./Llm.js"
import type { Tool } from "./Tool.js"
import { provide, toDefinition } from "./Tool.js"

/**
 * @since 0.1.0
 * @category errors
 */
export class DuplicateToolError extends Schema.TaggedError<DuplicateToolError>()("DuplicateToolError", {
  name: Schema.String
}) {
  override get message(): string {
    return `A tool named "${this.name}" is already registered`
  }
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ToolkitService {
  readonly tools: ReadonlyArray<Tool>
  readonly size: number
  readonly get: (name: string) => Tool | undefined
  readonly has: (name: string) => boolean
  /** The tools with these names, in registration order (unknown names ignored). */
  readonly filter: (names: Iterable<string>) => ToolkitService
  /** A toolkit with more tools; throws `DuplicateToolError` on a clash. */
  readonly add: (...tools: ReadonlyArray<Tool>) => ToolkitService
  /** OpenAI tool definitions (memoized). */
  readonly definitions: () => ReadonlyArray<ToolDefinition>
}

/**
 * Builds a toolkit at once; throws `DuplicateToolError` when two tools share a name.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (tools: Iterable<Tool>): ToolkitService => {
  const list: Array<Tool> = []
  const byName = new Map<string, Tool>()
  for (const tool of tools) {
    if (byName.has(tool.name)) throw new DuplicateToolError({ name: tool.name })
    byName.set(tool.name, tool)
    list.push(tool)
  }
  let definitions: ReadonlyArray<ToolDefinition> | undefined
  const self: ToolkitService = {
    tools: list,
    size: list.length,
    get: (name) => byName.get(name),
    has: (name) => byName.has(name),
    filter: (names) => {
      const wanted = new Set(names)
      return makeUnsafe(list.filter((t) => wanted.has(t.name)))
    },
    add: (...more) => makeUnsafe([...list, ...more]),
    definitions: () => (definitions ??= list.map(toDefinition))
  }
  return self
}

/**
 * Builds a toolkit; fails with `DuplicateToolError` when two tools share a name.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (tools: Iterable<Tool>): Effect.Effect<ToolkitService, DuplicateToolError> =>
  Effect.try({ try: () => makeUnsafe(tools), catch: (e) => e as DuplicateToolError })

/**
 * @since 0.1.0
 * @category constructors
 */
export const empty: ToolkitService = makeUnsafe([])

/**
 * The agent's tools.
 *
 * @since 0.1.0
 * @category Context
 */
export class Toolkit extends Context.Tag("effect-react-engine/Toolkit")<Toolkit, ToolkitService>() {}

/**
 * A toolkit of these tools; dies with `DuplicateToolError` when two share a name.
 * The services the handlers need (`R`) are the layer's requirements: they are
 * taken from the context the layer is built in, so a handler the agent runs
 * needs nothing more (as `@effect/ai`'s `Toolkit.toLayer`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <R = never>(tools: Iterable<Tool<R>>): Layer.Layer<Toolkit, never, R> =>
  Layer.effect(
    Toolkit,
    Effect.map(Effect.context<R>(), (context) => makeUnsafe(Array.from(tools, (tool) => provide(tool, context))))
  )

/**
 * No tools.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNoop: Layer.Layer<Toolkit> = Layer.succeed(Toolkit, empty)
