/** A small element builder: h('p', { class: 'x' }, 'text', child). Text is never parsed as HTML. */
export type Child = Node | string | number | false | null | undefined;
type Attrs = Record<string, string | number | boolean | EventListener | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Array<Child | Child[]>
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === 'object' ? child : String(child));
  }
  return element;
}

/** Replaces an element's children. */
export function fill(element: Element, ...children: Array<Child | Child[]>): void {
  element.replaceChildren();
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === 'object' ? child : String(child));
  }
}

/** Tells screen-reader users what changed, in the page's polite live region. */
export function announce(text: string): void {
  const region = document.getElementById('announce');
  if (region) region.textContent = text;
}

/** Minor units as a decimal amount: 2500 EUR → "25.00 EUR". */
export function money(amount: number | undefined, currency: string | undefined): string {
  if (amount === undefined) return '—';
  return `${(amount / 100).toFixed(2)} ${currency ?? ''}`.trim();
}

/** A labelled field: the label's `for` names the control, so both click and readers find it. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  const hintId = hint ? `${id}-hint` : undefined;
  if (hintId) control.setAttribute('aria-describedby', hintId);
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    control,
    hint ? h('small', { id: hintId }, hint) : null,
  );
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
