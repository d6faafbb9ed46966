/**
 * The local deterministic embedder of the offline demo: feature hashing of the
 * text's words (lower-cased, a plural `s` dropped, common words skipped) and of
 * their character trigrams into a fixed number of dimensions, normalised to
 * unit length. Texts that share words are close; it knows nothing of meaning
 * (synonyms, paraphrases), and says so in its label.
 *
 * @internal
 */
import { hash } from "node:crypto"

const STOP = new Set(
  ("a an and are as at be but by do does did for from had has have i in is it its me my of on or our so that the their " +
    "them then there these they this to was we were what when where which who why will with you your")
    .split(" ")
)

/** The words of a text that carry something (lower case, no common words, a plural `s` dropped). */
export const words = (text: string): ReadonlyArray<string> =>
  (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])
    .filter((w) => !STOP.has(w))
    .map((w) => (w.length > 3 && w.endsWith("s") && !w.endsWith("ss") ? w.slice(0, -1) : w))

const bucket = (feature: string, dimensions: number): { readonly index: number; readonly sign: number } => {
  const digest = hash("sha1", feature, "buffer") as Buffer
  return { index: digest.readUInt32LE(0) % dimensions, sign: (digest[4] ?? 0) & 1 ? 1 : -1 }
}

/** The text's vector: words weigh 1, each of their trigrams 0.25; unit length (all zeros for a text without words). */
export const embedText = (text: string, dimensions: number): Float32Array => {
  const vector = new Float32Array(dimensions)
  for (const word of words(text)) {
    const w = bucket(`w:${word}`, dimensions)
    vector[w.index] = (vector[w.index] ?? 0) + w.sign
    const padded = `^${word}$`
    for (let i = 0; i + 3 <= padded.length; i++) {
      const t = bucket(`t:${padded.slice(i, i + 3)}`, dimensions)
      vector[t.index] = (vector[t.index] ?? 0) + 0.25 * t.sign
    }
  }
  let norm = 0
  for (const x of vector) norm += x * x
  if (norm > 0) {
    const scale = 1 / Math.sqrt(norm)
    for (let i = 0; i < dimensions; i++) vector[i] = (vector[i] ?? 0) * scale
  }
  return vector
}
