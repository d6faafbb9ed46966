/**
 * How the recorder writes down a run's memory steps (docs/memory.md): what its
 * recall gave and what indexing its turn gave, under a recording.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import type { MemoryService, Steps } from "../../Memory.js"

/** The memory, recording its steps in the recording found on the fiber (`current`) through `write`. */
export const wrapMemory = <R extends { readonly memory?: Steps | undefined }>(
  memory: MemoryService,
  current: FiberRef.FiberRef<Option.Option<R>>,
  write: (recording: R, steps: Steps) => Effect.Effect<void>
): MemoryService => {
  const note = (change: (steps: Steps) => Steps) =>
    Effect.flatMap(
      FiberRef.get(current),
      (found) => Option.isNone(found) ? Effect.void : write(found.value, change(found.value.memory ?? {}))
    )
  return {
    ...memory,
    recall: (request) => Effect.tap(memory.recall(request), (recall) => note((steps) => ({ ...steps, recall }))),
    index: (turn) => Effect.tap(memory.index(turn), (index) => note((steps) => ({ ...steps, index })))
  }
}
