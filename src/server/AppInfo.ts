/**
 * What the server runs on: the main model's name, whether it is the offline
 * demo model (reported by `/health` and the start-up log) and where its tools
 * come from (`/api/tools`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"

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
export class AppInfo extends Context.Tag("react-engine/AppInfo")<AppInfo, AppInfoShape>() {}

/**
 * @since 0.1.0
 * @category layers
 */
export const layer = (info: AppInfoShape): Layer.Layer<AppInfo> => Layer.succeed(AppInfo, info)
