/**
 * The volatile fields of stored events (`Cassette.volatileEventFields`)
 * replaced by stable placeholders, for `Cassette.normalizeEvents`.
 *
 * @internal
 */

/**
 * A scrubber for one list of events: `elapsed` / `iter_elapsed` become 0, an
 * idempotency key `<idempotency_key>`, `run_id` goes, and each approval id is
 * numbered in the order it first appears (`approval_1`, …), at any depth.
 */
export const scrubber = (): (value: unknown) => unknown => {
  const approvalIds = new Map<string, string>()
  const scrub = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(scrub)
    if (typeof value !== "object" || value === null) return value
    const out: Record<string, unknown> = {}
    for (const [key, v] of Object.entries(value)) {
      if (key === "elapsed" || key === "iter_elapsed") out[key] = typeof v === "number" ? 0 : v
      else if (key === "idempotency_key") out[key] = typeof v === "string" ? `<${key}>` : v
      else if (key === "run_id") continue
      else if (key === "approval_id" && typeof v === "string") {
        if (!approvalIds.has(v)) approvalIds.set(v, `approval_${approvalIds.size + 1}`)
        out[key] = approvalIds.get(v)
      } else out[key] = scrub(v)
    }
    return out
  }
  return scrub
}
