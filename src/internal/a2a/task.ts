/**
 * One call of a remote agent, once its message is built (A2A.ts builds it and
 * makes the tool): the message sent on the SDK's stream, the task followed
 * through its events (status messages as the call's progress), `GetTask` polled
 * when the stream breaks or ends before the task is over, and the call's
 * outcome read from where the task got to.
 *
 * @internal
 */
import type { Message, Task } from "@a2a-js/sdk"
import { TaskState } from "@a2a-js/sdk"
import type { Client } from "@a2a-js/sdk/client"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Tool from "../../Tool.js"

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const textOfParts = (parts: Message["parts"]): string =>
  parts.flatMap((
    p
  ) => (p.content?.$case === "text"
    ? [p.content.value]
    : p.content?.$case === "data"
    ? [JSON.stringify(p.content.value)]
    : [])
  )
    .join("")

const FINAL = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED
])
const STOPPED = new Set([TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED])

/** Where a call got to: the task (id, state, artifacts so far) or a direct reply. */
interface Progress {
  taskId?: string
  state?: TaskState
  statusText?: string
  artifacts: Map<string, string>
  reply?: string
}

/** The call's outcome once the task is over (or stopped). */
const outcome = (name: string, p: Progress): Effect.Effect<string, Tool.ToolError> => {
  if (p.reply !== undefined) return Effect.succeed(p.reply)
  const answer = [...p.artifacts.values()].join("\n\n")
  const why = p.statusText !== undefined && p.statusText !== "" ? `: ${p.statusText}` : ""
  switch (p.state) {
    case TaskState.TASK_STATE_COMPLETED:
      return Effect.succeed(answer !== "" ? answer : p.statusText ?? "")
    case TaskState.TASK_STATE_FAILED:
      return Effect.fail(new Tool.ToolError({ message: `Remote agent ${name} failed${why}` }))
    case TaskState.TASK_STATE_CANCELED:
      return Effect.fail(new Tool.ToolError({ message: `Remote agent ${name}: the task was canceled${why}` }))
    case TaskState.TASK_STATE_REJECTED:
      return Effect.fail(new Tool.ToolError({ message: `Remote agent ${name} rejected the task${why}` }))
    case TaskState.TASK_STATE_INPUT_REQUIRED:
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      return Effect.fail(new Tool.ToolError({ message: `Remote agent ${name} needs more input${why}` }))
    default:
      return Effect.fail(new Tool.ToolError({ message: `Remote agent ${name}: the task ended without a result` }))
  }
}

const applyTask = (p: Progress, task: Task) => {
  p.taskId = task.id
  if (task.status !== undefined) {
    p.state = task.status.state
    if (task.status.message !== undefined) p.statusText = textOfParts(task.status.message.parts)
  }
  for (const a of task.artifacts) p.artifacts.set(a.artifactId, textOfParts(a.parts))
}

/**
 * Sends `message` to the remote agent (tool `name`) and follows its task to the
 * end: the text of the task's artifacts, or of the agent's reply message; a
 * task that failed, was canceled or rejected, or needs input, and an agent that
 * cannot be reached, are `ToolError`s.
 */
export const send = (client: Client, name: string, message: Message): Effect.Effect<string, Tool.ToolError> =>
  Effect.gen(function*() {
    /** Polls the task until it is over (the stream broke after the task existed). */
    const poll = (p: Progress, taskId: string) =>
      Effect.tryPromise(() => client.getTask({ tenant: "", id: taskId })).pipe(
        Effect.tap((task) => Effect.sync(() => applyTask(p, task))),
        Effect.repeat({
          schedule: Schedule.spaced("500 millis"),
          until: (task) => FINAL.has(task.status!.state) || STOPPED.has(task.status!.state)
        }),
        // the remote server may be restarting: connection errors are retried (the call's timeout bounds it)
        Effect.retry(Schedule.spaced("1 second")),
        Effect.mapError((error) =>
          new Tool.ToolError({ message: `Remote agent ${name}: reading task ${taskId} failed: ${messageOf(error)}` })
        ),
        Effect.asVoid
      )
    const p: Progress = { artifacts: new Map() }
    const events = Stream.unwrapScoped(Effect.map(
      Effect.acquireRelease(Effect.sync(() => new AbortController()), (c) => Effect.sync(() => c.abort())),
      (controller) =>
        Stream.fromAsyncIterable(
          client.sendMessageStream({ tenant: "", message, configuration: undefined, metadata: undefined }, {
            signal: controller.signal
          }),
          (error) => error
        )
    ))
    const streamed = Stream.runForEach(events, (event) => {
      const payload = event.payload
      if (payload === undefined) return Effect.void
      switch (payload.$case) {
        case "message":
          p.reply = textOfParts(payload.value.parts)
          return Effect.void
        case "task":
          applyTask(p, payload.value)
          return Effect.void
        case "artifactUpdate": {
          const a = payload.value.artifact
          if (a === undefined) return Effect.void
          const text = textOfParts(a.parts)
          p.artifacts.set(a.artifactId, payload.value.append ? (p.artifacts.get(a.artifactId) ?? "") + text : text)
          return Effect.void
        }
        case "statusUpdate": {
          p.taskId = payload.value.taskId
          const status = payload.value.status
          if (status === undefined) return Effect.void
          p.state = status.state
          const text = status.message === undefined ? "" : textOfParts(status.message.parts)
          if (text !== "") p.statusText = text
          // the remote task's progress is the call's
          return status.state === TaskState.TASK_STATE_WORKING && text !== ""
            ? Tool.progress(`${name}: ${text}`)
            : Effect.void
        }
      }
    })
    yield* streamed.pipe(Effect.catchAll((error) => {
      const taskId = p.taskId
      // the task exists: its server may have restarted; its state is read until it is over
      if (taskId !== undefined && !FINAL.has(p.state ?? TaskState.TASK_STATE_UNSPECIFIED)) {
        return Effect.zipRight(Tool.progress(`${name}: connection lost, following the task`), poll(p, taskId))
      }
      return Effect.fail(
        new Tool.ToolError({ message: `Remote agent ${name} could not be reached: ${messageOf(error)}` })
      )
    }))
    // a stream that ended before the task did (a proxy cut it): read the task to its end
    if (
      p.reply === undefined && p.taskId !== undefined && !FINAL.has(p.state ?? TaskState.TASK_STATE_UNSPECIFIED) &&
      !STOPPED.has(p.state ?? TaskState.TASK_STATE_UNSPECIFIED)
    ) {
      yield* poll(p, p.taskId)
    }
    return yield* outcome(name, p)
  })
