/**
 * The A2A server's agent executor and task store (SPEC §27), for the SDK's
 * `DefaultRequestHandler`: a task is a durable run of the server.
 *
 * - `execute` starts the run in the conversation `contextId` (a follow-up
 *   message continues it), records the task's run, publishes the task and
 *   follows the run's events (`RunRegistry.events`, holding a client lease)
 *   through the encoder (`a2aEncoder.ts`) until its `done`. A message whose
 *   metadata carries an `idempotency_key` already seen follows the run of the
 *   first task sent with it instead of starting another (a caller retrying
 *   after its own crash does not run the work twice).
 * - `cancelTask` cancels the task's run; its `done` ends the task `canceled`.
 * - The task store keeps the task as the SDK writes it (`A2aTasks`). A task
 *   whose run ended while no executor followed it (the server was killed and
 *   the run resumed after the restart) is brought up to date from the run log
 *   when it is read: `GetTask` after the restart shows it finished. A task the
 *   SDK marks canceled itself (no executor follows it) cancels its run.
 *
 * @internal
 */
import type { ListTasksRequest, ListTasksResponse, Task as TaskType } from "@a2a-js/sdk"
import { Task, TaskState, taskStateToJSON } from "@a2a-js/sdk"
import type {
  AgentExecutionEvent,
  AgentExecutor,
  ExecutionEventBus,
  RequestContext,
  TaskStore
} from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { A2aStoreError, A2aTasksService, StoredTask } from "../A2aTasks.js"
import { FINAL_STATES } from "../A2aTasks.js"
import type { RunLogError, RunLogService } from "../RunLog.js"
import type { RunRegistryService } from "../RunRegistry.js"
import * as Encoder from "./a2aEncoder.js"
import { isItem } from "./runFeed.js"

/** What the executor and the store work with. */
export interface Deps {
  readonly registry: RunRegistryService
  readonly tasks: A2aTasksService
  readonly log: RunLogService
  /** Runs an effect from the SDK's promise world (the server's runtime). */
  readonly run: <A>(effect: Effect.Effect<A>) => Promise<A>
}

/** The metadata key of a message's idempotency key (what `A2A.remoteAgent` sends). */
export const IDEMPOTENCY_KEY = "idempotency_key"

const logged = <A>(what: string, fallback: A) => <E>(effect: Effect.Effect<A, E>): Effect.Effect<A> =>
  Effect.catchAll(
    effect,
    (error) =>
      Effect.as(
        Effect.logWarning(`A2A: ${what}: ${String((error as { message?: unknown }).message ?? error)}`),
        fallback
      )
  )

/**
 * Follows the task's run to its `done`, publishing its events as the task's (the
 * stream ends early only when the server stops: the task stays open and the next
 * start follows it again, `resumeOpenTasks`).
 */
const follow = (
  deps: Deps,
  runId: string,
  taskId: string,
  contextId: string,
  publish: (e: AgentExecutionEvent) => void
) =>
  Effect.scoped(Effect.gen(function*() {
    const events = yield* deps.registry.events({ runId }, 0)
    const encoder = Encoder.make(taskId, contextId)
    yield* Stream.runForEach(Stream.filter(events, isItem), ({ event }) =>
      Effect.sync(() => {
        const out = event._tag === "Done"
          ? encoder.end({ answer: event.answer, cancelled: event.cancelled === true })
          : encoder.push(event)
        for (const e of out) publish(e)
      }))
  }))

const failed = (taskId: string, contextId: string, message: string): ReadonlyArray<AgentExecutionEvent> =>
  Encoder.finalEvents(taskId, contextId, { answer: "", cancelled: false, failure: message })

/** The agent executor (see the module comment). */
export const makeExecutor = (deps: Deps): AgentExecutor => ({
  execute: (context: RequestContext, bus: ExecutionEventBus) =>
    deps.run(Effect.gen(function*() {
      const { contextId, taskId } = context
      const user = context.userMessage
      const publish = (event: AgentExecutionEvent) => bus.publish(event)
      const query = Encoder.textOf(user)
      const rawKey = user.metadata?.[IDEMPOTENCY_KEY]
      const key = typeof rawKey === "string" && rawKey !== "" ? rawKey : undefined
      const task = Encoder.submitted(taskId, contextId, user)
      const begin = (runId: string | undefined) =>
        Effect.zipRight(
          runId === undefined ? Effect.void : logged<void>("recording the task", undefined)(deps.tasks.link({
            taskId,
            contextId,
            runId,
            idempotencyKey: key,
            state: taskStateToJSON(TaskState.TASK_STATE_SUBMITTED),
            task: Task.toJSON(task)
          })),
          Effect.sync(() => publish({ kind: "task", data: task }))
        )
      if (query.trim() === "") {
        yield* begin(undefined)
        for (const e of failed(taskId, contextId, "The message has no text")) publish(e)
        return
      }
      // the same work sent again (a caller's retry): the first task's run, not a second one
      const earlier = key === undefined ?
        Option.none<StoredTask>() :
        yield* logged("reading the key", Option.none<StoredTask>())(
          deps.tasks.byKey(key)
        )
      const conversationId = Option.isSome(earlier) ? earlier.value.contextId : contextId
      let runId = Option.isSome(earlier) ? earlier.value.runId : undefined
      if (runId === undefined) {
        const started = yield* Effect.either(deps.registry.start({ query, conversationId }))
        if (started._tag === "Left") {
          yield* begin(undefined)
          const why = started.left._tag === "RunInProgress"
            ? `The conversation ${conversationId} has a run in progress; send the message when it is done`
            : "The server is at capacity; try again shortly"
          for (const e of failed(taskId, contextId, why)) publish(e)
          return
        }
        runId = started.right.runId
      }
      yield* begin(runId)
      yield* follow(deps, runId, taskId, contextId, publish).pipe(logged<void>("following the run", undefined))
    })),
  cancelTask: (taskId: string) =>
    deps.run(
      Effect.gen(function*() {
        const stored = yield* deps.tasks.load(taskId)
        if (Option.isNone(stored) || stored.value.runId === undefined) return
        yield* cancelRun(deps, stored.value)
      }).pipe(logged<void>("cancelling", undefined))
    )
})

/**
 * The conversation of the task's run while that run is its conversation's
 * active one (read from the run: a task sent again with a key already seen has
 * a context id of its own, its run lives in the first task's conversation).
 */
const activeConversation = (deps: Deps, runId: string | undefined) =>
  Effect.gen(function*() {
    const row = runId === undefined ? Option.none() : yield* deps.log.run(runId)
    if (Option.isNone(row)) return Option.none<string>()
    const active = yield* deps.log.active(row.value.conversationId)
    return Option.isSome(active) && active.value === runId
      ? Option.some(row.value.conversationId)
      : Option.none<string>()
  })

/** Cancels the task's run if it is still its conversation's active run. */
const cancelRun = (deps: Deps, stored: StoredTask) =>
  Effect.flatMap(
    activeConversation(deps, stored.runId),
    Option.match({
      onNone: () => Effect.void,
      onSome: (conversationId) => Effect.asVoid(deps.registry.cancel(conversationId))
    })
  )

/** How the run of a task ended, read from the run log; none while it runs (or when it is gone). */
const endingOf = (deps: Deps, runId: string) =>
  Effect.gen(function*() {
    const row = yield* deps.log.run(runId)
    if (Option.isNone(row) || row.value.status !== "done") return Option.none<Encoder.Ending>()
    const events = yield* deps.log.eventsAfter(runId, 0)
    const done = events.find((e) => e.event._tag === "Done")?.event
    if (done === undefined || done._tag !== "Done") return Option.none<Encoder.Ending>()
    // a child's RunFailed is never forwarded: the one in the log is the run's own
    const error = events.find((e) => e.event._tag === "RunFailed")?.event
    return Option.some<Encoder.Ending>({
      answer: done.answer,
      cancelled: done.cancelled === true,
      failure: error === undefined || error._tag !== "RunFailed" ? undefined : error.message
    })
  })

/** The stored task, brought up to date when its run ended while nobody followed it. */
export const current = (deps: Deps, stored: StoredTask): Effect.Effect<TaskType, A2aStoreError | RunLogError> =>
  Effect.gen(function*() {
    const task = Task.fromJSON(stored.task)
    if (FINAL_STATES.includes(stored.state) || stored.runId === undefined) return task
    const ending = yield* endingOf(deps, stored.runId)
    if (Option.isNone(ending)) return task
    const updated = applyEnding(task, Encoder.finalEvents(task.id, task.contextId, ending.value))
    yield* deps.tasks.save(
      task.id,
      task.contextId,
      taskStateToJSON(updated.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED),
      Task.toJSON(updated)
    )
    return updated
  })

/** The task after its final events (the answer artifact replaced, the final status). */
const applyEnding = (task: TaskType, events: ReadonlyArray<AgentExecutionEvent>): TaskType =>
  events.reduce((t, e) => {
    if (e.kind === "statusUpdate") return { ...t, status: e.data.status }
    if (e.kind === "artifactUpdate" && e.data.artifact !== undefined) {
      const artifact = e.data.artifact
      return { ...t, artifacts: [...t.artifacts.filter((a) => a.artifactId !== artifact.artifactId), artifact] }
    }
    return t
  }, task)

/** The SDK's task store over `A2aTasks` (see the module comment). */
export const makeTaskStore = (deps: Deps): TaskStore => ({
  save: (task) =>
    deps.run(
      Effect.gen(function*() {
        const state = taskStateToJSON(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)
        yield* deps.tasks.save(task.id, task.contextId, state, Task.toJSON(task))
        if (task.status?.state !== TaskState.TASK_STATE_CANCELED) return
        const stored = yield* deps.tasks.load(task.id)
        if (Option.isSome(stored) && stored.value.runId !== undefined) yield* cancelRun(deps, stored.value)
      }).pipe(Effect.orDie)
    ),
  load: (taskId) =>
    deps.run(
      Effect.gen(function*() {
        const stored = yield* deps.tasks.load(taskId)
        return Option.isNone(stored) ? undefined : yield* current(deps, stored.value)
      }).pipe(Effect.orDie)
    ),
  list: (params: ListTasksRequest) =>
    deps.run(
      Effect.gen(function*() {
        const size = params.pageSize ?? 50
        const offset = Number.parseInt(params.pageToken || "0", 10) || 0
        const page = yield* deps.tasks.list({
          ...(params.contextId !== "" ? { contextId: params.contextId } : {}),
          limit: size,
          offset
        })
        const tasks = yield* Effect.forEach(page.tasks, (t) => current(deps, t))
        const next = offset + tasks.length
        const response: ListTasksResponse = {
          tasks,
          nextPageToken: next < page.total ? String(next) : "",
          pageSize: size,
          totalSize: page.total
        }
        return response
      }).pipe(Effect.orDie)
    )
})

/**
 * Follows, until their run ends, the tasks a previous process left open (it was
 * killed while their runs went on): their runs resumed by themselves, and this
 * follower holds their client lease (a run nobody holds is cancelled after the
 * detach grace) and brings each task up to date when its run ends.
 */
export const resumeOpenTasks = (deps: Deps) =>
  Effect.gen(function*() {
    const open = yield* deps.tasks.open
    yield* Effect.forEach(open, (stored) =>
      Effect.gen(function*() {
        const runId = stored.runId
        if (runId !== undefined && Option.isSome(yield* activeConversation(deps, runId))) {
          yield* Effect.scoped(Effect.flatMap(deps.registry.events({ runId }, 0), Stream.runDrain))
        }
        yield* current(deps, stored)
      }).pipe(logged<void>(`following task ${stored.taskId}`, undefined)), { concurrency: "unbounded", discard: true })
  }).pipe(logged<void>("reading the open tasks", undefined))
