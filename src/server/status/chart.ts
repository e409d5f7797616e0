/**
 * Inline SVG charts for the status page: lines over fixed slots, no script, no external
 * resource (the page's CSP allows none). Every text is escaped.
 */

export interface Line {
  name: string;
  /** One value per slot; undefined where nothing was sampled (a gap). */
  values: (number | undefined)[];
}

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563', '#65a30d'];
const WIDTH = 520;
const HEIGHT = 170;
const LEFT = 48;
const BOTTOM = 20;

export const escapeHtml = (text: string): string =>
  text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');

/** A round number at or above `value`, for the top of the axis. */
function niceTop(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

const short = (value: number) =>
  value >= 1e6
    ? `${+(value / 1e6).toFixed(1)}M`
    : value >= 1e3
      ? `${+(value / 1e3).toFixed(1)}k`
      : `${+value.toFixed(2)}`;

const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/** One chart: `lines` over slots starting at `firstSlot`, `slotMs` apart. */
export function chart(title: string, unit: string, firstSlot: number, slotMs: number, lines: Line[]): string {
  const slots = Math.max(1, ...lines.map((line) => line.values.length));
  const top = niceTop(Math.max(0, ...lines.flatMap((line) => line.values.filter((v): v is number => v !== undefined))));
  const x = (i: number) => LEFT + ((WIDTH - LEFT - 8) * i) / Math.max(1, slots - 1);
  const y = (v: number) => 8 + (HEIGHT - BOTTOM - 8) * (1 - v / top);
  const paths = lines.map((line, n) => {
    const color = COLORS[n % COLORS.length]!;
    let d = '';
    const dots: string[] = [];
    line.values.forEach((value, i) => {
      if (value === undefined) return;
      const joined = line.values[i - 1] !== undefined;
      d += `${joined ? 'L' : 'M'}${x(i).toFixed(1)} ${y(value).toFixed(1)}`;
      // A value with no neighbour draws no line: a dot shows it (one sample, one quarter hour).
      if (!joined && line.values[i + 1] === undefined)
        dots.push(`<circle cx="${x(i).toFixed(1)}" cy="${y(value).toFixed(1)}" r="2.5" fill="${color}"/>`);
    });
    return `<path d="${d}" fill="none" stroke="${color}" stroke-width="1.6"/>${dots.join('')}`;
  });
  const legend = lines
    .map(
      (line, n) =>
        `<span class="key"><i style="background:${COLORS[n % COLORS.length]}"></i>${escapeHtml(line.name)}</span>`,
    )
    .join(' ');
  return `<figure><figcaption>${escapeHtml(title)} <small>(${escapeHtml(unit)})</small></figcaption>
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${escapeHtml(title)}">
<line x1="${LEFT}" y1="${y(0)}" x2="${WIDTH - 8}" y2="${y(0)}" stroke="#9ca3af"/>
<line x1="${LEFT}" y1="${y(top)}" x2="${WIDTH - 8}" y2="${y(top)}" stroke="#e5e7eb"/>
<text x="${LEFT - 4}" y="${y(top) + 4}" text-anchor="end">${short(top)}</text>
<text x="${LEFT - 4}" y="${y(0) + 4}" text-anchor="end">0</text>
<text x="${LEFT}" y="${HEIGHT - 4}">${clock(firstSlot)}</text>
<text x="${WIDTH - 8}" y="${HEIGHT - 4}" text-anchor="end">${clock(firstSlot + (slots - 1) * slotMs)} UTC</text>
${paths.join('\n')}
</svg>
<div class="legend">${legend || 'nothing recorded'}</div></figure>`;
}
