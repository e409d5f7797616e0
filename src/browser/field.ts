/** Writing a blackbox into a field: the calls (capture.ts, lean.ts) and the script tag's late field (declarative.ts). */

type Field = HTMLInputElement | HTMLTextAreaElement;

/**
 * Writes into an input or textarea so that framework-controlled inputs notice:
 * React tracks `value` through its own setter on the element, so the prototype's
 * native setter is used, then `input` and `change` are dispatched.
 */
export function writeField(element: Field, value: string): void {
  if (element.value === value) return;
  Object.getOwnPropertyDescriptor(Object.getPrototypeOf(element), 'value')!.set!.call(element, value);
  for (const type of ['input', 'change']) element.dispatchEvent(new Event(type, { bubbles: true }));
}

/** An input or textarea: what a blackbox can be written into. */
export const isField = (element: Element | null): element is Field =>
  // No element reads as "undefined", which the pattern does not match.
  /^(INPUT|TEXTAREA)$/.test(element?.tagName as string);
