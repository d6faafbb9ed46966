/**
 * What the server runs on: the main model's name, whether it is the offline
 * demo model (reported by `/health` and the start-up log) and where its tools
 * come from (`/api/tools`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type { ToolkitService } from "../Toolkit.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface AppInfoShape {
  /** The main model's name. */
  readonly model: string
  /** True on the built-in offline demo model (no LLM configured). */
  readonly demo: boolean
  /**
   * The MCP servers behind the tools (`GET /api/tools` names each tool's source
   * and lists the servers that failed); absent: every tool is built in.
   */
  readonly mcp?: {
    readonly servers: ReadonlyArray<{ readonly name: string; readonly tools: ReadonlyArray<string> }>
    readonly failed: ReadonlyArray<{ readonly name: string; readonly error: string }>
  }
}

/**
 * @since 0.1.0
 * @category Context
 */
export class AppInfo extends Context.Tag("effect-react-engine/AppInfo")<AppInfo, AppInfoShape>() {}

/**
 * @since 0.1.0
 * @category layers
 */
export const layer = (info: AppInfoShape): Layer.Layer<AppInfo> => Layer.succeed(AppInfo, info)

/**
 * One tool as `GET /api/tools` lists it: `source` is `"builtin"` or
 * `"mcp:<server>"`.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolEntry {
  readonly name: string
  readonly description: string
  readonly source: string
}

/**
 * The body of `GET /api/tools` (and of `npm run ask -- --tools --json`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolCatalogue {
  readonly tools: ReadonlyArray<ToolEntry>
  readonly failed_servers: ReadonlyArray<{ readonly name: string; readonly error: string }>
}

/**
 * Every tool of the toolkit with its source, and the MCP servers that did not start.
 *
 * @since 0.1.0
 * @category utils
 */
export const toolCatalogue = (info: AppInfoShape, toolkit: ToolkitService): ToolCatalogue => {
  const sources = new Map(info.mcp?.servers.flatMap((s) => s.tools.map((t) => [t, `mcp:${s.name}`] as const)) ?? [])
  return {
    tools: toolkit.tools.map((t) => ({
      name: t.name,
      description: t.description,
      source: sources.get(t.name) ?? "builtin"
    })),
    failed_servers: info.mcp?.failed ?? []
  }
}
