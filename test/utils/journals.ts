/**
 * In-process `RunJournal`s for tests: each records the activities it is asked
 * for (by name, in order) and the events emitted; `stored` holds results a
 * durable store would already have (encoded, by activity name), decoded
 * through the activity's own schema instead of running it.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { RunEvent } from "../../src/RunEvent.js"
import type { RunJournal } from "../../src/RunJournal.js"

export const recordingJournal = (
  stored: Record<string, unknown> = {},
  options: { readonly onStored?: (name: string) => void } = {}
) => {
  const names: Array<string> = []
  const events: Array<RunEvent> = []
  const journal: RunJournal = {
    activity: (o) =>
      Effect.suspend(() => {
        names.push(o.name)
        if (!(o.name in stored)) return o.execute({ restarted: false })
        options.onStored?.(o.name)
        return Effect.orDie(Schema.decodeUnknown(o.success)(stored[o.name]))
      }),
    emit: (event) => Effect.sync(() => void events.push(event))
  }
  return { journal, names, events }
}
