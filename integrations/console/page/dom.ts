/**
 * Building the page's elements. Every piece of data goes in as a text node (or `textContent`), never
 * as markup, so nothing the server sends can become HTML.
 * @module
 */

/** What `el` sets on a new element besides its children. */
export interface ElementProps {
  /** The `class` attribute. */
  readonly className?: string;
  /** Other attributes, set with `setAttribute` (so values are never parsed as markup). */
  readonly attrs?: Readonly<Record<string, string>>;
}

/** A child of `el`: an element, or a string added as a text node; `undefined` and `false` are skipped. */
export type Child = Node | string | undefined | false;

/**
 * Makes an element with attributes and children; strings become text nodes.
 * @example el('td', { className: 'num' }, String(row.calls))
 */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: ElementProps = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const made = document.createElement(tag);
  if (props.className !== undefined) made.className = props.className;
  for (const [name, value] of Object.entries(props.attrs ?? {})) made.setAttribute(name, value);
  for (const child of children) {
    if (child === undefined || child === false) continue;
    made.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return made;
}

/**
 * A button of type `button` that calls `onClick`.
 * @example button('Approve', () => approve(), 'primary')
 */
export function button(label: string, onClick: () => void, className?: string): HTMLButtonElement {
  const made = el(
    'button',
    className === undefined ? { attrs: { type: 'button' } } : { className, attrs: { type: 'button' } },
    label,
  );
  made.addEventListener('click', onClick);
  return made;
}

/**
 * A duration for people: `42s`, `4m 05s`, `2h 10m`, `3d 4h`.
 * @example duration(245_000) // '4m 05s'
 */
export function duration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h ${String(minutes % 60).padStart(2, '0')}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

/**
 * JSON text pretty-printed when it parses, else as it came (a capped preview may not parse).
 * @example pretty('{"a":1}') // '{\n  "a": 1\n}'
 */
export function pretty(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}

/**
 * Any value as one short line of JSON, for evidence and the like.
 * @example compact({ ref: 'rf_1' }) // '{"ref":"rf_1"}'
 */
export function compact(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
