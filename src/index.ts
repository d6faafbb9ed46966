/**
 * ReAct Engine — a ReAct agent engine for TypeScript, built on Effect.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Message from "./Message.js"
/** @since 0.1.0 */
export * as Attachments from "./Attachments.js"
/** @since 0.1.0 */
export * as Usage from "./Usage.js"
/** @since 0.1.0 */
export * as Llm from "./Llm.js"
/** @since 0.1.0 */
export * as ScriptedLlm from "./ScriptedLlm.js"
/** @since 0.1.0 */
export * as OpenAiLlm from "./OpenAiLlm.js"
/** @since 0.1.0 */
export * as LlmProviders from "./LlmProviders.js"
/** @since 0.1.0 */
export * as ModelRegistry from "./ModelRegistry.js"
/** @since 0.1.0 */
export * as Tool from "./Tool.js"
/** @since 0.1.0 */
export * as Toolkit from "./Toolkit.js"
/** @since 0.1.0 */
export * as JsonSchema from "./JsonSchema.js"
/** @since 0.1.0 */
export * as ExtractJson from "./ExtractJson.js"
/** @since 0.1.0 */
export * as StructuredCall from "./StructuredCall.js"
/** @since 0.1.0 */
export * as Output from "./Output.js"
/** @since 0.1.0 */
export * as RunEvent from "./RunEvent.js"
/** @since 0.1.0 */
export * as Hooks from "./Hooks.js"
/** @since 0.1.0 */
export * as HookBuiltins from "./HookBuiltins.js"
/** @since 0.1.0 */
export * as Interrupts from "./Interrupts.js"
/** @since 0.1.0 */
export * as Approvals from "./Approvals.js"
/** @since 0.1.0 */
export * as ContextGuard from "./ContextGuard.js"
/** @since 0.1.0 */
export * as TokenEstimator from "./TokenEstimator.js"
/** @since 0.1.0 */
export * as ToolSelection from "./ToolSelection.js"
/** @since 0.1.0 */
export * as ReactAgent from "./ReactAgent.js"
/** @since 0.1.0 */
export * as DagAgent from "./DagAgent.js"
/** @since 0.1.0 */
export * as AgentRun from "./AgentRun.js"
/** @since 0.1.0 */
export * as AgentTool from "./AgentTool.js"
/** @since 0.1.0 */
export * as AgentMcpServer from "./AgentMcpServer.js"
/** @since 0.1.0 */
export * as AgentConfig from "./AgentConfig.js"
/** @since 0.1.0 */
export * as AnswerSynthesis from "./AnswerSynthesis.js"
/** @since 0.1.0 */
export * as BuiltinTools from "./BuiltinTools.js"
/** @since 0.1.0 */
export * as McpTools from "./McpTools.js"
/** @since 0.1.0 */
export * as DemoLlm from "./DemoLlm.js"
/** @since 0.1.0 */
export * as Budget from "./Budget.js"
export * as Guardrail from "./Guardrail.js"
export * as Telemetry from "./Telemetry.js"
/** @since 0.1.0 */
export * as Cassette from "./Cassette.js"
/** @since 0.1.0 */
export * as Recorder from "./Recorder.js"
/** @since 0.1.0 */
export * as Replay from "./Replay.js"
/** @since 0.1.0 */
export * as Eval from "./Eval.js"
/** @since 0.1.0 */
export * as EvalReport from "./EvalReport.js"
/** @since 0.1.0 */
export * as EvalSuite from "./EvalSuite.js"
/** @since 0.1.0 */
export * as Memory from "./Memory.js"
/** @since 0.1.0 */
export * as Embedder from "./Embedder.js"
