/**
 * The built-in tools: a safe `calculator` and `current_time`. Kept deliberately
 * small (≤ 6) so that a handful of MCP tools does not push the total
 * over the tool-selection threshold.
 *
 * @since 0.1.0
 */
import type * as Layer from "effect/Layer"
import type { Tool } from "./Tool.js"
import * as Toolkit from "./Toolkit.js"
import * as Calculator from "./tools/Calculator.js"
import * as CurrentTime from "./tools/CurrentTime.js"

/**
 * @since 0.1.0
 * @category tools
 */
export const calculator: Tool = Calculator.tool

/**
 * @since 0.1.0
 * @category tools
 */
export const currentTime: Tool = CurrentTime.tool

/**
 * Every built-in tool, in a stable order.
 *
 * @since 0.1.0
 * @category tools
 */
export const tools: ReadonlyArray<Tool> = [calculator, currentTime]

/**
 * `Tools` with only the built-ins (the app layer merges MCP tools in).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Toolkit.Toolkit> = Toolkit.layer(tools)
