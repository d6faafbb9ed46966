/**
 * A preload for bench/engineAlone.ts under `node --cpu-prof` (bench/cpuProfile.ts
 * `--marginal`): engineAlone brackets its measured workflow with `process.cpuUsage()`
 * (start) and `process.cpuUsage(start)` (end); this wraps `process.cpuUsage` to note
 * `process.hrtime` (µs, the monotonic clock of the profile's sample timestamps) at
 * both and write `{ start, end }` to `ENGINE_PROFILE_WINDOW`, so the profile can be
 * cut to the measured activities without changing engineAlone or its output.
 *
 *   ENGINE_PROFILE_WINDOW=<file> node --import tsx --import ./bench/engineAloneProfile.ts \
 *     --cpu-prof bench/engineAlone.ts
 *
 * @since 0.1.0
 */
import { writeFileSync } from "node:fs"

const file = process.env.ENGINE_PROFILE_WINDOW
if (file !== undefined && file !== "") {
  const original = process.cpuUsage.bind(process)
  let start: bigint | undefined
  process.cpuUsage = ((previous?: NodeJS.CpuUsage) => {
    const now = process.hrtime.bigint() / 1000n
    if (previous === undefined) start = now
    else if (start !== undefined) writeFileSync(file, JSON.stringify({ start: Number(start), end: Number(now) }))
    return original(previous)
  }) as typeof process.cpuUsage
}
