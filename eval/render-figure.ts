// Vega-Lite spec -> SVG -> PNG in Node, no browser: vega-lite compiles the spec to Vega, a
// headless vega View (renderer 'none') writes the SVG, and resvg (Rust, via
// @resvg/resvg-js) rasterizes it. Text in the PNG needs a font on the machine: resvg loads
// the system fonts and tries the spec's list (figure3.ts FONT); the SVG names the same list
// for whatever opens it.
import { Resvg } from '@resvg/resvg-js';
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** PNG at `scale` x the SVG's size on a white background. */
export function svgToPng(svg: string, scale = 2): Buffer {
  const r = new Resvg(svg, {
    background: 'white',
    fitTo: { mode: 'zoom', value: scale },
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans', sansSerifFamily: 'DejaVu Sans' },
  });
  return r.render().asPng();
}
