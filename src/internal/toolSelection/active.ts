/**
 * The set of tools a run advertises after tool selection: selected + pinned tools
 * and the `request_tools` meta-tool that loads more by name.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ToolDefinition } from "../../Llm.js"
import type { Tool } from "../../Tool.js"
import * as ToolModule from "../../Tool.js"
import type { ToolkitService } from "../../Toolkit.js"
import type { ActiveToolSet } from "../../ToolSelection.js"

/** @internal */
export const REQUEST_TOOLS = "request_tools"

const RequestToolsParameters = Schema.Struct({
  names: Schema.Array(Schema.String).annotations({ description: "Exact names of the tools to load" })
})

/** Every tool, unchanged for the whole run; no meta-tool. @internal */
export const fullSet = (toolkit: ToolkitService): ActiveToolSet => ({
  advertised: () => toolkit.tools,
  definitions: () => toolkit.definitions(),
  version: () => 0,
  resolve: (name) => toolkit.get(name)
})

/** Compact: the names only (each loaded tool brings its full description). */
const describe = (unloaded: ReadonlyArray<Tool>): string =>
  "Load more tools by name when the tools you have are not enough for the task; " +
  `loaded tools can be called right after. Not loaded yet: ${unloaded.map((t) => t.name).join(", ")}.`

/** `names` given as one string ("a, b") is accepted too. */
const normaliseArgs = (args: unknown): unknown => {
  if (args !== null && typeof args === "object" && !Array.isArray(args)) {
    const names = (args as { names?: unknown }).names
    if (typeof names === "string") return { ...args, names: names.split(/[\s,]+/).filter((n) => n !== "") }
  }
  return args
}

interface Snapshot {
  readonly version: number
  readonly advertised: ReadonlyArray<Tool>
  readonly meta: Tool | undefined
  definitions: ReadonlyArray<ToolDefinition> | undefined
}

/** @internal */
export const make = (toolkit: ToolkitService, selected: ReadonlyArray<string> | null): ActiveToolSet => {
  if (selected === null) return fullSet(toolkit)
  const loaded = new Set<string>()
  for (const t of toolkit.tools) if (t.pinned) loaded.add(t.name)
  for (const name of selected) if (toolkit.has(name)) loaded.add(name)
  let version = 0
  let snapshot: Snapshot | undefined
  // a registered tool named request_tools wins: no meta-tool then (unselected tools still resolve)
  const offersMeta = !toolkit.has(REQUEST_TOOLS)
  let lowerCase: Map<string, Tool> | undefined
  const lookup = (raw: string): Tool | undefined => {
    const name = raw.trim()
    const exact = toolkit.get(name)
    if (exact !== undefined) return exact
    lowerCase ??= new Map(toolkit.tools.map((t) => [t.name.toLowerCase(), t]))
    return lowerCase.get(name.toLowerCase())
  }

  const requestTools = (names: ReadonlyArray<string>): string => {
    const added: Array<string> = []
    const already: Array<string> = []
    const unknown: Array<string> = []
    for (const raw of names) {
      if (raw.trim() === REQUEST_TOOLS) continue
      const tool = lookup(raw)
      if (tool === undefined) {
        if (!unknown.includes(raw.trim())) unknown.push(raw.trim())
      } else if (loaded.has(tool.name)) {
        if (!already.includes(tool.name) && !added.includes(tool.name)) already.push(tool.name)
      } else {
        loaded.add(tool.name)
        added.push(tool.name)
      }
    }
    if (added.length > 0) version++
    const parts: Array<string> = []
    if (added.length > 0) parts.push(`Loaded: ${added.join(", ")}. You can call them now.`)
    if (already.length > 0) parts.push(`Already available: ${already.join(", ")}.`)
    if (unknown.length > 0) parts.push(`Unknown (not registered): ${unknown.join(", ")}.`)
    return parts.length > 0 ? parts.join(" ") : "No tool names given."
  }

  const base = ToolModule.make({
    name: REQUEST_TOOLS,
    description: "Load more tools by name.",
    parameters: RequestToolsParameters,
    handler: ({ names }) => Effect.sync(() => requestTools(names))
  })
  const metaBase: Tool = { ...base, decode: (args) => base.decode(normaliseArgs(args)) }

  const current = (): Snapshot => {
    if (snapshot !== undefined && snapshot.version === version) return snapshot
    const advertised = toolkit.tools.filter((t) => loaded.has(t.name))
    const unloaded = toolkit.tools.filter((t) => !loaded.has(t.name))
    let meta: Tool | undefined
    if (offersMeta && unloaded.length > 0) {
      meta = { ...metaBase, description: describe(unloaded) }
      advertised.push(meta)
    }
    snapshot = { version, advertised, meta, definitions: undefined }
    return snapshot
  }

  return {
    advertised: () => current().advertised,
    definitions: () => {
      const s = current()
      return (s.definitions ??= s.advertised.map(ToolModule.toDefinition))
    },
    version: () => version,
    resolve: (name) => {
      if (loaded.has(name)) return toolkit.get(name)
      if (name === REQUEST_TOOLS && offersMeta) return current().meta ?? metaBase
      const tool = toolkit.get(name)
      if (tool === undefined) return undefined
      loaded.add(name)
      version++
      return tool
    }
  }
}
