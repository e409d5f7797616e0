/**
 * Writes a value into an input or textarea so that framework-controlled inputs
 * notice it: React tracks `value` through its own setter on the element, so the
 * prototype's native setter is used and `input` and `change` are dispatched.
 */
export function writeField(element: HTMLInputElement | HTMLTextAreaElement, value: string): void {
  if (element.value === value) return;
  const setter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(element), 'value')?.set;
  if (setter) setter.call(element, value);
  else element.value = value;
  element.dispatchEvent(new Event('input', { bubbles: true }));
  element.dispatchEvent(new Event('change', { bubbles: true }));
}
