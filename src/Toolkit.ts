/**
 * A registry of tools: insertion order kept, duplicate names rejected, filtering by
 * names. The `Toolkit` service provides the agent's tools.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { ToolDefinition } from "./Llm.js"
import type { Tool } from "./Tool.js"
import { toDefinition } from "./Tool.js"

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
 * Builds a toolkit; throws `DuplicateToolError` when two tools share a name.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (tools: Iterable<Tool>): ToolkitService => {
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
      return make(list.filter((t) => wanted.has(t.name)))
    },
    add: (...more) => make([...list, ...more]),
    definitions: () => (definitions ??= list.map(toDefinition))
  }
  return self
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const empty: ToolkitService = make([])

/**
 * The agent's tools.
 *
 * @since 0.1.0
 * @category Context
 */
export class Toolkit extends Context.Tag("effect-react-engine/Toolkit")<Toolkit, ToolkitService>() {}

/**
 * A toolkit of these tools; dies with `DuplicateToolError` when two share a name.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (tools: Iterable<Tool>): Layer.Layer<Toolkit> => Layer.sync(Toolkit, () => make(tools))

/**
 * No tools.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerEmpty: Layer.Layer<Toolkit> = Layer.succeed(Toolkit, empty)
