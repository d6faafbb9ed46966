/**
 * The run log's statements on `react_activity_starts` (`RunLog`'s activity
 * starts and tool-call claims; `callClaim.ts` says how they are used). One row
 * per activity of a run that must know whether it ran before: who started it
 * first (`boot`), who executes it now and until when (`holder`, `lease_until`:
 * milliseconds on the database's clock, so instances' clocks may differ), and
 * the call's outcome once its execution stored it (`outcome`).
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** What the statements answer, before `RunLog` maps their errors. */
export interface ActivityStarts {
  readonly markStarted: (runId: string, name: string, boot: string) => Effect.Effect<string, SqlError>
  readonly claim: (
    runId: string,
    name: string,
    holder: string,
    leaseMs: number
  ) => Effect.Effect<Option.Option<string>, SqlError>
  readonly renewClaim: (
    runId: string,
    name: string,
    holder: string,
    leaseMs: number
  ) => Effect.Effect<boolean, SqlError>
  readonly releaseClaim: (runId: string, name: string, holder: string) => Effect.Effect<void, SqlError>
  readonly settleCall: (
    runId: string,
    name: string,
    holder: string,
    outcome: string
  ) => Effect.Effect<boolean, SqlError>
  readonly callOutcome: (runId: string, name: string) => Effect.Effect<Option.Option<string>, SqlError>
}

export const make = (sql: SqlClient.SqlClient): ActivityStarts => {
  const now = sql.onDialectOrElse({
    pg: () => sql.literal("(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT"),
    orElse: () => sql.literal("CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)")
  })
  return {
    markStarted: (runId, name, boot) =>
      // one statement: the row is written if absent, and whichever row stands is returned
      sql<{ boot: string }>`INSERT INTO react_activity_starts (run_id, name, boot) VALUES (${runId}, ${name}, ${boot})
        ON CONFLICT (run_id, name) DO UPDATE SET boot = react_activity_starts.boot RETURNING boot`.pipe(
        Effect.map((rows) => rows[0]?.boot ?? boot)
      ),
    claim: (runId, name, holder, leaseMs) =>
      // a call whose outcome is stored is never claimed again: its attempts adopt the outcome
      sql<{ boot: string }>`INSERT INTO react_activity_starts (run_id, name, boot, holder, lease_until)
        VALUES (${runId}, ${name}, ${holder}, ${holder}, ${now} + ${leaseMs})
        ON CONFLICT (run_id, name) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
        WHERE react_activity_starts.outcome IS NULL AND (react_activity_starts.holder IS NULL
          OR react_activity_starts.holder = excluded.holder
          OR react_activity_starts.lease_until IS NULL OR react_activity_starts.lease_until < ${now})
        RETURNING boot`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]?.boot))),
    renewClaim: (runId, name, holder, leaseMs) =>
      sql<{ boot: string }>`UPDATE react_activity_starts SET lease_until = ${now} + ${leaseMs}
        WHERE run_id = ${runId} AND name = ${name} AND holder = ${holder} AND outcome IS NULL RETURNING boot`.pipe(
        Effect.map((rows) => rows.length > 0)
      ),
    releaseClaim: (runId, name, holder) =>
      sql`UPDATE react_activity_starts SET lease_until = 0
        WHERE run_id = ${runId} AND name = ${name} AND holder = ${holder}`.pipe(Effect.asVoid),
    settleCall: (runId, name, holder, outcome) =>
      // the first outcome stored is the call's: only its holder stores it, once
      sql<{ boot: string }>`UPDATE react_activity_starts SET outcome = ${outcome}, lease_until = 0
        WHERE run_id = ${runId} AND name = ${name} AND holder = ${holder} AND outcome IS NULL RETURNING boot`.pipe(
        Effect.map((rows) => rows.length > 0)
      ),
    callOutcome: (runId, name) =>
      sql<{ outcome: string | null }>`SELECT outcome FROM react_activity_starts
        WHERE run_id = ${runId} AND name = ${name}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0]?.outcome))
      )
  }
}
