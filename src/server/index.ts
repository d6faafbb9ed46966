/**
 * The bundled HTTP server as a library: routes an Effect application can mount in
 * its own `HttpLayerRouter`, the run registry, durable runs (the workflow, the
 * run log, the database, SQL-backed interrupts and approvals), the conversation
 * store and the SSE protocol. Import it as `effect-react-engine/server`.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as AgentServices from "./AgentServices.js"
/** @since 0.1.0 */
export * as ApiError from "./ApiError.js"
/** @since 0.1.0 */
export * as ApiSchema from "./ApiSchema.js"
/** @since 0.1.0 */
export * as AppInfo from "./AppInfo.js"
/** @since 0.1.0 */
export * as BrowserSafety from "./BrowserSafety.js"
/** @since 0.1.0 */
export * as ChatRoutes from "./ChatRoutes.js"
/** @since 0.1.0 */
export * as ConversationBudget from "./ConversationBudget.js"
/** @since 0.1.0 */
export * as ConversationStore from "./ConversationStore.js"
/** @since 0.1.0 */
export * as Database from "./Database.js"
/** @since 0.1.0 */
export * as DurableRuns from "./DurableRuns.js"
/** @since 0.1.0 */
export * as McpRoutes from "./McpRoutes.js"
/** @since 0.1.0 */
export * as OpenAiRoutes from "./OpenAiRoutes.js"
/** @since 0.1.0 */
export * as RequestLog from "./RequestLog.js"
/** @since 0.1.0 */
export * as Routes from "./Routes.js"
/** @since 0.1.0 */
export * as RunLog from "./RunLog.js"
/** @since 0.1.0 */
export * as RunRegistry from "./RunRegistry.js"
/** @since 0.1.0 */
export * as Server from "./Server.js"
/** @since 0.1.0 */
export * as RunTrace from "./RunTrace.js"
/** @since 0.1.0 */
export * as CassetteRoutes from "./CassetteRoutes.js"
export * as ForkRoutes from "./ForkRoutes.js"
/** @since 0.1.0 */
export * as ServerConfig from "./ServerConfig.js"
/** @since 0.1.0 */
export * as ServerScheduler from "./ServerScheduler.js"
/** @since 0.1.0 */
export * as SqlApprovals from "./SqlApprovals.js"
/** @since 0.1.0 */
export * as SqlAttachments from "./SqlAttachments.js"
/** @since 0.1.0 */
export * as AttachmentRoutes from "./AttachmentRoutes.js"
/** @since 0.1.0 */
export * as SqlInterrupts from "./SqlInterrupts.js"
/** @since 0.1.0 */
export * as EventWire from "./EventWire.js"
/** @since 0.1.0 */
export * as Sse from "./Sse.js"
/** @since 0.1.0 */
export * as UiMessageStream from "./UiMessageStream.js"
/** @since 0.1.0 */
export * as WebPage from "./WebPage.js"
/** @since 0.1.0 */
export * as SqlMemory from "./SqlMemory.js"
/** @since 0.1.0 */
export * as MemoryRoutes from "./MemoryRoutes.js"
