// dom.ts - small helpers the views share for building their tables.

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// A number cell with a bar as long as value against most (120 px at
// most), the exact value in data-value.
export function barCell(value: number, most: number, label: string): HTMLTableCellElement {
  const td = el("td", "num");
  const bar = el("span", "bar");
  bar.style.width = `${most ? Math.max(value ? 1 : 0, Math.round((120 * value) / most)) : 0}px`;
  td.append(bar, " ", label);
  td.dataset.value = String(value);
  return td;
}
