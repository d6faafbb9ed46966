/**
 * The JSON Schema check of `Eval`'s `json_schema` scorer: the keywords a
 * structured answer's schema uses — `type`, `properties`, `required`,
 * `additionalProperties: false`, `items`, `enum`, `const`, `minimum`,
 * `maximum`, `minLength`, `maxLength`, `pattern`, `minItems`, `maxItems`.
 * Other keywords are ignored.
 */

const typeOf = (v: unknown): string =>
  v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "number" && Number.isInteger(v) ? "integer" : typeof v

const fits = (type: string, v: unknown) => {
  const t = typeOf(v)
  return type === t || (type === "number" && t === "integer")
}

/** The first problem of `value` against `schema` (with its JSON path), or `undefined` when it conforms. */
export const checkJsonSchema = (schema: Record<string, unknown>, value: unknown, path = "$"): string | undefined => {
  const type = schema.type
  if (typeof type === "string" && !fits(type, value)) return `${path}: expected ${type}, got ${typeOf(value)}`
  if (Array.isArray(type) && !type.some((t) => fits(String(t), value))) {
    return `${path}: expected one of ${type.join(", ")}, got ${typeOf(value)}`
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    return `${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`
  }
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) {
    return `${path}: expected ${JSON.stringify(schema.const)}`
  }
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) {
      return `${path}: ${value} < minimum ${schema.minimum}`
    }
    if (typeof schema.maximum === "number" && value > schema.maximum) {
      return `${path}: ${value} > maximum ${schema.maximum}`
    }
  }
  if (typeof value === "string") {
    if (typeof schema.minLength === "number" && value.length < schema.minLength) {
      return `${path}: shorter than ${schema.minLength}`
    }
    if (typeof schema.maxLength === "number" && value.length > schema.maxLength) {
      return `${path}: longer than ${schema.maxLength}`
    }
    if (typeof schema.pattern === "string" && !new RegExp(schema.pattern).test(value)) {
      return `${path}: does not match ${schema.pattern}`
    }
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === "number" && value.length < schema.minItems) {
      return `${path}: fewer than ${schema.minItems} items`
    }
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems) {
      return `${path}: more than ${schema.maxItems} items`
    }
    const items = schema.items
    if (typeof items === "object" && items !== null && !Array.isArray(items)) {
      for (let i = 0; i < value.length; i++) {
        const p = checkJsonSchema(items as Record<string, unknown>, value[i], `${path}[${i}]`)
        if (p) return p
      }
    }
  }
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>
    const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>
    for (const key of Array.isArray(schema.required) ? schema.required : []) {
      if (!(String(key) in obj)) return `${path}: missing required property "${String(key)}"`
    }
    for (const [key, v] of Object.entries(obj)) {
      if (key in props) {
        const p = checkJsonSchema(props[key], v, `${path}.${key}`)
        if (p) return p
      } else if (schema.additionalProperties === false) return `${path}: unexpected property "${key}"`
    }
  }
  return undefined
}
