/**
 * How providers say a request did not fit the model's context window; shared by every
 * Llm implementation, so an overflow is recognised the same way whichever one answers.
 *
 * @internal
 */
const CONTEXT_OVERFLOW =
  /context[_ ]length|maximum context|context window|too long|too many tokens|reduce the length|exceeds? the (?:model'?s? )?(?:maximum|context|max)|input length/i

/** True when a provider message says the request did not fit the context window. */
export const isContextOverflowMessage = (message: string): boolean => CONTEXT_OVERFLOW.test(message)
